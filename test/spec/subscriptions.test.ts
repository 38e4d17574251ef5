/**
 * Events: push delivery, which the spec leaves unshown and nodegate offers
 * (docs/subscriptions.md), on every door against a real Anvil reached over
 * its WebSocket. The full behaviour (gaps, reorganizations, slow clients,
 * resume) is tested in test/subscriptions/.
 */
import { create } from "@bufbuild/protobuf";
import { toEventSelector, toHex } from "viem";
import { afterAll, beforeAll, expect } from "vitest";
import { EthService, SubscribeLogsRequestSchema, SubscribeNewHeadsRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { LogFilterSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import { decodeData } from "../../src/codec/hex.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { chainDriver } from "../support/chain-driver.js";
import { grpcJsStreamClient, openGrpcJsStream } from "../support/grpc-streams.js";
import { waitForLiveSubscriptions } from "../support/live-subscriptions.js";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { openSpecGateway, type SpecGateway } from "./harness/gateway.js";
import { noteDoor, specRule } from "./harness/spec-rule.js";

const STORED = toEventSelector("Stored(address,uint256,bytes)");

let anvil: AnvilNode;
let g: SpecGateway;

beforeAll(async () => {
  anvil = await startAnvil();
  g = await openSpecGateway({ upstreamUrl: anvil.wsUrl });
});
afterAll(async () => {
  await g?.close();
  await anvil?.stop();
});

specRule("events.subscriptions", async () => {
  const chain = chainDriver(anvil.url);
  const probe = await chain.probe();

  // HTTP cannot push: it says where to subscribe.
  const overHttp = await g.http.call("eth_subscribe", ["newHeads"]);
  expect(overHttp.error?.code).toBe(-32601);
  expect(overHttp.error?.message).toMatch(/^notifications not supported: eth_subscribe needs a WebSocket connection/);

  noteDoor("ws");
  const native = await openNativeSubscriber(`ws://127.0.0.1:${g.ng.port}/ws/v3/${g.ng.key}`);
  noteDoor("typed");
  const client = grpcJsStreamClient(g.ng.address);
  const auth = { "x-api-key": g.ng.key };
  const typedHeads = openGrpcJsStream(client, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), auth);
  const filter = create(LogFilterSchema, { address: [decodeData(probe.address)] });
  const typedLogs = openGrpcJsStream(client, EthService.method.subscribeLogs, create(SubscribeLogsRequestSchema, { filter }), auth);
  try {
    const heads = await native.subscribe("newHeads");
    const logs = await native.subscribe("logs", { address: probe.address, topics: [STORED] });
    await waitForLiveSubscriptions(g.ng.gateway, "newHeads", 2);
    await waitForLiveSubscriptions(g.ng.gateway, "logs", 2);

    const block = await probe.store(5n, "0xbeef");
    const [header] = await native.waitFor(heads, 1);
    const [log] = await native.waitFor(logs, 1);
    const [typedHeader] = await typedHeads.waitFor(1);
    const [typedLog] = await typedLogs.waitFor(1);
    const [want] = await chain.logs({ address: probe.address, fromBlock: toHex(block), toBlock: toHex(block) });

    expect(Number(header.number)).toBe(block);
    expect(native.messages).toContainEqual({ jsonrpc: "2.0", method: "eth_subscription", params: { subscription: heads, result: header } });
    expect(log).toEqual(want);
    expect(typedHeader?.header?.number).toBe(BigInt(block));
    expect(`0x${Buffer.from(typedHeader?.header?.hash ?? []).toString("hex")}`).toBe(header.hash);
    expect(typedLog?.log?.removed).toBe(false);
    expect(`0x${Buffer.from(typedLog?.log?.data ?? []).toString("hex")}`).toBe(want?.data);

    expect((await native.request("eth_unsubscribe", [logs])).result).toBe(true);
  } finally {
    typedHeads.cancel();
    typedLogs.cancel();
    await Promise.all([typedHeads.ended, typedLogs.ended, native.close()]);
    client.close();
  }
});
