/**
 * Fan-out against a real Anvil over WebSocket, counted at a relay between
 * nodegate and the node: clients that ask for the same topic (on either
 * door, in any spelling) share one upstream subscription; a different
 * filter gets its own; the last client leaving unsubscribes upstream.
 */
import { create } from "@bufbuild/protobuf";
import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService, SubscribeLogsRequestSchema, SubscribeNewHeadsRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { LogFilterSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import { decodeData } from "../../src/codec/hex.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver, type Probe } from "../support/chain-driver.js";
import { grpcJsStreamClient, openGrpcJsStream } from "../support/grpc-streams.js";
import { waitForLiveSubscriptions } from "../support/live-subscriptions.js";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { startWsRelay, type WsRelay } from "../support/ws-relay.js";

let anvil: AnvilNode;
let chain: ChainDriver;
let relay: WsRelay;
let nodegate: TestNodegate;
let grpcClient: grpc.Client;
let probe: Probe;
let other: Probe;

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  probe = await chain.probe();
  other = await chain.probe();
  relay = await startWsRelay(anvil.wsUrl);
  nodegate = await startNodegate({ upstreamUrl: relay.url });
  grpcClient = grpcJsStreamClient(nodegate.address);
});
afterAll(async () => {
  grpcClient?.close();
  await nodegate?.close();
  await relay?.close();
  await anvil?.stop();
});

/** The upstream eth_subscribe calls for one kind, as the relay saw them. */
const upstreamSubscribes = (kind: string) => relay.requests.filter((r) => r.method === "eth_subscribe" && (r.params as unknown[])[0] === kind);

async function until(ok: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!ok()) throw new Error(`timed out waiting for ${what}`);
}

it("three clients on two doors share one newHeads subscription upstream; the last to leave unsubscribes it", async () => {
  const a = await openNativeSubscriber(nodegate.wsUrl);
  const b = await openNativeSubscriber(nodegate.wsUrl);
  const aId = await a.subscribe("newHeads");
  const bId = await b.subscribe("newHeads");
  const typed = openGrpcJsStream(grpcClient, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), { "x-api-key": nodegate.key });
  await waitForLiveSubscriptions(nodegate.gateway, "newHeads", 3);
  expect(upstreamSubscribes("newHeads")).toHaveLength(1);

  const start = await chain.blockNumber();
  await chain.mine(3);
  const hashes = await chain.hashes(start + 1, start + 3);
  expect((await a.waitFor(aId, 3)).map((h) => h.hash)).toEqual(hashes);
  expect((await b.waitFor(bId, 3)).map((h) => h.hash)).toEqual(hashes);
  expect((await typed.waitFor(3)).map((m) => `0x${Buffer.from(m.header?.hash ?? []).toString("hex")}`)).toEqual(hashes);

  await a.close();
  typed.cancel();
  await typed.ended;
  // One client still listens: the upstream subscription stays.
  await chain.mine(1);
  await b.waitFor(bId, 4);
  expect(relay.count("eth_unsubscribe")).toBe(0);

  await b.request("eth_unsubscribe", [bId]);
  await until(() => relay.count("eth_unsubscribe") === 1, "the upstream eth_unsubscribe");
  // The node's id is unsubscribed, never nodegate's.
  const [unsubscribed] = relay.requests.filter((r) => r.method === "eth_unsubscribe").map((r) => (r.params as string[])[0]);
  expect([aId, bId]).not.toContain(unsubscribed);
  await b.close();
});

it("the same logs filter in different spellings, on two doors, is one upstream subscription; another filter is a second", async () => {
  const before = upstreamSubscribes("logs").length;
  const native = await openNativeSubscriber(nodegate.wsUrl);
  const nativeId = await native.subscribe("logs", { address: [probe.address.toLowerCase()], topics: [] });
  const filter = create(LogFilterSchema, { address: [decodeData(probe.address)] });
  const typed = openGrpcJsStream(grpcClient, EthService.method.subscribeLogs, create(SubscribeLogsRequestSchema, { filter }), { "x-api-key": nodegate.key });
  await waitForLiveSubscriptions(nodegate.gateway, "logs", 2);
  expect(upstreamSubscribes("logs").length - before).toBe(1);
  const otherId = await native.subscribe("logs", { address: other.address });
  expect(upstreamSubscribes("logs").length - before).toBe(2);

  await probe.store(1n);
  await other.store(2n);
  const [fromProbe] = await native.waitFor(nativeId, 1);
  const [fromOther] = await native.waitFor(otherId, 1);
  const [typedLog] = await typed.waitFor(1);
  expect(fromProbe.address).toBe(probe.address.toLowerCase());
  expect(fromOther.address).toBe(other.address.toLowerCase());
  expect(`0x${Buffer.from(typedLog?.log?.blockHash ?? []).toString("hex")}`).toBe(fromProbe.blockHash);

  const unsubscribesBefore = relay.count("eth_unsubscribe");
  typed.cancel();
  await typed.ended;
  await native.close();
  // Both logs subscriptions and the heads subscription the logs feeds followed are gone upstream.
  await until(() => relay.count("eth_unsubscribe") - unsubscribesBefore === 3, "three upstream eth_unsubscribe calls");
  expect(nodegate.gateway.subscriptions.hub(nodegate.gateway.network(undefined)).feedKeys).toEqual([]);
});
