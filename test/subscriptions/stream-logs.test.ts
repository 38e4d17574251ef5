/**
 * EthService.StreamLogs against a real Anvil holding more than 10,000
 * matching logs: where one eth_getLogs fails with -32005, the stream returns
 * every log, in chain order, in pages each under the limit, covering the
 * range without a gap. Pages halve on a limit (seen at a recording relay),
 * a single block over the limit ends the stream with the -32005 error, and
 * every page after the first counts against the key's rate limit.
 */
import http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import type * as grpc from "@grpc/grpc-js";
import { pad, toHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EthService, StreamLogsRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { LogFilterSchema, TopicFilterSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import { BlockIdSchema, BlockTag } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { decodeData } from "../../src/codec/hex.js";
import { DEFAULT_SUBSCRIPTIONS } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver, type Probe, type RpcLog } from "../support/chain-driver.js";
import { connectClient } from "../support/grpc-clients.js";
import { jsonRpcErrorOfGrpc } from "../support/grpc-status.js";
import { grpcJsStreamClient, openGrpcJsStream } from "../support/grpc-streams.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const LIMIT = 10_000;
const hex = (b: Uint8Array | undefined) => (b === undefined ? "" : `0x${Buffer.from(b).toString("hex")}`);
const number = (n: number) => create(BlockIdSchema, { kind: { case: "number", value: BigInt(n) } });

let anvil: AnvilNode;
let chain: ChainDriver;
let upstream: ProgrammableUpstream;
let nodegate: TestNodegate;
let grpcClient: grpc.Client;
let probe: Probe;
let from: number;
let to: number;
let expected: RpcLog[];

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  probe = await chain.probe();
  from = await probe.store(1n);
  await probe.storeMany(6000);
  await chain.mine(3);
  await probe.store(2n);
  await probe.storeMany(6000);
  to = await probe.store(3n);
  await chain.mine(2);
  expected = await chain.logs({ address: probe.address, fromBlock: toHex(from), toBlock: toHex(to) });
  upstream = await startProgrammableUpstream(() => ({ forward: anvil.url }));
  nodegate = await startNodegate({
    upstreamUrl: upstream.url,
    config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, logPageBlocks: 1000 } },
  });
  grpcClient = grpcJsStreamClient(nodegate.address);
}, 60_000);
afterAll(async () => {
  grpcClient?.close();
  await nodegate?.close();
  await upstream?.close();
  await anvil?.stop();
});

function streamLogs(filter: Parameters<typeof create<typeof LogFilterSchema>>[1], key = nodegate.key) {
  const request = create(StreamLogsRequestSchema, { filter: create(LogFilterSchema, filter) });
  return openGrpcJsStream(grpcClient, EthService.method.streamLogs, request, { "x-api-key": key });
}

