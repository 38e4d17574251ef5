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
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type Answer, startProgrammableUpstream } from "../support/programmable-upstream.js";

let anvil: AnvilNode;
beforeAll(async () => {
  anvil = await startAnvil();
});
afterAll(async () => {
  await anvil?.stop();
});

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const hex = (b: Uint8Array | undefined) => (b === undefined ? "" : `0x${Buffer.from(b).toString("hex")}`);
const FAULTS = ["429 -32005", "dropped reply"] as const;
type Fault = (typeof FAULTS)[number];

/**
 * Runs `body` against nodegate in front of Anvil, whose first request `matches` picks is refused with `fault`;
 * returns how many were refused.
 */
async function withOneRefusal(fault: Fault, matches: (method: string, params: unknown) => boolean, body: (ng: TestNodegate, client: grpc.Client) => Promise<void>): Promise<number> {
  let refusals = 0;
  const node = await startProgrammableUpstream((r): Answer => {
    if (refusals === 0 && matches(r.method, r.params)) {
      refusals++;
      if (fault === "429 -32005") return { raw: JSON.stringify({ jsonrpc: "2.0", id: r.id, error: { code: -32005, message: "project ID request rate exceeded" } }), status: 429 };
      return { destroy: true };
    }
    return { forward: anvil.url };
  });
  const ng = await startNodegate({ upstreamUrl: node.url, config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, pollIntervalMs: 200 } } });
  const client = grpcJsStreamClient(ng.address);
  try {
    await body(ng, client);
  } finally {
    client.close();
    await ng.close();
    await node.close();
  }
  return refusals;
}

/** Whether `stream` got `count` messages before it ended, or how it ended. */
const outcomeOf = (stream: { waitFor(n: number): Promise<unknown>; ended: Promise<{ code?: number; details?: string } | undefined> }, count: number) =>
  Promise.race([stream.waitFor(count).then(() => "received"), stream.ended.then((e) => `ended ${e?.code} ${e?.details}`)]);

for (const fault of FAULTS) {
  it(`a resume whose history read meets one ${fault} still sends every header from the resume point`, async () => {
    const chain = chainDriver(anvil.url);
    await chain.mine(20);
    const head = await chain.blockNumber();
    const from = head - 10;
    const refused = `0x${(from + 3).toString(16)}`;
    const hashes = await chain.hashes(from, head);
    const refusals = await withOneRefusal(fault, (method, params) => method === "eth_getBlockByNumber" && Array.isArray(params) && params[0] === refused, async (ng, client) => {
      const stream = openGrpcJsStream(client, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema, { fromBlock: BigInt(from) }), { "x-api-key": ng.key });
      try {
        expect(await outcomeOf(stream, 11)).toBe("received");
        expect(stream.received.slice(0, 11).map((m) => [Number(m.header?.number), hex(m.header?.hash)])).toEqual(range(from, head).map((n, i) => [n, hashes[i]]));
      } finally {
        stream.cancel();
      }
    });
    expect(refusals).toBe(1);
  }, 30_000);
}

for (const fault of FAULTS) {
  it(`a logs resume whose history eth_getLogs meets one ${fault} still sends every log`, async () => {
    const chain = chainDriver(anvil.url);
    const probe = await chain.probe();
    const from = (await chain.blockNumber()) + 1;
    for (let i = 1; i <= 5; i++) await probe.store(BigInt(i));
    const want = await chain.logs({ address: probe.address, fromBlock: `0x${from.toString(16)}`, toBlock: "latest" });
    expect(want).toHaveLength(5);
    const refusals = await withOneRefusal(fault, (method) => method === "eth_getLogs", async (ng, client) => {
      const filter = create(LogFilterSchema, { address: [decodeData(probe.address)] });
      const stream = openGrpcJsStream(client, EthService.method.subscribeLogs, create(SubscribeLogsRequestSchema, { filter, fromBlock: BigInt(from) }), { "x-api-key": ng.key });
      try {
        expect(await outcomeOf(stream, 5)).toBe("received");
        expect(stream.received.slice(0, 5).map((m) => [hex(m.log?.blockHash), Number(m.log?.logIndex), m.log?.removed])).toEqual(want.map((l) => [l.blockHash, Number(l.logIndex), false]));
      } finally {
        stream.cancel();
      }
    });
    expect(refusals).toBe(1);
  }, 30_000);
}

it("a resume whose header reads the node refuses for longer than a few tries (a rate limit's spell) waits it out and sends every header", async () => {
  const chain = chainDriver(anvil.url);
  await chain.mine(30);
  const head = await chain.blockNumber();
  const from = head - 25;
  const hashes = await chain.hashes(from, head);
  const SPELL_MS = 4000;
  let spellEnds: number | undefined;
  let refused = 0;
  // Every header read by number is refused for SPELL_MS from the first one: longer than the 5 tries in 2.75 s that
  // used to end the resume (found from outside, h82, under a steady 5 calls a second).
  const node = await startProgrammableUpstream((r): Answer => {
    if (r.method === "eth_getBlockByNumber" && Array.isArray(r.params) && typeof r.params[0] === "string" && r.params[0].startsWith("0x")) {
      spellEnds ??= Date.now() + SPELL_MS;
      if (Date.now() < spellEnds) {
        refused++;
        return { raw: JSON.stringify({ jsonrpc: "2.0", id: r.id, error: { code: -32005, message: "project ID request rate exceeded" } }), status: 429 };
      }
    }
    return { forward: anvil.url };
  });
  const ng = await startNodegate({ upstreamUrl: node.url, config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, pollIntervalMs: 200 } } });
  const client = grpcJsStreamClient(ng.address);
  try {
    const stream = openGrpcJsStream(client, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema, { fromBlock: BigInt(from) }), { "x-api-key": ng.key });
    try {
      expect(await outcomeOf(stream, hashes.length)).toBe("received");
      expect(stream.received.slice(0, hashes.length).map((m) => [Number(m.header?.number), hex(m.header?.hash)])).toEqual(range(from, head).map((n, i) => [n, hashes[i]]));
    } finally {
      stream.cancel();
    }
  } finally {
    client.close();
    await ng.close();
    await node.close();
  }
  expect(refused).toBeGreaterThan(8);
}, 30_000);
