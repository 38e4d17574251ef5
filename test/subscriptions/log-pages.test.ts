/**
 * The paging rules on their own (pure functions, no node): pages cover the
 * range in order without a gap, a page refused for a limit is halved and
 * asked again, sparse pages let the size grow back, a single block over
 * the limit is an error; and a big page becomes messages split only
 * between blocks.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { StreamLogsResponseSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { LogSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import { GatewayError } from "../../src/errors/gateway-error.js";
import { pageMessages } from "../../src/grpc/stream-logs.js";
import { tooManyResults } from "../../src/methods/policies/get-logs-limits.js";
import { isLogLimitError, isLogResultLimitError, logPages } from "../../src/subscriptions/log-pages.js";

/** A chain where block n holds counts[n] logs; a fetch over more than `limit` logs is refused as nodegate refuses it. */
function fakeChain(counts: number[], limit: number) {
  const calls: [number, number][] = [];
  const fetch = async (from: number, to: number): Promise<number[]> => {
    calls.push([from, to]);
    const logs: number[] = [];
    for (let n = from; n <= to; n++) for (let i = 0; i < (counts[n] ?? 0); i++) logs.push(n);
    if (logs.length > limit) throw tooManyResults(limit, undefined, undefined);
    return logs;
  };
  return { calls, fetch };
}

async function collect(pages: AsyncGenerator<{ from: number; to: number; logs: number[] }>) {
  const out = [];
  for await (const p of pages) out.push(p);
  return out;
}

