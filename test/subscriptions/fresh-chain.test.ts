/**
 * A node replaced by a fresh chain (a dev node restarted afresh, or another
 * chain behind the same URL) that already has blocks when nodegate reaches it
 * again, against real Anvils restarted on one port: the genesis block's hash
 * differs from the one the heads feed learnt when it started, so the
 * subscribers of both doors are told of a fresh chain (typed callers: subscribe
 * again without from_block), not of a deep reorganization "from block N down",
 * whichever height the new chain has; whoever subscribes next follows the new
 * chain. Over a WebSocket node (a reconnect) and an HTTP one (a poll).
 */
import { create } from "@bufbuild/protobuf";
import type * as grpc from "@grpc/grpc-js";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { EthService, SubscribeLogsRequestSchema, SubscribeNewHeadsRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { LogFilterSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import { decodeData } from "../../src/codec/hex.js";
import { DEFAULT_SUBSCRIPTIONS, DEFAULT_WEBSOCKET } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver, type Probe } from "../support/chain-driver.js";
import { grpcJsStreamClient, openGrpcJsStream } from "../support/grpc-streams.js";
import { waitForLiveSubscriptions, waitForNoLiveSubscriptions } from "../support/live-subscriptions.js";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { expectNextSubscriberFollows } from "../support/next-subscriber.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";
import { startWsRelay, type WsRelay } from "../support/ws-relay.js";

const WINDOW = 8;
const FRESH = /^subscription ended: a chain reorganization replaced every block, the genesis block too \(a node restarted afresh, or another chain\)/;
/** The native door's close reason: at most 123 bytes (the WebSocket protocol's limit), so the text is shorter there. */
const FRESH_CLOSE = /^subscription ended: a fresh chain \(another genesis block: a node restarted afresh, or another chain\); subscribe again$/;

let anvil: AnvilNode;
let chain: ChainDriver;
let probe: Probe;
/** nodegate on Anvil's WebSocket through a relay, and on its HTTP through a proxy: both refuse while Anvil restarts. */
let relay: WsRelay;
let proxy: TcpProxy;
let overWs: TestNodegate;
let overHttp: TestNodegate;
let wsClient: grpc.Client;
let httpClient: grpc.Client;
/**
 * Each restart gets a genesis timestamp of its own: Anvil's genesis block differs by its timestamp alone (its state
 * root is the empty trie's whatever the balances), so two Anvils started within one second share their genesis block.
 */
let restarts = 0;

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  probe = await chain.probe();
  relay = await startWsRelay(anvil.wsUrl);
  proxy = await startTcpProxy(anvil.port);
  const subscriptions = { ...DEFAULT_SUBSCRIPTIONS, reorgWindowBlocks: WINDOW, pollIntervalMs: 100 };
  overWs = await startNodegate({
    upstreamUrl: relay.url,
    config: { websocket: { ...DEFAULT_WEBSOCKET, reconnectMinDelayMs: 20, reconnectMaxDelayMs: 100, pongTimeoutMs: 60_000 }, subscriptions },
  });
  overHttp = await startNodegate({ upstreamUrl: `http://127.0.0.1:${proxy.port}`, config: { subscriptions } });
  wsClient = grpcJsStreamClient(overWs.address);
  httpClient = grpcJsStreamClient(overHttp.address);
});
afterEach(async () => {
  await waitForNoLiveSubscriptions(overWs.gateway);
  await waitForNoLiveSubscriptions(overHttp.gateway);
});
afterAll(async () => {
  wsClient?.close();
  httpClient?.close();
  await overWs?.close();
  await overHttp?.close();
  await relay?.close();
  await proxy?.close();
  await anvil?.stop();
});

/** Replaces Anvil by a fresh one on the same port with `blocks` blocks, out of nodegate's reach until they are mined. */
async function restartAfresh(blocks: number): Promise<void> {
  relay.refuse(true);
  proxy.refuse(true);
  relay.sever();
  proxy.sever();
  const port = anvil.port;
  await anvil.stop();
  anvil = await startAnvil({ port, args: ["--timestamp", String(1_700_000_000 + ++restarts)] });
  chain = chainDriver(anvil.url);
  if (blocks > 0) await chain.mine(blocks);
  relay.refuse(false);
  proxy.refuse(false);
}

for (const door of ["WebSocket", "HTTP"] as const) {
  for (const [where, blocksAfter] of [
    ["below the blocks remembered", (_head: number) => 3],
    ["above the old head", (head: number) => head + 4],
  ] as const) {
    it(`a fresh chain with blocks ${where} (node over ${door}) ends the subscribers of both doors as a fresh chain`, async () => {
      const nodegate = door === "WebSocket" ? overWs : overHttp;
      const grpcClient = door === "WebSocket" ? wsClient : httpClient;
      if (restarts > 0) probe = await chain.probe();
      const auth = { "x-api-key": nodegate.key };
      const native = await openNativeSubscriber(nodegate.wsUrl);
      const headsId = await native.subscribe("newHeads");
      await native.subscribe("logs", { address: probe.address });
      const filter = create(LogFilterSchema, { address: [decodeData(probe.address)] });
      const typedHeads = openGrpcJsStream(grpcClient, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), auth);
      const typedLogs = openGrpcJsStream(grpcClient, EthService.method.subscribeLogs, create(SubscribeLogsRequestSchema, { filter }), auth);
      try {
        await waitForLiveSubscriptions(nodegate.gateway, "newHeads", 2);
        await waitForLiveSubscriptions(nodegate.gateway, "logs", 2);
        await probe.store(1n);
        await chain.mine(WINDOW + 4); // sent, the first blocks below the window by now
        await native.waitFor(headsId, WINDOW + 5);
        await typedHeads.waitFor(WINDOW + 5);
        const head = await chain.blockNumber();

        await restartAfresh(blocksAfter(head));

        const closed = await native.closed;
        expect(closed.code).toBe(1011);
        expect(closed.reason).toMatch(FRESH_CLOSE);
        for (const stream of [typedHeads, typedLogs]) {
          const err = await stream.ended;
          expect(err?.code).toBe(10); // ABORTED
          expect(decodeURIComponent(err?.details ?? "")).toMatch(FRESH);
          expect(decodeURIComponent(err?.details ?? "")).toMatch(/typed callers without from_block/);
        }
        await waitForNoLiveSubscriptions(nodegate.gateway);

        // Whoever subscribes next follows the node's chain as it is now.
        await expectNextSubscriberFollows(nodegate.wsUrl, nodegate.gateway, chain);
      } finally {
        typedHeads.cancel();
        typedLogs.cancel();
        await Promise.all([typedHeads.ended, typedLogs.ended, native.close()]);
      }
    });
  }
}

it("a fresh chain after fewer blocks than the window were sent ends the subscribers too: nothing they hold is on it", async () => {
  // Without the genesis block compared, the new chain was taken for a reorganization within the window: the
  // subscribers went on, sent the new chain's head over blocks of another chain.
  if (restarts > 0) probe = await chain.probe();
  const native = await openNativeSubscriber(overWs.wsUrl);
  const headsId = await native.subscribe("newHeads");
  try {
    await waitForLiveSubscriptions(overWs.gateway, "newHeads", 1);
    await chain.mine(2);
    await native.waitFor(headsId, 2);
    await restartAfresh(3);
    const closed = await Promise.race([native.closed, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 5000))]);
    expect(closed?.code).toBe(1011);
    expect(closed?.reason).toMatch(FRESH_CLOSE);
  } finally {
    await native.close();
  }
});
