/**
 * A typed subscription's response head leaves once the subscription is live, before any event: a client that waits
 * for it, then sends the transaction it watches for, gets the event. Found from outside (h72, grpcio): the head came
 * with the first event, so a caller could not tell when its stream ran, and 8 of 10 streams missed a block mined
 * right after the call. A real Anvil that mines only when told; real clients: @grpc/grpc-js, and fetch speaking the
 * Connect protocol over HTTP/1.1.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService, SubscribeNewHeadsRequestSchema, SubscribeNewHeadsResponseSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { chainDriver, type ChainDriver } from "../support/chain-driver.js";
import { grpcJsStreamClient, openGrpcJsStream } from "../support/grpc-streams.js";
import { waitForNoLiveSubscriptions } from "../support/live-subscriptions.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";

let anvil: AnvilNode;
let chain: ChainDriver;
let nodegate: TestNodegate;
let grpcClient: grpc.Client;

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  nodegate = await startNodegate({ upstreamUrl: anvil.wsUrl });
  grpcClient = grpcJsStreamClient(nodegate.address);
});
afterAll(async () => {
  grpcClient?.close();
  await nodegate?.close();
  await anvil?.stop();
});

it("grpc-js: the head arrives with no block mined, and a block mined once it has is the stream's first event (5 streams in turn)", async () => {
  for (let round = 0; round < 5; round++) {
    const stream = openGrpcJsStream(grpcClient, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), { "x-api-key": nodegate.key });
    try {
      const head = await new Promise<grpc.Metadata>((resolve, reject) => {
        stream.call.once("metadata", resolve);
        void stream.ended.then((err) => reject(err ?? new Error("the stream ended")));
      });
      expect(head.get("x-request-id")).toHaveLength(1);
      expect(stream.received).toEqual([]);
      const start = await chain.blockNumber();
      await chain.mine(1);
      const first = await stream.next();
      expect(Number(first.header?.number)).toBe(start + 1);
    } finally {
      stream.cancel();
      await stream.ended;
    }
    await waitForNoLiveSubscriptions(nodegate.gateway);
  }
});

it("Connect over HTTP/1.1: the response (its status and headers) comes before any event, and the next block is its first message", async () => {
  const controller = new AbortController();
  try {
    const res = await fetch(`${nodegate.url}/${EthService.typeName}/${EthService.method.subscribeNewHeads.name}`, {
      method: "POST",
      headers: { "content-type": "application/connect+proto", "x-api-key": nodegate.key },
      body: envelope(toBinary(SubscribeNewHeadsRequestSchema, create(SubscribeNewHeadsRequestSchema))),
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/connect+proto");
    const start = await chain.blockNumber();
    await chain.mine(1);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let bytes = Buffer.alloc(0);
    while (bytes.length < 5 || bytes.length < 5 + bytes.readUInt32BE(1)) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the stream ended");
      bytes = Buffer.concat([bytes, value]);
    }
    expect(bytes[0]).toBe(0); // a message, not the end of the stream
    const first = fromBinary(SubscribeNewHeadsResponseSchema, bytes.subarray(5, 5 + bytes.readUInt32BE(1)));
    expect(Number(first.header?.number)).toBe(start + 1);
  } finally {
    controller.abort();
  }
  await waitForNoLiveSubscriptions(nodegate.gateway);
});

function envelope(message: Uint8Array): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}
