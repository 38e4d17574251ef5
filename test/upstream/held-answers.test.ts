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
  const first = held.hold(shared, SIZE);
  const second = held.hold(shared, SIZE);
  expect(budget.held).toBe(SIZE);
  first?.();
  first?.(); // once only: a second call gives nothing back twice
  expect(budget.held).toBe(SIZE);
  second?.();
  expect(budget.held).toBe(0);
});

it("answers that do not fit are refused with nothing taken; smaller ones never count", () => {
  const budget = new ReplyBudget(2 * SIZE);
  const held = new HeldAnswers(budget);
  const a = held.hold({}, SIZE);
  expect(held.hold({}, 2 * SIZE)).toBeUndefined();
  expect(budget.held).toBe(SIZE);
  const small = held.hold({}, SIZE - 1);
  expect(small).toBeTypeOf("function");
  expect(budget.held).toBe(SIZE);
  small?.();
  a?.();
  expect(budget.held).toBe(0);
  expect(held.refusal("the answers waiting for their clients").code).toBe(-32005);
  expect(held.refusal("x", "; advice").message).toBe(`limit exceeded: x and the replies being read would pass ${2 * SIZE} bytes (limits.maxReplyBytesInFlight); advice; try again shortly`);
});
