/**
 * nodegate's own reads paced while the node refuses calls for its rate limit (OwnReadPace), and which failures count
 * as such a refusal (isRateLimitRefusal). The clock is vitest's fake one: turns are told apart to the millisecond.
 */
import { Code } from "@connectrpc/connect";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CallCancellation } from "../../src/call-signal.js";
import { upstreamRateLimited, upstreamTimeout, upstreamUnavailable } from "../../src/errors/catalogue.js";
import { GatewayError } from "../../src/errors/gateway-error.js";
import { isRateLimitRefusal } from "../../src/errors/rate-limit-refusal.js";
import { MIN_CALLS_PER_SECOND, OwnReadPace, PACED_FOR_MS } from "../../src/upstream/own-read-pace.js";

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

function pace(events = {}): OwnReadPace {
  return new OwnReadPace(events, () => Date.now());
}

/** Asks for `n` turns at once and gives the times (from now) at which each came. */
async function turnTimes(p: OwnReadPace, n: number, withinMs: number): Promise<number[]> {
  const start = Date.now();
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const turn = p.turn();
    if (turn === undefined) times.push(0);
    else void turn.then(() => times.push(Date.now() - start));
  }
  await vi.advanceTimersByTimeAsync(withinMs);
  return times.sort((a, b) => a - b);
}

describe("OwnReadPace", () => {
  it("holds nothing until the node refuses a call for its rate limit", () => {
    const p = pace();
    for (let i = 0; i < 100; i++) expect(p.turn()).toBeUndefined();
    expect(p.perSecond).toBe(Number.POSITIVE_INFINITY);
  });

  it("after a refusal, reads go one at a time at half of what the node served in the last second", async () => {
    const started: number[] = [];
    const p = pace({ started: (perSecond: number) => started.push(perSecond) });
    for (let i = 0; i < 10; i++) p.served();
    await vi.advanceTimersByTimeAsync(1000);
    p.refused();
    expect(started).toEqual([5]);
    const times = await turnTimes(p, 5, 999);
    expect(times).toEqual([0, 200, 400, 600, 800]);
  });

  it("refusals of one second cut the pace once, and cuts stop at half the first pace", async () => {
    const p = pace();
    for (let i = 0; i < 40; i++) p.served();
    await vi.advanceTimersByTimeAsync(1000);
    p.refused(); // 40 served in the span before: 20 a second
    expect(p.perSecond).toBe(20);
    for (let i = 0; i < 10; i++) p.refused(); // sent together at the old pace: one cut at most a second
    expect(p.perSecond).toBe(20);
    await vi.advanceTimersByTimeAsync(1000);
    p.refused();
    expect(p.perSecond).toBe(10);
    for (let i = 0; i < 10; i++) {
      await vi.advanceTimersByTimeAsync(1000);
      p.refused();
    }
    expect(p.perSecond).toBe(10);
  });

  it("a node that served nothing lately (refusing everything) gets the slowest pace", async () => {
    const p = pace();
    for (let i = 0; i < 40; i++) p.served();
    await vi.advanceTimersByTimeAsync(5000);
    p.refused();
    expect(p.perSecond).toBe(MIN_CALLS_PER_SECOND);
    await vi.advanceTimersByTimeAsync(1000);
    p.refused();
    expect(p.perSecond).toBe(MIN_CALLS_PER_SECOND);
  });

  it("the first result of a span is not taken for a second's worth", async () => {
    const p = pace();
    p.served();
    await vi.advanceTimersByTimeAsync(500);
    p.served();
    p.refused(); // 2 in half a second: 4 a second
    expect(p.perSecond).toBe(2);
  });

  it("grows by an eighth each second without a refusal, and ends PACED_FOR_MS after the last", async () => {
    const ended: number[] = [];
    const p = pace({ ended: () => ended.push(Date.now()) });
    for (let i = 0; i < 16; i++) p.served();
    await vi.advanceTimersByTimeAsync(1000);
    p.refused();
    expect(p.perSecond).toBe(8);
    await vi.advanceTimersByTimeAsync(1000);
    await p.turn();
    expect(p.perSecond).toBe(9);
    await vi.advanceTimersByTimeAsync(PACED_FOR_MS - 1001);
    expect(p.perSecond).toBeLessThan(Number.POSITIVE_INFINITY);
    expect(ended).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(p.perSecond).toBe(Number.POSITIVE_INFINITY);
    expect(ended).toHaveLength(1);
    for (let i = 0; i < 50; i++) expect(p.turn()).toBeUndefined();
  });

  it("a read whose caller left leaves the line, and its turn goes to the next", async () => {
    const p = pace();
    p.refused(); // nothing served: one a second
    expect(p.turn()).toBeUndefined();
    const left = new CallCancellation();
    const gone = p.turn(left);
    const kept = p.turn();
    let keptAt = -1;
    const start = Date.now();
    void kept?.then(() => (keptAt = Date.now() - start));
    left.abort();
    await expect(gone).rejects.toMatchObject({ grpcCode: Code.Canceled });
    await vi.advanceTimersByTimeAsync(1500);
    expect(keptAt).toBe(1000);
  });

  it("close lets every waiting read go", async () => {
    const p = pace();
    p.refused();
    p.turn();
    const waiting = [p.turn(), p.turn(), p.turn()];
    p.close();
    await Promise.all(waiting);
  });
});

describe("isRateLimitRefusal", () => {
  const nodeError = (code: number, message: string, httpStatus = 200) =>
    new GatewayError({ code, message, grpcCode: Code.ResourceExhausted, httpStatus, origin: "upstream" });

  it.each([
    ["Infura's 429 with -32005", nodeError(-32005, "project ID request rate exceeded", 429), "eth_getLogs", true],
    ["a 429 in other words", nodeError(-32000, "limit exceeded", 429), "eth_getLogs", true],
    ["a bare HTTP 429", upstreamRateLimited(1), "eth_blockNumber", true],
    ["code 429 (the status as a code)", nodeError(429, "Your app has exceeded its compute units per second capacity"), "eth_call", true],
    ["-32005 limit exceeded on a header read", nodeError(-32005, "limit exceeded"), "eth_getBlockByNumber", true],
    ["rate words with another code", nodeError(-32000, "rate limit exceeded"), "eth_getBalance", true],
    ["-32005 result limit on eth_getLogs", nodeError(-32005, "query returned more than 10000 results. Try with this block range [0x1, 0x2]."), "eth_getLogs", false],
    ["-32005 query timeout on eth_getLogs", nodeError(-32005, "query timeout exceeded"), "eth_getLogs", false],
    ["a revert", nodeError(3, "execution reverted"), "eth_call", false],
    ["an outage", upstreamUnavailable("connection refused"), "eth_call", false],
    ["a 503", upstreamUnavailable("HTTP 503"), "eth_call", false],
    ["a timeout", upstreamTimeout(1000), "eth_call", false],
    ["not a GatewayError", new Error("rate limit"), "eth_call", false],
  ])("%s", (_what, err, method, expected) => {
    expect(isRateLimitRefusal(err, method)).toBe(expected);
  });
});
