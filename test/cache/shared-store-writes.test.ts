/**
 * Writes to a shared store (Redis) are not waited for: the answer would wait on a silent Redis a second time, after
 * its lookup (found from outside: up to three times stores.timeoutMs). They are counted stored only once the store
 * says it stored them (found from outside: writes dropped while Redis was down were counted).
 */
import { expect, it } from "vitest";
import { CallCache } from "../../src/cache/call-cache.js";
import type { FinalityRules } from "../../src/cache/finality-rule.js";
import type { CacheStore } from "../../src/cache/store.js";
import type { ChainHead } from "../../src/upstream/chain-head.js";
import type { UpstreamResult } from "../../src/upstream/reply.js";

const head = { finalized: () => 100n, refreshingAfterPause: false, lastFinalized: 100n, onFinalityRewind: () => {} } as unknown as ChainHead;
const rules: FinalityRules = new Map([["eth_getBlockByNumber", () => ({ kind: "block" as const, number: 1n })]]);
const answer = (): UpstreamResult => ({ body: Buffer.from('{"number":"0x1"}'), start: 0, end: 16 });

/** A shared store whose writes wait until `finish(stored)`. */
function slowStore() {
  const writes: ((stored: boolean) => void)[] = [];
  const store: CacheStore = {
    shared: true,
    get: async () => undefined,
    set: () => new Promise<boolean>((resolve) => writes.push(resolve)),
    delete: async () => {},
    close: async () => {},
  };
  return { store, writes };
}

it("a call's answer does not wait for the shared store's write, which counts once stored", async () => {
  const { store, writes } = slowStore();
  const cache = new CallCache({ network: "ethereum", store, coalesce: false, rules, head, chainId: () => "0x1" });
  const result = await cache.call("eth_getBlockByNumber", '["0x1",false]', { kind: "block", number: 1n }, false, async () => answer(), undefined);
  expect(result.body.toString("utf8", result.start, result.end)).toBe('{"number":"0x1"}');
  expect(writes).toHaveLength(1);
  expect(cache.stats.stored).toBe(0);
  writes[0]?.(true);
  await new Promise((resolve) => setImmediate(resolve));
  expect(cache.stats.stored).toBe(1);
});

it("a write the store dropped (Redis down) is not counted stored", async () => {
  const { store, writes } = slowStore();
  const cache = new CallCache({ network: "ethereum", store, coalesce: false, rules, head, chainId: () => "0x1" });
  await cache.call("eth_getBlockByNumber", '["0x1",false]', { kind: "block", number: 1n }, false, async () => answer(), undefined);
  writes[0]?.(false);
  await new Promise((resolve) => setImmediate(resolve));
  expect(cache.stats.stored).toBe(0);
});
