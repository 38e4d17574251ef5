/**
 * A WebSocket node whose log notifications come well after its heads (a
 * provider's logs lagging its head events), against a real Anvil through a
 * relay that delays every pushed log: each log reaches a subscriber once, in
 * chain order, a removal only for a log it was sent, and a reorganization
 * meanwhile leaves the subscriber holding the canonical logs.
 */
import { toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver, type Probe } from "../support/chain-driver.js";
import { waitForLiveSubscriptions } from "../support/live-subscriptions.js";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { ANVIL_KEY_0 } from "../support/probe.js";
import { startWsRelay, type WsRelay } from "../support/ws-relay.js";

const SENDER = privateKeyToAccount(ANVIL_KEY_0).address;
const LAG_MS = 1500;

let anvil: AnvilNode;
let chain: ChainDriver;
let probe: Probe;
let relay: WsRelay;
let nodegate: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  probe = await chain.probe();
  relay = await startWsRelay(anvil.wsUrl);
  nodegate = await startNodegate({ upstreamUrl: relay.url });
});
afterAll(async () => {
  await nodegate?.close();
  await relay?.close();
  await anvil?.stop();
});

type Seen = { blockNumber: string; blockHash: string; logIndex: string; removed: boolean };
const key = (l: Seen) => `${l.blockHash}/${Number(l.logIndex)}`;

/** Checks the notifications' own consistency and returns the logs a client applying them in order holds. */
function applied(notifications: readonly Seen[]): string[] {
  const held: Seen[] = [];
  for (const l of notifications) {
    const at = held.findIndex((h) => key(h) === key(l));
    if (l.removed) {
      expect(at, `a removal of ${key(l)}, a log the client holds`).toBeGreaterThanOrEqual(0);
      held.splice(at, 1);
    } else {
      expect(at, `${key(l)} sent while the client holds it`).toBe(-1);
      const last = held.at(-1);
      if (last !== undefined) expect(Number(l.blockNumber), `${key(l)} after a log of a higher block`).toBeGreaterThanOrEqual(Number(last.blockNumber));
      held.push(l);
    }
  }
  return held.map(key);
}

for (const nodeRemoves of [false, true]) {
  const how = nodeRemoves ? "the node pushing its own removals late as well (geth)" : "the node saying nothing of the reorganization (Anvil)";
  it(`logs pushed well after their heads, with a reorganization among them, ${how}: each once, in order, removals only of what was sent`, async () => {
    const native = await openNativeSubscriber(nodegate.wsUrl);
    try {
      relay.delayLogs(LAG_MS);
      const id = await native.subscribe("logs", { address: probe.address });
      await waitForLiveSubscriptions(nodegate.gateway, "logs", 1);
      const start = await chain.blockNumber();
      for (let v = 1n; v <= 4n; v++) await probe.store(v);
      const replaced = await chain.logs({ address: probe.address, fromBlock: toHex(start + 3), toBlock: "latest" });
      expect(replaced).toHaveLength(2);
      // The last two blocks are replaced by a branch with one log of its own, before their logs were pushed.
      await chain.rpc("anvil_reorg", [2, [[{ from: SENDER, to: probe.address, data: probe.storeData(9n), gas: "0x100000" }, 0]]]);
      // The removals come after the logs they take back, which the relay holds back LAG_MS from when the node pushed them.
      if (nodeRemoves) {
        setTimeout(() => {
          for (const log of replaced) relay.pushLog({ ...log, removed: true });
        }, LAG_MS + 200);
      }
      await probe.store(5n);
      await probe.store(6n);
      const canonical = await chain.logs({ address: probe.address, fromBlock: toHex(start + 1), toBlock: "latest" });
      expect(canonical).toHaveLength(5);
      const want = canonical.map((l) => `${l.blockHash}/${Number(l.logIndex)}`);
      // Every push has come once the lag has passed twice over.
      await new Promise((r) => setTimeout(r, 2 * LAG_MS + 500));
      expect(applied(native.results(id))).toEqual(want);
      // And the feed goes on: one more log, with no lag now.
      relay.delayLogs(0);
      const before = native.results(id).length;
      const later = await probe.store(7n);
      const all = await native.waitFor(id, before + 1, 10_000);
      expect(Number(all.at(-1).blockNumber)).toBe(later);
      expect(applied(native.results(id))).toEqual([...want, key(all.at(-1))]);
    } finally {
      relay.delayLogs(0);
      await native.close();
    }
  });
}

it("a dropped connection loses no log whose push was still on its way: the reconnect's fill reads them", async () => {
  const native = await openNativeSubscriber(nodegate.wsUrl);
  try {
    relay.delayLogs(LAG_MS);
    const id = await native.subscribe("logs", { address: probe.address });
    await waitForLiveSubscriptions(nodegate.gateway, "logs", 1);
    const start = await chain.blockNumber();
    for (let v = 11n; v <= 13n; v++) await probe.store(v);
    // Their heads have come, their logs not yet: the connection drops with the logs on their way, lost.
    const accepted = relay.accepted;
    relay.sever();
    for (let waited = 0; relay.accepted === accepted && waited < 10_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
    relay.delayLogs(0);
    const want = (await chain.logs({ address: probe.address, fromBlock: toHex(start + 1), toBlock: "latest" })).map((l) => `${l.blockHash}/${Number(l.logIndex)}`);
    expect(want).toHaveLength(3);
    const later = await probe.store(14n);
    const all = await native.waitFor(id, 4, 15_000);
    expect(Number(all.at(-1).blockNumber)).toBe(later);
    expect(applied(all)).toEqual([...want, key(all.at(-1))]);
  } finally {
    relay.delayLogs(0);
    await native.close();
  }
});
