/**
 * ReaderPace: a burst bigger than the buffer does not make a reading client
 * slow; a client that takes nothing for the grace period does, and it is
 * judged when the grace runs out even if no further event comes.
 */
import { describe, expect, it } from "vitest";
import { ReaderPace } from "../../src/subscriptions/reader-pace.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("ReaderPace", () => {
  it("is patient within a burst, however large, while the client took something lately", () => {
    const pace = new ReaderPace(10, 10_000);
    pace.progressed();
    expect(pace.tooSlow(9)).toBe(false);
    expect(pace.tooSlow(10)).toBe(false);
    expect(pace.tooSlow(100_000)).toBe(false);
  });

  it("calls a client slow once the buffer is full and it took nothing for the grace period; taking one restarts the clock", async () => {
    const pace = new ReaderPace(10, 30);
    pace.progressed();
    await sleep(60);
    expect(pace.tooSlow(9)).toBe(false);
    expect(pace.tooSlow(10)).toBe(true);
    pace.progressed();
    expect(pace.tooSlow(10)).toBe(false);
  });

  it("watch calls back once the grace has run out, only with the buffer full, and not after stop", async () => {
    const pace = new ReaderPace(10, 30);
    let calls = 0;
    pace.watch(9, () => calls++);
    await sleep(50);
    expect(calls).toBe(0);
    pace.progressed();
    pace.watch(10, () => calls++);
    pace.watch(11, () => calls++); // one check at a time
    await sleep(50);
    expect(calls).toBe(1);
    pace.watch(10, () => calls++);
    pace.stop();
    await sleep(50);
    expect(calls).toBe(1);
  });
});

describe("EventQueue", () => {
  it("ends a stream that stopped reading after a burst once the grace runs out, though no event follows; and at its byte bound at once", async () => {
    const { EventQueue } = await import("../../src/subscriptions/event-queue.js");
    const head = (n: number) => ({ kind: "head" as const, number: n, hash: `0x${n}`, parentHash: "0x", text: "x".repeat(100) });
    const overflows: string[] = [];
    const stalled = new EventQueue(4, (e) => overflows.push(e.message));
    for (let i = 0; i < 10; i++) stalled.push(head(i));
    expect(stalled.ended).toBe(false); // a burst: the client may be reading
    await sleep(1100);
    expect(stalled.ended).toBe(true);
    expect(overflows).toEqual([expect.stringMatching(/^subscriber too slow: 10 events were waiting/)]);

    const bounded = new EventQueue(1000, (e) => overflows.push(e.message), 550);
    for (let i = 0; i < 6; i++) bounded.push(head(i));
    expect(bounded.ended).toBe(true);
    expect(overflows[1]).toMatch(/^subscriber too slow: 600 bytes were waiting to be read/);
  });
});
