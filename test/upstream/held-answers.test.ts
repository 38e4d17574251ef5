/**
 * HeldAnswers: answers waiting for their clients count in the reply budget
 * by memory, not by call: one answer several calls send counts once.
 */
import { expect, it } from "vitest";
import { HELD_FROM_BYTES, HeldAnswers } from "../../src/upstream/held-answers.js";
import { ReplyBudget } from "../../src/upstream/reply-budget.js";

const SIZE = HELD_FROM_BYTES;

it("one answer held by several calls takes its bytes once, and gives them back after its last holder", () => {
  const budget = new ReplyBudget(3 * SIZE);
  const held = new HeldAnswers(budget);
  const shared = {};
  const first = held.hold(shared, SIZE) as () => void;
  const second = held.hold(shared, SIZE) as () => void;
  expect(budget.held).toBe(SIZE);
  first();
  first(); // once only: a second call gives nothing back twice
  expect(budget.held).toBe(SIZE);
  second();
  expect(budget.held).toBe(0);
});

it("answers that do not fit are refused with nothing taken; smaller ones never count", () => {
  const budget = new ReplyBudget(2 * SIZE);
  const held = new HeldAnswers(budget);
  const a = held.hold({}, SIZE) as () => void;
  expect(held.hold({}, 2 * SIZE)).toBe("budget");
  expect(budget.held).toBe(SIZE);
  const small = held.hold({}, SIZE - 1) as () => void;
  expect(small).toBeTypeOf("function");
  expect(budget.held).toBe(SIZE);
  small();
  a();
  expect(budget.held).toBe(0);
  expect(held.refusal("the answers waiting for their clients").code).toBe(-32005);
  expect(held.refusal("x", "; advice").message).toBe(`limit exceeded: x and the replies being read would pass ${2 * SIZE} bytes (limits.maxReplyBytesInFlight); advice; try again shortly`);
});

it("one key's calls hold at most its share; other keys' answers still fit, and an answer a key already holds costs it nothing more", () => {
  const budget = new ReplyBudget(4 * SIZE);
  const held = new HeldAnswers(budget, 2 * SIZE);
  const [hog, other] = [{}, {}];
  const shared = {};
  const first = held.hold(shared, SIZE, hog) as () => void;
  const again = held.hold(shared, SIZE, hog) as () => void; // the same answer, coalesced: no more memory
  const second = held.hold({}, SIZE, hog) as () => void;
  expect(held.hold({}, SIZE, hog)).toBe("key share");
  expect(budget.held).toBe(2 * SIZE);
  // Another key holds the answer the hog holds, and one of its own: within its own share.
  const otherShared = held.hold(shared, SIZE, other) as () => void;
  const otherOwn = held.hold({}, SIZE, other) as () => void;
  expect(budget.held).toBe(3 * SIZE);
  expect(held.hold({}, SIZE, other)).toBe("key share");
  first();
  expect(held.hold({}, SIZE, hog)).toBe("key share"); // `again` still holds the shared answer for the hog
  again();
  const third = held.hold({}, SIZE, hog) as () => void;
  expect(third).toBeTypeOf("function");
  for (const release of [second, third, otherShared, otherOwn]) release();
  expect(budget.held).toBe(0);
  expect(held.refusal("the answers waiting for their clients", "", "key share").message).toBe(
    `limit exceeded: the answers waiting for their clients would pass ${2 * SIZE} bytes held for this key's clients at once (limits.maxReplyBytesPerKey); read the answers already asked for before asking for more; try again shortly`,
  );
});

it("a key holding nothing may take one answer larger than its share, as the budget allows", () => {
  // Found from outside: with a 5 MiB share, a single 6 MB answer was refused on every try, told to try again shortly.
  const budget = new ReplyBudget(8 * SIZE);
  const held = new HeldAnswers(budget, 2 * SIZE);
  const key = {};
  const large = held.hold({}, 3 * SIZE, key) as () => void;
  expect(large).toBeTypeOf("function");
  expect(held.hold({}, SIZE, key)).toBe("key share");
  large();
  expect(budget.held).toBe(0);
  // An answer larger than the whole budget could never be held: too large, not "try again shortly".
  expect(held.hold({}, 9 * SIZE, key)).toBe("too large");
  expect(held.refusal("the answers waiting for their clients", "", "too large").code).toBe(-32052);
  expect(held.refusal("this batch's answers", "; send the large calls in smaller batches", "key share").message).toBe(
    `limit exceeded: this batch's answers would pass ${2 * SIZE} bytes held for this key's clients at once (limits.maxReplyBytesPerKey); send the large calls in smaller batches; try again shortly`,
  );
});
