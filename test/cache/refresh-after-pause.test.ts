/**
 * After a long pause the cache waits (at most 200 ms) for a fresh finality reading before serving what it stored:
 * a rewind during the pause must not be served. That wait counts from the reading's start, not from each call's
 * (found from outside: with the reading stuck on a hung primary for its whole deadline, every cacheable call waited
 * 200 ms more, for 28 s).
 */
import { afterEach, expect, it, vi } from "vitest";
import { CallCache } from "../../src/cache/call-cache.js";
import type { FinalityRules } from "../../src/cache/finality-rule.js";
import { MemoryCacheStore } from "../../src/cache/memory-cache-store.js";
import type { ChainHead } from "../../src/upstream/chain-head.js";
import type { UpstreamResult } from "../../src/upstream/reply.js";

afterEach(() => {
  vi.useRealTimers();
});

/** A head whose finality reading, after a pause, has been out `outForMs` and never comes back. */
function stuckHead(outForMs: number): ChainHead {
  return {
    finalized: () => new Promise<bigint>(() => {}),
    refreshingAfterPause: true,
    refreshOutForMs: outForMs,
    lastFinalized: 100n,
    onFinalityRewind: () => {},
  } as unknown as ChainHead;
}

const rules: FinalityRules = new Map([["eth_getBlockByNumber", () => ({ kind: "block" as const, number: 1n })]]);
const answer: UpstreamResult = { body: Buffer.from('{"number":"0x1"}'), start: 0, end: 16 };

async function fetchedAfterOneTurn(outForMs: number): Promise<{ fetched: boolean; settle: () => Promise<void> }> {
  vi.useFakeTimers();
  const cache = new CallCache({ network: "ethereum", store: new MemoryCacheStore(), coalesce: false, rules, head: stuckHead(outForMs) });
  let fetched = false;
  const call = cache.call("eth_getBlockByNumber", '["0x1",false]', { kind: "block", number: 1n }, false, async () => {
    fetched = true;
    return answer;
  }, undefined);
  await vi.advanceTimersByTimeAsync(0);
  return {
    fetched,
    settle: async () => {
      await vi.advanceTimersByTimeAsync(200);
      await call;
    },
  };
}

it("the first call after a pause waits for the fresh reading (200 ms at most)", async () => {
  const first = await fetchedAfterOneTurn(0);
  expect(first.fetched).toBe(false);
  await first.settle();
});

it("a call once the reading has been out 200 ms goes to the node at once", async () => {
  const later = await fetchedAfterOneTurn(250);
  expect(later.fetched).toBe(true);
  await later.settle();
});