describe("logPages", () => {
  it("covers the range in order, halving a page that hits the limit and growing back after sparse ones", async () => {
    const counts = Array.from({ length: 100 }, (_, n) => (n === 40 ? 9 : n === 41 ? 4 : 0));
    const chain = fakeChain(counts, 10);
    const pages = await collect(logPages(0, 99, chain.fetch, { pageBlocks: 32, maxResults: 10 }));
    expect(pages[0]?.from).toBe(0);
    expect(pages.at(-1)?.to).toBe(99);
    pages.slice(1).forEach((p, i) => expect(p.from).toBe((pages[i]?.to ?? 0) + 1));
    expect(pages.flatMap((p) => p.logs)).toEqual([...Array(9).fill(40), ...Array(4).fill(41)]);
    expect(pages.every((p) => p.logs.length <= 10)).toBe(true);
    // [32, 63] held 13 logs: refused, then asked as [32, 47], refused, then [32, 39] and [40, 40] ...
    expect(chain.calls).toContainEqual([32, 63]);
    expect(chain.calls).toContainEqual([32, 47]);
    // ... and once past the dense blocks the pages widen again, up to the first size.
    const last = chain.calls.at(-1) as [number, number];
    expect(last[1] - last[0] + 1).toBeGreaterThan(8);
  });

  it("against a range limit, stays at the widest page read rather than grow back into the limit", async () => {
    // Found from outside: a node refusing ranges over 10 blocks got pages of 16 (refused), 8, 16 (refused), 8, ...
    const calls: [number, number][] = [];
    const rangeLimited = async (from: number, to: number): Promise<number[]> => {
      calls.push([from, to]);
      if (to - from + 1 > 10) throw new GatewayError({ code: -32602, message: `range ${to - from + 1} exceeds limit of 10`, grpcCode: 3, origin: "upstream" });
      return [];
    };
    const pages = await collect(logPages(0, 299, rangeLimited, { pageBlocks: 64, maxResults: 10_000 }));
    expect(pages.at(-1)?.to).toBe(299);
    pages.slice(1).forEach((p, i) => expect(p.from).toBe((pages[i]?.to ?? 0) + 1));
    const refused = calls.filter(([a, b]) => b - a + 1 > 10);
    // 64, 32 and 16 refused before 8 is read; one more try at 16 finds the limit; then 8 to the end.
    expect(refused.length).toBe(4);
    expect(calls.length).toBe(4 + Math.ceil(300 / 8));
  });

  it("after a timeout or a result limit, pages grow back once past the dense blocks", async () => {
    const calls: [number, number][] = [];
    let dense = true;
    const timingOut = async (from: number, to: number): Promise<number[]> => {
      calls.push([from, to]);
      if (dense && to - from + 1 > 10) {
        dense = from < 20;
        throw new GatewayError({ code: -32005, message: "query timeout exceeded", grpcCode: 8, origin: "upstream" });
      }
      return [];
    };
    await collect(logPages(0, 299, timingOut, { pageBlocks: 64, maxResults: 10_000 }));
    const last = calls.at(-1) as [number, number];
    expect(last[1] - last[0] + 1).toBeGreaterThan(10);
  });

  it("a single block over the limit is the limit error", async () => {
    const chain = fakeChain([0, 0, 11, 0], 10);
    const err = await collect(logPages(0, 3, chain.fetch, { pageBlocks: 4, maxResults: 10 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe(-32005);
    expect(chain.calls.at(-1)).toEqual([2, 2]);
  });

  it("passes on errors that a narrower range would not avoid", async () => {
    let calls = 0;
    const failing = async () => {
      calls++;
      throw new GatewayError({ code: -32000, message: "header not found", grpcCode: 5 });
    };
    const err = await collect(logPages(0, 100, failing, { pageBlocks: 50, maxResults: 10 })).catch((e: unknown) => e);
    expect((err as GatewayError).message).toBe("header not found");
    expect(calls).toBe(1);
  });
});

/** A node's error as the upstream client hands it on. */
const nodeError = (code: number, message: string) => new GatewayError({ code, message, grpcCode: 8, origin: "upstream" });

describe("isLogLimitError", () => {
  it.each([
    [-32005, "query returned more than 10000 results"],
    [-32005, "query returned more than 10000 results. Try with this block range [0x1, 0x2]."],
    [-32005, "query timeout exceeded"],
    [-32602, "range 20000 exceeds limit of 10000"],
    [-32000, "block range is too wide"],
    [-32602, "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range"],
    [-32005, "limit exceeded: nodegate holds 1073741824 bytes of node replies"],
    [-32602, "eth_getLogs is limited to a 10,000 range"],
    // Found from outside: not read as range limits, so a feed asked the same too-wide page at every poll, for good.
    [-32602, "eth_getLogs and eth_newFilter are limited to a 10 blocks range"],
    [-32000, "ranges over 10000 blocks are not supported on freetier"],
    [-32000, "can't query more than 1000 blocks"],
    [-32000, "exceeded maximum range of 2000"],
  ])("a smaller page avoids %i %j", (code, message) => expect(isLogLimitError(nodeError(code, message))).toBe(true));

  // Found from outside: Infura's -32005 "limit exceeded" and other providers' per-second wordings, sent with HTTP 429,
  // halved a rate-limited feed's pages down to one block: seven calls where one would do.
  const withStatus = (message: string, httpStatus: number) => new GatewayError({ code: -32005, message, grpcCode: 8, origin: "upstream", httpStatus });
  it.each(["limit exceeded", "query timeout exceeded", "Requests per second limit exceeded", "RPS limit exceeded"])("an HTTP 429 is a rate limit whatever its wording: %j", (message) => {
    expect(isLogLimitError(withStatus(message, 429))).toBe(false);
  });

  it("with HTTP 200, a limit's words still read as one a smaller page avoids, and per-second ones as a rate limit", () => {
    expect(isLogLimitError(withStatus("limit exceeded", 200))).toBe(true);
    expect(isLogLimitError(withStatus("query timeout exceeded", 200))).toBe(true);
    expect(isLogLimitError(withStatus("Requests per second limit exceeded", 200))).toBe(false);
    expect(isLogLimitError(withStatus("RPS limit exceeded", 200))).toBe(false);
  });

  it.each([
    [-32005, "query has 6000 addresses and topics, more than the limit of 5000"],
    [-32000, "header not found"],
    [-32602, "invalid argument 0: hex string without 0x prefix"],
    // Found from outside: read as a range problem, so a rate-limited feed asked more often, in halves.
    [-32005, "rate limit exceeded"],
    [-32005, "daily request limit exceeded"],
    [-32005, "rate-limit exceeded"],
    [-32005, "Ratelimit exceeded"],
    [-32005, "CU limit exceeded"],
    [-32005, "capacity limit exceeded"],
    [-32005, "throughput limit exceeded"],
    // nodegate's own wait for a connection (found from outside: it capped a stream's pages for good).
    [-32005, "limit exceeded: no connection to the node came free within 10000 ms (64 calls were waiting); try again shortly"],
  ])("a smaller page does not avoid %i %j", (code, message) => expect(isLogLimitError(nodeError(code, message))).toBe(false));
});

describe("isLogResultLimitError", () => {
  // A single block refused so is refused again: a logs feed ends its subscribers rather than retry it for good. Found
  // from outside: reth's wording (drpc's and BlastAPI's too) was not among them, and the feed stalled without a word.
  it.each([
    [-32005, "query returned more than 10000 results"],
    [-32602, "query exceeds max results 20000, retry with the range 5-5"],
    [-32602, "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range"],
    [-32020, "backend response too large"],
    [-32000, "response is too big"],
    [-32000, "response exceed size limit"],
  ])("the answer is too large: %i %j", (code, message) => {
    expect(isLogResultLimitError(nodeError(code, message))).toBe(true);
    expect(isLogLimitError(nodeError(code, message))).toBe(true);
  });

  it.each([
    [-32005, "query timeout exceeded"],
    [-32005, "daily request count exceeded, request rate limited"],
    [-32000, "block range is too wide"],
    [-32603, "request timed out"],
  ])("not about the answer's size (retried): %i %j", (code, message) => expect(isLogResultLimitError(nodeError(code, message))).toBe(false));
});

describe("pageMessages", () => {
  const log = (block: number) => create(LogSchema, { blockNumber: BigInt(block) });

  it("sends a small page as one message covering the page", () => {
    const messages = [...pageMessages({ from: 10, to: 20, logs: [log(12), log(15)] })];
    expect(messages.map((m) => [Number(m.fromBlock), Number(m.toBlock), m.logs.length])).toEqual([[10, 20, 2]]);
  });

  it("sends an empty page as one empty message, so the client knows how far the scan got", () => {
    const messages = [...pageMessages({ from: 10, to: 20, logs: [] })];
    expect(messages.map((m) => [Number(m.fromBlock), Number(m.toBlock), m.logs.length])).toEqual([[10, 20, 0]]);
  });

  it("splits a big page between blocks, never inside one, with contiguous ranges", () => {
    const logs = [...Array(600).fill(11), ...Array(600).fill(12), ...Array(1500).fill(13), ...Array(10).fill(19)].map(log);
    const messages = [...pageMessages({ from: 10, to: 25, logs })];
    expect(messages.map((m) => [Number(m.fromBlock), Number(m.toBlock), m.logs.length])).toEqual([
      [10, 11, 600],
      [12, 12, 600],
      [13, 13, 1500],
      [14, 25, 10],
    ]);
  });

  // Found from outside (a Go client, whose default receive limit is 4 MiB): 120 logs of 100 KiB each made one 12 MiB message.
  it("splits by size too: a few logs with large data stay under 4 MiB a message, a single larger block goes alone", () => {
    const big = (block: number, bytes: number) => create(LogSchema, { blockNumber: BigInt(block), data: new Uint8Array(bytes), topics: [new Uint8Array(32)] });
    const logs = [...Array.from({ length: 120 }, (_, k) => big(25 + Math.floor(k / 10), 100 * 1024)), big(40, 6 * 1024 * 1024)];
    const messages = [...pageMessages({ from: 24, to: 41, logs })];
    for (const m of messages.slice(0, -1)) expect(toBinary(StreamLogsResponseSchema, m).length).toBeLessThan(4 * 1024 * 1024);
    expect(messages.flatMap((m) => m.logs)).toHaveLength(121);
    expect(messages.at(-1)?.logs.map((l) => Number(l.blockNumber))).toEqual([40]);
    // Contiguous ranges, each block whole in one message.
    for (let k = 1; k < messages.length; k++) expect(messages[k]?.fromBlock).toBe((messages[k - 1]?.toBlock ?? 0n) + 1n);
    expect([messages[0]?.fromBlock, messages.at(-1)?.toBlock]).toEqual([24n, 41n]);
    for (const m of messages) for (const l of m.logs) expect(l.blockNumber! >= m.fromBlock && l.blockNumber! <= m.toBlock).toBe(true);
  });
});
