/**
 * A feed whose upstream subscription is being made while the node's
 * WebSocket reconnects subscribes twice on the new connection (its own
 * subscribe, then the renewal the reconnection asks for). Found from
 * outside: the first id was forgotten, never unsubscribed, and the node
 * kept pushing on it after every client had left (18 such subscriptions
 * on one connection under churn). Only the newest subscription is kept;
 * the other is unsubscribed, so once the clients leave the node pushes
 * nothing more.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEFAULT_WEBSOCKET } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver, type Probe } from "../support/chain-driver.js";
import { waitForLiveSubscriptions, waitForNoLiveSubscriptions } from "../support/live-subscriptions.js";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { startWsRelay, type WsRelay } from "../support/ws-relay.js";

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
  nodegate = await startNodegate({
    upstreamUrl: relay.url,
    config: { websocket: { ...DEFAULT_WEBSOCKET, reconnectMinDelayMs: 400, reconnectMaxDelayMs: 400, pongTimeoutMs: 60_000 } },
  });
});
afterAll(async () => {
  await nodegate?.close();
  await relay?.close();
  await anvil?.stop();
});

it("a logs feed started while the node's socket reconnects leaves no subscription on the node once its clients leave", async () => {
  for (let round = 0; round < 3; round++) {
    const heads = await openNativeSubscriber(nodegate.wsUrl);
    const logs = await openNativeSubscriber(nodegate.wsUrl);
    try {
      // A heads feed running, so the logs feed starts at once, without waiting for the connection.
      const headsId = await heads.subscribe("newHeads");
      await waitForLiveSubscriptions(nodegate.gateway, "newHeads", 1);
      // Subscribed once nodegate has seen the socket go, before it is back (it reconnects after 400 ms).
      relay.sever();
      await new Promise((r) => setTimeout(r, 100));
      const logsId = await logs.subscribe("logs", { address: probe.address });
      await waitForLiveSubscriptions(nodegate.gateway, "logs", 1);
      // The logs reach the client, once each.
      const block = await probe.store(BigInt(round + 1));
      const got = await logs.waitFor(logsId, 1);
      expect(got.map((l: { blockNumber: string }) => Number(l.blockNumber))).toEqual([block]);

      expect((await logs.request("eth_unsubscribe", [logsId])).result).toBe(true);
      expect((await heads.request("eth_unsubscribe", [headsId])).result).toBe(true);
      await waitForNoLiveSubscriptions(nodegate.gateway);
    } finally {
      await Promise.all([heads.close(), logs.close()]);
    }
    // Let the unsubscribes reach the node, then give it a block and a log to push: with every client gone, it must
    // push nothing.
    await new Promise((r) => setTimeout(r, 300));
    const pushedBefore = relay.pushed;
    await probe.store(100n + BigInt(round));
    await new Promise((r) => setTimeout(r, 500));
    expect(relay.pushed - pushedBefore).toBe(0);
  }
});
