/**
 * A reorganization deeper than the window of blocks nodegate remembers
 * (subscriptions.reorgWindowBlocks, 8 here), against a real Anvil: the logs
 * and headers it replaced below the window cannot be taken back in order, so
 * subscribers on both doors are ended with a clear error (close 1011;
 * ABORTED) instead of following an inconsistent chain, and whoever
 * subscribes next follows the new branch.
 */
import { create } from "@bufbuild/protobuf";
import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService, SubscribeLogsRequestSchema, SubscribeNewHeadsRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { LogFilterSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import { decodeData } from "../../src/codec/hex.js";
import { DEFAULT_SUBSCRIPTIONS } from "../../src/config/config.js";
import { reorgTooDeep } from "../../src/errors/catalogue.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver, type Probe } from "../support/chain-driver.js";
import { grpcJsStreamClient, openGrpcJsStream } from "../support/grpc-streams.js";
import { waitForLiveSubscriptions, waitForNoLiveSubscriptions } from "../support/live-subscriptions.js";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { expectNextSubscriberFollows } from "../support/next-subscriber.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";

const WINDOW = 8;
/**
 * The native door's close reason for a reorganization deeper than the window: within the 123 bytes a close reason
 * holds, ending with what to do (found from outside: the whole text was cut at 120 bytes, before the advice).
 */
const DEEP_CLOSE = /^subscription ended: a reorg deeper than the 8 blocks remembered \(forked at or below block \d+\); subscribe again$/;

let anvil: AnvilNode;
let chain: ChainDriver;
let probe: Probe;
let nodegate: TestNodegate;
let grpcClient: grpc.Client;

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  probe = await chain.probe();
  nodegate = await startNodegate({ upstreamUrl: anvil.wsUrl, config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, reorgWindowBlocks: WINDOW } } });
  grpcClient = grpcJsStreamClient(nodegate.address);
});
afterAll(async () => {
  grpcClient?.close();
  await nodegate?.close();
  await anvil?.stop();
});

it("a new branch forked below the block the feed started from ends the subscribers too", async () => {
  // Found from outside: anvil_reorg pushes the new branch block by block from its fork, and the first header
  // reported a fork point under the feed's starting block, which was read as "nothing sent below the window":
  // the replaced blocks' logs were never taken back and no error came. A rollback past the starting block and
  // one new block give that header every time. (First in this file: it needs a fresh feed.)
  const native = await openNativeSubscriber(nodegate.wsUrl);
  const headsId = await native.subscribe("newHeads");
  const logsId = await native.subscribe("logs", { address: probe.address });
  const typedLogs = openGrpcJsStream(
    grpcClient,
    EthService.method.subscribeLogs,
    create(SubscribeLogsRequestSchema, { filter: create(LogFilterSchema, { address: [decodeData(probe.address)] }) }),
    { "x-api-key": nodegate.key },
  );
  try {
    await waitForLiveSubscriptions(nodegate.gateway, "logs", 2);
    await waitForLiveSubscriptions(nodegate.gateway, "newHeads", 1);
    const start = await chain.blockNumber();
    await probe.store(1n);
    await chain.mine(WINDOW + 4);
    await native.waitFor(logsId, 1);
    await typedLogs.waitFor(1);
    await native.waitFor(headsId, WINDOW + 5); // sent, the log's block below the window by now
    await chain.rpc("anvil_rollback", [(await chain.blockNumber()) - start + 1]);
    await chain.mine(1);
    const closed = await native.closed;
    expect(closed.code).toBe(1011);
    expect(closed.reason).toMatch(DEEP_CLOSE);
    expect((await typedLogs.ended)?.code).toBe(10); // ABORTED
  } finally {
    typedLogs.cancel();
    await Promise.all([typedLogs.ended, native.close()]);
  }
});

it("ends the subscribers of both doors with a clear error, and the next subscriber follows the new branch", async () => {
  // Found from outside: a 70-block reorganization with a 64-block window took back none of the replaced logs and
  // re-sent heads from the window's bottom, whose parents the subscribers never got.
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
    await chain.mine(WINDOW + 8); // room below for the reorganization's fork point
    await probe.store(1n);
    await chain.mine(WINDOW + 4);
    const head = await chain.blockNumber();
    await native.waitFor(headsId, 2 * WINDOW + 13);
    await typedHeads.waitFor(2 * WINDOW + 13);
    // Replace every block from before the log's: deeper than the window.
    await chain.rpc("anvil_reorg", [WINDOW + 7, []]);
    expect(await chain.blockNumber()).toBe(head);

    const closed = await native.closed;
    expect(closed.code).toBe(1011);
    expect(closed.reason).toMatch(DEEP_CLOSE);
    // Nothing but the close tells a native subscriber (no JSON-RPC message names the subscription's end); the log has the whole text.
    expect(nodegate.logs.some((l) => l.msg === "closing a native WebSocket subscriber" && /^subscription ended: a chain reorganization replaced blocks from \d+ down, deeper than the 8 blocks nodegate remembers .*; subscribe again \(typed callers/.test(String(l.reason)))).toBe(true);
    for (const stream of [typedHeads, typedLogs]) {
      const err = await stream.ended;
      expect(err?.code).toBe(10); // ABORTED
      expect(decodeURIComponent(err?.details ?? "")).toMatch(/deeper than the 8 blocks nodegate remembers \(subscriptions.reorgWindowBlocks\)/);
    }
    expect(nodegate.logs.some((l) => l.msg === "chain reorganization deeper than the window: ending the subscribers")).toBe(true);
    await waitForNoLiveSubscriptions(nodegate.gateway);

    // Whoever subscribes next follows the node's chain as it is now.
    await expectNextSubscriberFollows(nodegate.wsUrl, nodegate.gateway, chain);
  } finally {
    typedHeads.cancel();
    typedLogs.cancel();
    await Promise.all([typedHeads.ended, typedLogs.ended, native.close()]);
  }
});

