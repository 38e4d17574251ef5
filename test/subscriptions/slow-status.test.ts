/**
 * A typed stream ended for its pace gets a real gRPC status when its
 * transport can carry one. A block whose matching logs pass the queue's byte
 * bound (maxWsUnreadBytes, small here) ends even a client that reads: its
 * stream is not stuck behind unread bytes, so it must end with
 * RESOURCE_EXHAUSTED and the -32054 detail, not a bare HTTP/2 reset (which
 * grpc-js reports as RESOURCE_EXHAUSTED "Received RST_STREAM" with nothing
 * to say why). A client that stops reading is still reset: there, a status
 * would wait behind bytes nobody reads.
 */
import { create } from "@bufbuild/protobuf";
import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService, SubscribeLogsRequestSchema, SubscribeNewHeadsRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { LogFilterSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import { decodeData } from "../../src/codec/hex.js";
import { DEFAULT_LIMITS, DEFAULT_SUBSCRIPTIONS } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver, type Probe } from "../support/chain-driver.js";
import { grpcJsStreamClient, openGrpcJsStream } from "../support/grpc-streams.js";
import { waitForLiveSubscriptions, waitForNoLiveSubscriptions } from "../support/live-subscriptions.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { jsonRpcErrorOfGrpc } from "../support/grpc-status.js";

/** Far below one burst's logs (each log's text is some 500 bytes), far above one header. */
const MAX_UNREAD_BYTES = 16 * 1024;
const BURST = 200;

let anvil: AnvilNode;
let chain: ChainDriver;
let probe: Probe;
let nodegate: TestNodegate;
let grpcClient: grpc.Client;

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  probe = await chain.probe();
  nodegate = await startNodegate({
    upstreamUrl: anvil.wsUrl,
    config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, clientBufferSize: 4096 }, limits: { ...DEFAULT_LIMITS, maxWsUnreadBytes: MAX_UNREAD_BYTES } },
  });
  grpcClient = grpcJsStreamClient(nodegate.address);
});
afterAll(async () => {
  grpcClient?.close();
  await nodegate?.close();
  await anvil?.stop();
});

it("a reading client ended by a burst over the byte bound gets RESOURCE_EXHAUSTED with the -32054 detail, and others go on", async () => {
  const auth = { "x-api-key": nodegate.key };
  const filter = create(LogFilterSchema, { address: [decodeData(probe.address)] });
  const logs = openGrpcJsStream(grpcClient, EthService.method.subscribeLogs, create(SubscribeLogsRequestSchema, { filter }), auth);
  const heads = openGrpcJsStream(grpcClient, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), auth);
  try {
    await waitForLiveSubscriptions(nodegate.gateway, "logs", 1);
    await waitForLiveSubscriptions(nodegate.gateway, "newHeads", 1);
    await probe.storeMany(BURST);
    const err = await logs.ended;
    expect(err?.code).toBe(8);
    expect(err?.details).toMatch(/too slow/);
    expect(jsonRpcErrorOfGrpc(err as grpc.ServiceError).code).toBe(-32054n);
    expect(logs.received.length).toBeLessThan(BURST);
    expect(nodegate.logs.some((l) => l.msg === "ending a slow stream subscriber")).toBe(true);

    // The heads stream, whose events are small, goes on.
    const before = heads.received.length;
    await chain.mine(3);
    await heads.waitFor(before + 3);
  } finally {
    logs.cancel();
    heads.cancel();
    await Promise.all([logs.ended, heads.ended]);
  }
  await waitForNoLiveSubscriptions(nodegate.gateway);
});
