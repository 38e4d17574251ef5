/**
 * A resuming typed stream's history is sent at its client's pace: history deliveries wait for room in the stream's
 * queue (EventQueue.ready) and never fill it on their own, so a client that reads its history slowly (more than the
 * second of grace between events, as an indexer doing work per block does) but keeps up with the chain gets all of
 * it, and is not ended as too slow ("A client is too slow when clientBufferSize events wait for it and it has taken
 * none for a second": the history does not make them wait, it waits itself). Fake timers stand in for the client's
 * slowness (the queue judges a reader by performance.now() and a timer).
 */
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { CallCancellation } from "../../src/call-signal.js";
import { EventQueue } from "../../src/subscriptions/event-queue.js";
import type { HeadEvent } from "../../src/subscriptions/events.js";
import { type History, ResumeGate } from "../../src/subscriptions/resume-gate.js";

const head = (n: number): HeadEvent => ({ kind: "head", number: n, hash: `0x${n}`, parentHash: "0x", text: "{}" });

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "performance", "Date"] });
});
afterEach(() => {
  vi.useRealTimers();
});

it.each([2, 4, 5, 8])("a client reading its history one event every 1.5 s, with a buffer of %d, gets all of it and is not ended", async (capacity) => {
  const overflows: string[] = [];
  const queue = new EventQueue(capacity, (error) => overflows.push(error.message));
  const gate = new ResumeGate(queue, 1, capacity, 0);
  const LAST = 6 * capacity;
  const history: History = async (from, deliver) => {
    for (let n = from; n <= LAST; n++) await deliver(head(n));
    return LAST;
  };
  const cancel = new CallCancellation();
  let sent = false;
  void gate.sendHistory(history, cancel.signal).then(() => (sent = true));

  const events = queue.events(cancel.signal);
  const got: number[] = [];
  try {
    while (got.length < LAST) {
      const next = await events.next();
      if (next.done === true) break;
      got.push((next.value as HeadEvent).number);
      await vi.advanceTimersByTimeAsync(1500); // the client works on it for 1.5 s
    }
  } catch (err) {
    overflows.push(`the stream ended: ${(err as Error).message}`);
  }
  expect(overflows).toEqual([]);
  expect(got).toEqual(Array.from({ length: LAST }, (_, i) => i + 1));
  expect(sent).toBe(true);
  expect(queue.ended).toBe(false);
  cancel.abort();
});

it("a resuming client that stops reading mid-history is ended as too slow once live events pile up for it, as a live client is", async () => {
  // Found from outside: its history waited for room for ever (the queue holds at most half its buffer of history), the
  // live events meanwhile were let go from the full hold to be fetched again, and the client was never judged.
  const overflows: string[] = [];
  const queue = new EventQueue(4, (error) => overflows.push(error.message));
  const gate = new ResumeGate(queue, 1, 4, 0);
  let delivered = 0;
  const cancel = new CallCancellation();
  const sent = gate
    .sendHistory(async (from, deliver) => {
      for (let n = from; n <= 1000; n++) {
        await deliver(head(n));
        delivered++;
      }
      return 1000;
    }, cancel.signal)
    .then(
      () => "sent",
      (err: Error) => err.message,
    );
  await vi.advanceTimersByTimeAsync(10);
  expect(delivered).toBe(2); // then it waits for room
  // The chain goes on: a block every 400 ms, none read.
  for (let n = 1001; n <= 1010 && !queue.ended; n++) {
    gate.push(head(n));
    await vi.advanceTimersByTimeAsync(400);
  }
  expect(queue.ended).toBe(true);
  expect(overflows).toEqual(["subscriber too slow: 6 events were waiting to be read (subscriptions.clientBufferSize); read faster or subscribe to fewer events"]);
  expect(await sent).toBe(overflows[0]);
  cancel.abort();
});

it("a resuming client reading its history as it comes is not ended while the chain fills the hold", async () => {
  const overflows: string[] = [];
  const queue = new EventQueue(4, (error) => overflows.push(error.message));
  const gate = new ResumeGate(queue, 1, 4, 0);
  const cancel = new CallCancellation();
  let next = 1001;
  const history: History = async (from, deliver) => {
    for (let n = from; n <= 60; n++) {
      await deliver(head(n));
      gate.push(head(next++)); // a live block for every history event: the hold is overtaken round after round
    }
    return 60;
  };
  const sent = gate.sendHistory(history, cancel.signal).then(
    () => "sent",
    (err: Error) => err.message,
  );
  const events = queue.events(cancel.signal);
  let got = 0;
  while (got < 60) {
    const e = await events.next();
    if (e.done === true) break;
    got++;
    await vi.advanceTimersByTimeAsync(200); // a reader well within the second of grace
  }
  expect(overflows).toEqual([]);
  expect(got).toBe(60);
  cancel.abort();
  await sent;
});

it("a resuming client that has read everything sent is not ended while a slow history page keeps it waiting", async () => {
  // Found from outside: with the hold full of live events while a history page took 1.5 s, a client reading as fast
  // as it could (nothing waiting for it) was ended as too slow.
  const overflows: string[] = [];
  const queue = new EventQueue(4, (error) => overflows.push(error.message));
  const gate = new ResumeGate(queue, 1, 4, 0);
  const cancel = new CallCancellation();
  let pageArrives = () => {};
  const history: History = async (from, deliver) => {
    await deliver(head(from));
    await new Promise<void>((resolve) => (pageArrives = resolve)); // the next page is slow to come
    for (let n = from + 1; n <= 10; n++) await deliver(head(n));
    return 10;
  };
  const sent = gate.sendHistory(history, cancel.signal).then(
    () => "sent",
    (err: Error) => err.message,
  );
  const events = queue.events(cancel.signal);
  expect(((await events.next()).value as HeadEvent).number).toBe(1);
  const next = events.next(); // the client waits for more
  // Live blocks come while the page is slow: the hold fills and more are let go.
  for (let n = 1001; n <= 1010; n++) {
    gate.push(head(n));
    await vi.advanceTimersByTimeAsync(300);
  }
  expect(overflows).toEqual([]);
  pageArrives();
  expect(((await next).value as HeadEvent).number).toBe(2);
  cancel.abort();
  await sent;
});