it("a rollback to a shorter chain deeper than the window ends the subscribers at once, not when the chain regrows", async () => {
  // Found from outside: the new head was below the window, taken for a lagging node, and the subscribers heard nothing.
  const native = await openNativeSubscriber(nodegate.wsUrl);
  const headsId = await native.subscribe("newHeads");
  const typedHeads = openGrpcJsStream(grpcClient, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), { "x-api-key": nodegate.key });
  try {
    await waitForLiveSubscriptions(nodegate.gateway, "newHeads", 2);
    await chain.mine(WINDOW + 8);
    await native.waitFor(headsId, WINDOW + 8);
    await typedHeads.waitFor(WINDOW + 8);
    await chain.rpc("anvil_rollback", [WINDOW + 4]);
    await chain.mine(1);
    const closed = await native.closed;
    expect(closed.code).toBe(1011);
    expect(closed.reason).toMatch(DEEP_CLOSE);
    expect((await typedHeads.ended)?.code).toBe(10);
  } finally {
    typedHeads.cancel();
    await Promise.all([typedHeads.ended, native.close()]);
  }
});

it("a fork below the genesis block (a dev node restarted afresh) is worded as such, not as a fork below block 0", () => {
  // Found from outside: "replaced blocks from below 0".
  expect(reorgTooDeep(0, 64).message).toMatch(/^subscription ended: a chain reorganization replaced every block, the genesis block too \(a node restarted afresh, or another chain\), deeper than the 64 blocks/);
  expect(reorgTooDeep(120, 64).message).toMatch(/replaced blocks from 120 down, deeper than the 64 blocks/);
});

it("says where a typed caller resumes: past its last block still on the chain for a deep reorganization, from the new head for a fresh chain", () => {
  // Found from outside: after a fresh chain the text told typed callers to resume with from_block, which asks the new chain for blocks it may not have.
  expect(reorgTooDeep(120, 64).message).toMatch(/; subscribe again \(typed callers: with from_block one past the last block received whose hash is still on the node's chain; it forked at block 120 or below\)$/);
  expect(reorgTooDeep(0, 64).message).toMatch(/; subscribe again, typed callers without from_block \(what was received belongs to the old chain\)$/);
  expect(reorgTooDeep(0, 64).message).not.toMatch(/with from_block/);
});

it("a rollback to the genesis block itself, seen by an HTTP node's poll at block 0, is a deep reorganization, not a fresh chain (last: it empties the chain)", async () => {
  // Found from outside: the poll saw the head back at block 0, a branch starting below block 1, and the subscribers
  // were told of another genesis block, though block 0 was the one they knew.
  const overHttp = await startNodegate({ upstreamUrl: anvil.url, config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, reorgWindowBlocks: WINDOW, pollIntervalMs: 100 } } });
  const client = grpcJsStreamClient(overHttp.address);
  const native = await openNativeSubscriber(overHttp.wsUrl);
  const headsId = await native.subscribe("newHeads");
  const typedHeads = openGrpcJsStream(client, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), { "x-api-key": overHttp.key });
  try {
    await waitForLiveSubscriptions(overHttp.gateway, "newHeads", 2);
    await chain.mine(WINDOW + 4);
    await native.waitFor(headsId, WINDOW + 4);
    await typedHeads.waitFor(WINDOW + 4);
    const head = Number(await chain.rpc("eth_blockNumber", []));
    await chain.rpc("anvil_rollback", [head]);
    expect(Number(await chain.rpc("eth_blockNumber", []))).toBe(0);
    const closed = await native.closed;
    expect(closed.code).toBe(1011);
    expect(closed.reason).toBe("subscription ended: a reorg deeper than the 8 blocks remembered (forked at or below block 1); subscribe again");
    const ended = await typedHeads.ended;
    expect(ended?.code).toBe(10);
    expect(ended?.details).toMatch(/replaced blocks from 1 down/);
  } finally {
    typedHeads.cancel();
    await Promise.all([typedHeads.ended, native.close()]);
    client.close();
    await overHttp.close();
  }
});