describe("StreamLogs", () => {
  it("a client that leaves while its pages wait unsent (its window shut) ends the call: logged Canceled, the open-streams gauge back down", async () => {
    // Found from outside: Connect waited for a 'drain' the closed stream never emitted, so the call never ended.
    // (Reproduced against a scripted node whose every page held 1,000 logs; with this chain's pages the call ended
    // even before the fix, so this test guards the client pattern, not that exact timing.)
    const openStreams = async () => (await nodegate.gateway.metrics.openStreams.get()).values[0]?.value ?? 0;
    const before = await openStreams();
    const session = http2.connect(nodegate.url, { settings: { initialWindowSize: 0 } });
    session.on("error", () => {});
    const request = toBinary(StreamLogsRequestSchema, create(StreamLogsRequestSchema, { filter: create(LogFilterSchema, { fromBlock: number(from), toBlock: number(to) }) }));
    const frame = Buffer.alloc(5 + request.length);
    frame.writeUInt32BE(request.length, 1);
    frame.set(request, 5);
    for (let i = 0; i < 3; i++) {
      const stream = session.request({ ":method": "POST", ":path": "/nodegate.eth.v1.EthService/StreamLogs", "content-type": "application/grpc", te: "trailers", "x-api-key": nodegate.key });
      stream.on("error", () => {});
      stream.end(frame);
      stream.pause();
    }
    for (let i = 0; i < 200 && (await openStreams()) < before + 3; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await openStreams()).toBe(before + 3);
    // Pages are made and wait to be sent; then the client goes.
    await new Promise((r) => setTimeout(r, 1500));
    session.destroy();
    for (let i = 0; i < 200 && (await openStreams()) !== before; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await openStreams()).toBe(before);
    expect(nodegate.logs.some((l) => l.method === "nodegate.eth.v1.EthService/StreamLogs" && l.status === "Canceled")).toBe(true);
  });

  it("where one eth_getLogs is refused with -32005, returns all of more than 10,000 logs, in order, in pages under the limit", async () => {
    expect(expected.length).toBe(12_003);
    const refused = await post(nodegate.rpcUrl, rpc("eth_getLogs", [{ address: probe.address, fromBlock: toHex(from), toBlock: toHex(to) }]));
    expect(refused.json.error).toMatchObject({ code: -32005, message: "query returned more than 10000 results" });

    const calls = upstream.requests.length;
    const stream = streamLogs({ address: [decodeData(probe.address)], fromBlock: number(from), toBlock: number(to) });
    expect(await stream.ended).toBeUndefined();
    const pages = stream.received;
    const logs = pages.flatMap((p) => p.logs);
    expect(logs.map((l) => [hex(l.blockHash), Number(l.logIndex), hex(l.transactionHash)])).toEqual(
      expected.map((l) => [l.blockHash, Number(l.logIndex), l.transactionHash]),
    );
    expect(logs.map((l) => hex(l.data))).toEqual(expected.map((l) => l.data));
    // Pages are under the limit and cover from..to exactly, one after the other.
    expect(Math.max(...pages.map((p) => p.logs.length))).toBeLessThanOrEqual(LIMIT);
    expect(Number(pages[0]?.fromBlock)).toBe(from);
    expect(Number(pages.at(-1)?.toBlock)).toBe(to);
    pages.slice(1).forEach((p, i) => expect(p.fromBlock).toBe((pages[i]?.toBlock ?? 0n) + 1n));
    for (const p of pages) {
      for (const l of p.logs) {
        expect(l.blockNumber).toBeGreaterThanOrEqual(p.fromBlock);
        expect(l.blockNumber).toBeLessThanOrEqual(p.toBlock);
      }
    }

    // The pages nodegate asked for: the whole range first (it is under the page size), refused; then halves of it.
    const ranges = upstream.requests
      .slice(calls)
      .filter((r) => r.method === "eth_getLogs")
      .map((r) => {
        const f = (r.params as { fromBlock: string; toBlock: string }[])[0] as { fromBlock: string; toBlock: string };
        return [Number(f.fromBlock), Number(f.toBlock)];
      });
    expect(ranges[0]).toEqual([from, to]);
    const size = to - from + 1;
    expect(ranges[1]).toEqual([from, from + Math.floor(size / 2) - 1]);
    expect(ranges.length).toBeGreaterThan(2);
  });

  it("connect-es reads the same logs", async () => {
    const client = connectClient(nodegate.url, EthService, nodegate.key, "connect");
    let count = 0;
    let last = -1n;
    let ordered = true;
    for await (const page of client.streamLogs({ filter: { address: [decodeData(probe.address)], fromBlock: number(from), toBlock: number(to) } })) {
      for (const l of page.logs) {
        const position = (l.blockNumber ?? 0n) * 1_000_000n + (l.logIndex ?? 0n);
        ordered &&= position > last;
        last = position;
        count++;
      }
    }
    expect(count).toBe(expected.length);
    expect(ordered).toBe(true);
  });

  it("answers a block hash with that block's logs as one range", async () => {
    const big = expected.find((l) => Number(l.blockNumber) > from) as RpcLog;
    const stream = streamLogs({ address: [decodeData(probe.address)], blockHash: decodeData(big.blockHash) });
    expect(await stream.ended).toBeUndefined();
    // One block's logs are never split between messages.
    expect(stream.received.map((p) => [Number(p.fromBlock), Number(p.toBlock), p.logs.length])).toEqual([
      [Number(big.blockNumber), Number(big.blockNumber), 6000],
    ]);
  });

  it("a block hash the node does not know is NOT_FOUND carrying the node's error", async () => {
    // Found from outside: Anvil's -32000 "unknown block" for eth_getLogs came out INTERNAL.
    const stream = streamLogs({ blockHash: new Uint8Array(32).fill(0x11) });
    const err = await stream.ended;
    expect(err?.code).toBe(5);
    expect(jsonRpcErrorOfGrpc(err as grpc.ServiceError)).toMatchObject({ code: -32000n, message: "unknown block" });
  });

  it("reads tags once: earliest..latest covers the chain", async () => {
    const head = await chain.blockNumber();
    const stream = streamLogs({
      address: [decodeData(probe.address)],
      // Only the logs of store(2, ...) and storeMany's value 2: a light scan of the whole chain.
      topics: [create(TopicFilterSchema), create(TopicFilterSchema), create(TopicFilterSchema, { anyOf: [decodeData(pad(toHex(2n)))] })],
      fromBlock: create(BlockIdSchema, { kind: { case: "tag", value: BlockTag.EARLIEST } }),
      toBlock: create(BlockIdSchema, { kind: { case: "tag", value: BlockTag.LATEST } }),
    });
    expect(await stream.ended).toBeUndefined();
    expect(Number(stream.received[0]?.fromBlock)).toBe(0);
    expect(Number(stream.received.at(-1)?.toBlock)).toBe(head);
    expect(stream.received.flatMap((p) => p.logs.map((l) => hex(l.topics[2])))).toEqual([pad(toHex(2n)), pad(toHex(2n)), pad(toHex(2n))]);
  });

  it("a to_block past the head ends the range at the head, so resuming after the last page misses nothing", async () => {
    // Found from outside: the last page claimed blocks not mined yet, and a client resuming after it lost their logs.
    const head = await chain.blockNumber();
    const ahead = streamLogs({ address: [decodeData(probe.address)], fromBlock: number(head), toBlock: number(head + 20) });
    expect(await ahead.ended).toBeUndefined();
    expect(Number(ahead.received.at(-1)?.toBlock)).toBe(head);
    const next = await probe.store(77n);
    const resumed = streamLogs({ address: [decodeData(probe.address)], fromBlock: number(head + 1), toBlock: number(head + 20) });
    expect(await resumed.ended).toBeUndefined();
    expect(resumed.received.flatMap((p) => p.logs.map((l) => Number(l.blockNumber)))).toEqual([next]);
    // A range entirely past the head: no page, and no error.
    const future = streamLogs({ address: [decodeData(probe.address)], fromBlock: number(next + 5), toBlock: number(next + 9) });
    expect(await future.ended).toBeUndefined();
    expect(future.received).toEqual([]);
    // Resuming "from the last to_block + 1 to latest" before a new block: no page, and no error (found from outside).
    const latest = create(BlockIdSchema, { kind: { case: "tag", value: BlockTag.LATEST } });
    const upToLatest = streamLogs({ address: [decodeData(probe.address)], fromBlock: number(next + 1), toBlock: latest });
    expect(await upToLatest.ended).toBeUndefined();
    expect(upToLatest.received).toEqual([]);
    // The largest uint64 to_block is past the head like any other.
    const widest = streamLogs({ address: [decodeData(probe.address)], fromBlock: number(next), toBlock: create(BlockIdSchema, { kind: { case: "number", value: 2n ** 64n - 1n } }) });
    expect(await widest.ended).toBeUndefined();
    expect(widest.received.flatMap((p) => p.logs.map((l) => Number(l.blockNumber)))).toEqual([next]);
  });

  it("a single block over the limit ends the stream with RESOURCE_EXHAUSTED and the -32005 error", async () => {
    const block = await probe.storeMany(LIMIT + 1);
    const stream = streamLogs({ address: [decodeData(probe.address)], fromBlock: number(block), toBlock: number(block) });
    const err = await stream.ended;
    expect(err?.code).toBe(8);
    expect(jsonRpcErrorOfGrpc(err as grpc.ServiceError)).toMatchObject({ code: -32005n, message: "query returned more than 10000 results" });
  }, 60_000);

  it("a client that aborts mid-stream is logged as Canceled, not as an internal error", async () => {
    // Found from outside: the interrupted page fetch's abort error was reported as INTERNAL, at warn level.
    let pagesAsked = 0;
    upstream.handler = (r) => (r.method === "eth_getLogs" && pagesAsked++ > 0 ? { delayMs: 500, then: { forward: anvil.url } } : { forward: anvil.url });
    try {
      const abort = new AbortController();
      const filter = create(LogFilterSchema, { address: [decodeData(probe.address)], fromBlock: number(from), toBlock: number(to) });
      const requestId = "abort-stream-logs-1";
      const pages = connectClient(nodegate.url, EthService, nodegate.key).streamLogs({ filter }, { signal: abort.signal, headers: { "x-request-id": requestId } });
      await expect(
        (async () => {
          for await (const _ of pages) abort.abort();
        })(),
      ).rejects.toThrow();
      await expect.poll(() => nodegate.logs.find((l) => l.requestId === requestId)?.status, { timeout: 5000 }).toBe("Canceled");
    } finally {
      upstream.handler = () => ({ forward: anvil.url });
    }
  });

  it("from_block after to_block is INVALID_ARGUMENT", async () => {
    const stream = streamLogs({ fromBlock: number(to), toBlock: number(from) });
    const err = await stream.ended;
    expect(err?.code).toBe(3);
    expect(decodeURIComponent(err?.details ?? "")).toMatch(`from_block ${to} is after to_block ${from}`);
    // Like every status nodegate raises, it carries the JSON-RPC error.
    expect(jsonRpcErrorOfGrpc(err as grpc.ServiceError)).toMatchObject({ code: -32602n, message: `filter: from_block ${to} is after to_block ${from}` });
  });

  it("a block selector present but empty is INVALID_ARGUMENT, as GetLogs has it, not latest", async () => {
    // Found from outside: Go's &BlockId{} was read as latest here and refused by GetLogs.
    for (const filter of [{ fromBlock: create(BlockIdSchema) }, { fromBlock: number(from), toBlock: create(BlockIdSchema) }]) {
      const stream = streamLogs(filter);
      const err = await stream.ended;
      expect(err?.code).toBe(3);
      expect(decodeURIComponent(err?.details ?? "")).toMatch(/filter\.(from|to)_block: block is unset: set number, tag or hash/);
    }
  });

  it("counts every page after the first against the key's rate limit", async () => {
    // One block per page, and a 3-per-day key: admission, a free first page, two more pages, then the limit.
    // (A day, not a second: under load the pages could straddle a second, and the count would start again.)
    const small = await startNodegate({
      upstreamUrl: anvil.url,
      keys: [{ key: "slow-key-0123456789", plan: "core", rateLimit: { requestsPerSecond: 0, requestsPerDay: 3 } }],
      config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, logPageBlocks: 1 } },
    });
    const client = grpcJsStreamClient(small.address);
    try {
      // The empty blocks mined between the two big ones make quick pages.
      const start = from + 2;
      const request = create(StreamLogsRequestSchema, { filter: create(LogFilterSchema, { fromBlock: number(start), toBlock: number(to) }) });
      const stream = openGrpcJsStream(client, EthService.method.streamLogs, request, { "x-api-key": "slow-key-0123456789" });
      const err = await stream.ended;
      expect(err?.code).toBe(8);
      expect(jsonRpcErrorOfGrpc(err as grpc.ServiceError)).toMatchObject({ code: -32005n, message: "daily request count exceeded, request rate limited" });
      expect(stream.received.map((p) => [Number(p.fromBlock), Number(p.toBlock), p.logs.length])).toEqual([
        [start, start, 0],
        [start + 1, start + 1, 0],
        [start + 2, start + 2, 0],
      ]);
    } finally {
      client.close();
      await small.close();
    }
  });
});
