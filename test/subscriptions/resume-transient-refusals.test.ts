/**
 * A typed resume (from_block) whose history read meets one passing refusal of the node (an HTTP 429 -32005, a
 * dropped reply) goes on: the read is tried again, as the live feed waits such refusals out, and the client gets
 * every header and log from its resume point (found from outside, h80: under a flaky node such resumes ended
 * RESOURCE_EXHAUSTED or UNAVAILABLE before their first event). Against a real Anvil behind a programmable upstream.
 */
import { create } from "@bufbuild/protobuf";
import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService, SubscribeLogsRequestSchema, SubscribeNewHeadsRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { LogFilterSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import { decodeData } from "../../src/codec/hex.js";
import { DEFAULT_SUBSCRIPTIONS } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { chainDriver } from "../support/chain-driver.js";
import { grpcJsStreamClient, openGrpcJsStream } from "../support/grpc-streams.js";
import { startNodegate } from "../support/nodegate.js";
import { type Answer, startProgrammableUpstream } from "../support/programmable-upstream.js";

let anvil: AnvilNode;
beforeAll(async () => {
  anvil = await startAnvil();
});
afterAll(async () => {
  await anvil?.stop();
});

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

for (const fault of ["429 -32005", "dropped reply"] as const) {
  it(`a resume whose history read meets one ${fault} still sends every header from the resume point`, async () => {
    const chain = chainDriver(anvil.url);
    await chain.mine(20);
    const head = await chain.blockNumber();
    const from = head - 10;
    const refused = `0x${(from + 3).toString(16)}`;
    let refusals = 0;
    const node = await startProgrammableUpstream((r): Answer => {
      if (r.method === "eth_getBlockByNumber" && Array.isArray(r.params) && r.params[0] === refused && refusals === 0) {
        refusals++;
        if (fault === "429 -32005") return { raw: JSON.stringify({ jsonrpc: "2.0", id: r.id, error: { code: -32005, message: "project ID request rate exceeded" } }), status: 429 };
        return { destroy: true };
      }
      return { forward: anvil.url };
    });
    const ng = await startNodegate({ upstreamUrl: node.url, config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, pollIntervalMs: 200 } } });
    const client: grpc.Client = grpcJsStreamClient(ng.address);
    const stream = openGrpcJsStream(client, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema, { fromBlock: BigInt(from) }), { "x-api-key": ng.key });
    try {
      const outcome = await Promise.race([stream.waitFor(11).then(() => "received"), stream.ended.then((e) => `ended ${e?.code} ${e?.details}`)]);
      expect(refusals).toBe(1);
      expect(outcome).toBe("received");
      expect(stream.received.slice(0, 11).map((m) => Number(m.header?.number))).toEqual(range(from, head));
    } finally {
      stream.cancel();
      client.close();
      await ng.close();
      await node.close();
    }
  }, 30_000);
}

for (const fault of ["429 -32005", "dropped reply"] as const) {
  it(`a logs resume whose history eth_getLogs meets one ${fault} still sends every log`, async () => {
    const chain = chainDriver(anvil.url);
    const probe = await chain.probe();
    const from = (await chain.blockNumber()) + 1;
    for (let i = 1; i <= 5; i++) await probe.store(BigInt(i));
    let refusals = 0;
    const node = await startProgrammableUpstream((r): Answer => {
      if (r.method === "eth_getLogs" && refusals === 0) {
        refusals++;
        if (fault === "429 -32005") return { raw: JSON.stringify({ jsonrpc: "2.0", id: r.id, error: { code: -32005, message: "project ID request rate exceeded" } }), status: 429 };
        return { destroy: true };
      }
      return { forward: anvil.url };
    });
    const ng = await startNodegate({ upstreamUrl: node.url, config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, pollIntervalMs: 200 } } });
    const client: grpc.Client = grpcJsStreamClient(ng.address);
    const filter = create(LogFilterSchema, { address: [decodeData(probe.address)] });
    const stream = openGrpcJsStream(client, EthService.method.subscribeLogs, create(SubscribeLogsRequestSchema, { filter, fromBlock: BigInt(from) }), { "x-api-key": ng.key });
    try {
      const outcome = await Promise.race([stream.waitFor(5).then(() => "received"), stream.ended.then((e) => `ended ${e?.code} ${e?.details}`)]);
      expect(refusals).toBe(1);
      expect(outcome).toBe("received");
    } finally {
      stream.cancel();
      client.close();
      await ng.close();
      await node.close();
    }
  }, 30_000);
}
