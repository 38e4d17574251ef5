/**
 * The same subscriptions when the network's upstream speaks only HTTP:
 * nodegate polls (every 50 ms here) and delivers what a WebSocket node would
 * have pushed, gap-free, with reorganizations and failed polls handled.
 * The upstream is a real Anvil behind a recording HTTP relay, so the test
 * can count what the polls cost and make some of them fail.
 */
import { create } from "@bufbuild/protobuf";
import type * as grpc from "@grpc/grpc-js";
import { toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EthService, SubscribeNewHeadsRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { DEFAULT_SUBSCRIPTIONS } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver, type Probe } from "../support/chain-driver.js";
import { grpcJsStreamClient, openGrpcJsStream } from "../support/grpc-streams.js";
import { waitForLiveSubscriptions, waitForNoLiveSubscriptions } from "../support/live-subscriptions.js";
import { type NativeSubscriber, openNativeSubscriber } from "../support/native-subscriber.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { ANVIL_KEY_0 } from "../support/probe.js";
import { type Handler, type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const SENDER = privateKeyToAccount(ANVIL_KEY_0).address;
const hex = (b: Uint8Array | undefined) => (b === undefined ? "" : `0x${Buffer.from(b).toString("hex")}`);

let anvil: AnvilNode;
let chain: ChainDriver;
let upstream: ProgrammableUpstream;
let nodegate: TestNodegate;
let grpcClient: grpc.Client;
let probe: Probe;
const subscribers: NativeSubscriber[] = [];
const forwardAll: Handler = () => ({ forward: anvil.url });

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  probe = await chain.probe();
  upstream = await startProgrammableUpstream(forwardAll);
  nodegate = await startNodegate({
    upstreamUrl: upstream.url,
    config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, pollIntervalMs: 50 } },
  });
  grpcClient = grpcJsStreamClient(nodegate.address);
});
afterEach(async () => {
  upstream.handler = forwardAll;
  for (const s of subscribers.splice(0)) await s.close();
  await waitForNoLiveSubscriptions(nodegate.gateway);
});
afterAll(async () => {
  grpcClient?.close();
  await nodegate?.close();
  await upstream?.close();
  await anvil?.stop();
});

async function subscriber(): Promise<NativeSubscriber> {
  const s = await openNativeSubscriber(nodegate.wsUrl);
  subscribers.push(s);
  return s;
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("newHeads by polling", () => {
  it("a gap the node serves only part of at each poll (a rate limit) closes over several polls: the headers it served are kept", async () => {
    // Found from outside (h77): each poll asked for the gap's headers in parallel and threw away the ones served when
    // any was refused, so a node serving a few calls a second gave no head (and no log) while the limit lasted.
    const native = await subscriber();
    const id = await native.subscribe("newHeads");
    await waitForLiveSubscriptions(nodegate.gateway, "newHeads", 1);
    const start = await chain.blockNumber();
    // At most 4 calls answered in any 200 ms; the rest refused in a provider's rate-limit words.
    let windowStart = 0;
    let used = 0;
    let refused = 0;
    upstream.handler = () => {
      const now = performance.now();
      if (now - windowStart >= 200) {
        windowStart = now;
        used = 0;
      }
      if (++used <= 4) return { forward: anvil.url };
      refused++;
      return { error: { code: -32005, message: "limit exceeded" } };
    };
    await chain.mine(12);
    const heads = await native.waitFor(id, 12, 20_000);
    expect(heads.map((h: { number: string }) => Number(h.number))).toEqual(range(start + 1, start + 12));
    expect(refused).toBeGreaterThan(0);
  });

  it("while the node refuses one header of a gap, the part below it that links goes out at once, with its logs", async () => {
    // Found from outside (h79): nothing went out until the whole gap linked, so a node serving 2 calls a second gave
    // no head and no log for 31 s.
    const native = await subscriber();
    const heads = await native.subscribe("newHeads");
    const logs = await native.subscribe("logs", { address: probe.address });
    await waitForLiveSubscriptions(nodegate.gateway, "logs", 1);
    const start = await chain.blockNumber();
    let refusing = true;
    let refused = 0;
    const held = toHex(start + 8);
    upstream.handler = (r) => {
      const [param] = (r.params ?? []) as unknown[];
      if (refusing && r.method === "eth_getBlockByNumber" && param === held) {
        refused++;
        return { error: { code: -32005, message: "rate limit exceeded" } };
      }
      return { forward: anvil.url };
    };
    // Ten blocks between two polls, a log in the fourth; block start + 8 is refused.
    await chain.mine(3);
    await probe.store(3n);
    await chain.mine(6);
    const hashes = await chain.hashes(start + 1, start + 10);
    const below = await native.waitFor(heads, 7, 10_000);
    expect(below.map((h: { number: string; hash: string }) => [Number(h.number), h.hash])).toEqual(range(start + 1, start + 7).map((n, i) => [n, hashes[i]]));
    const [log] = await native.waitFor(logs, 1, 10_000);
    expect(Number(log.blockNumber)).toBe(start + 4);
    expect(refused).toBeGreaterThan(0);
    expect(native.results(heads)).toHaveLength(7);
    refusing = false;
    const all = await native.waitFor(heads, 10, 10_000);
    expect(all.map((h: { number: string; hash: string }) => [Number(h.number), h.hash])).toEqual(range(start + 1, start + 10).map((n, i) => [n, hashes[i]]));
  });

  it("once the node serves only some of a gap's headers, each poll asks only the lowest few, leaving its allowance to the logs", async () => {
    // Found from outside (h81): every poll asked the whole gap in parallel, took a rate-limited node's allowance, and
    // the logs of the blocks that linked waited for the whole gap (25 s at 2 calls a second).
    const native = await subscriber();
    const id = await native.subscribe("newHeads");
    await waitForLiveSubscriptions(nodegate.gateway, "newHeads", 1);
    const start = await chain.blockNumber();
    // Every other numbered header read is refused, in a provider's rate-limit words.
    let numbered = 0;
    const log: string[] = [];
    upstream.handler = (r) => {
      const [param] = (r.params ?? []) as unknown[];
      if (r.method === "eth_getBlockByNumber" && param === "latest") log.push("poll");
      else if (r.method === "eth_getBlockByNumber" && typeof param === "string" && param.startsWith("0x")) {
        if (++numbered % 2 === 0) {
          log.push("refused");
          return { error: { code: -32005, message: "rate limit exceeded" } };
        }
        log.push("served");
      }
      return { forward: anvil.url };
    };
    await chain.mine(24);
    const heads = await native.waitFor(id, 24, 20_000);
    expect(heads.map((h: { number: string }) => Number(h.number))).toEqual(range(start + 1, start + 24));
    // Header reads per poll, from the poll after the first refusal on.
    const perPoll: number[] = [];
    for (const entry of log.slice(log.indexOf("refused") + 1)) {
      if (entry === "poll") perPoll.push(0);
      else if (perPoll.length > 0) perPoll[perPoll.length - 1] = (perPoll.at(-1) as number) + 1;
    }
    expect(perPoll.length).toBeGreaterThan(0);
    expect(Math.max(...perPoll), JSON.stringify(perPoll)).toBeLessThanOrEqual(2);
  });

  it("both doors get every block, once and in order, even when several arrive between two polls", async () => {
    const native = await subscriber();
    const id = await native.subscribe("newHeads");
    const typed = openGrpcJsStream(grpcClient, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), {
      "x-api-key": nodegate.key,
    });
    try {
      await waitForLiveSubscriptions(nodegate.gateway, "newHeads", 2);
      const start = await chain.blockNumber();
      await chain.mine(4); // four blocks at once: one poll sees them all
      await probe.store(1n);
      await chain.mine(1);
      const end = start + 6;
      const hashes = await chain.hashes(start + 1, end);
      expect((await native.waitFor(id, 6)).map((h) => [Number(h.number), h.hash])).toEqual(range(start + 1, end).map((n, i) => [n, hashes[i]]));
      expect((await typed.waitFor(6)).map((m) => [Number(m.header?.number), hex(m.header?.hash)])).toEqual(
        range(start + 1, end).map((n, i) => [n, hashes[i]]),
      );
      // No subscription was made upstream: an HTTP node cannot push.
      expect(upstream.count("eth_subscribe")).toBe(0);
    } finally {
      typed.cancel();
      await typed.ended;
    }
  });

  /** A newHeads subscriber that has seen three new blocks, with their numbers and hashes. */
  async function threeHeadsSeen() {
    const s = await subscriber();
    const id = await s.subscribe("newHeads");
    const start = await chain.blockNumber();
    await chain.mine(3);
    const old = (await chain.hashes(start + 1, start + 3)).map((hash, i) => [start + 1 + i, hash]);
    await s.waitFor(id, 3);
    const seen = async (count: number) => (await s.waitFor(id, count)).map((h) => [Number(h.number), h.hash]);
    return { start, old, seen };
  }

  it("a reorganization re-sends the new branch from the fork point", async () => {
    const { start, old, seen } = await threeHeadsSeen();
    await chain.rpc("anvil_reorg", [2, []]);
    await chain.mine(1);
    const hashes = await chain.hashes(start + 1, start + 4);
    expect(await seen(6)).toEqual([...old, ...hashes.slice(1).map((hash, i) => [start + 2 + i, hash])]);
  });

  it("a reorganization to a shorter chain is sent at once, without waiting for the chain to regrow", async () => {
    // Found from outside: a lower head was taken for a lagging node until the new branch reached the old height.
    const { start, old, seen } = await threeHeadsSeen();
    await chain.rpc("anvil_rollback", [2]);
    await probe.store(41n); // a block unlike the one it replaces
    const top = await chain.blockNumber();
    expect(top).toBe(start + 2);
    const [fresh] = await chain.hashes(top, top);
    expect(await seen(4)).toEqual([...old, [top, fresh]]);
  });
});

describe("logs by polling", () => {
  it("two subscribers of one filter cost one eth_getLogs per new block, and get the same logs", async () => {
    const a = await subscriber();
    const b = await subscriber();
    const aId = await a.subscribe("logs", { address: probe.address });
    const bId = await b.subscribe("logs", { address: probe.address.toUpperCase().replace("0X", "0x") });
    const before = upstream.count("eth_getLogs");
    const block = await probe.store(5n);
    const [fromA] = await a.waitFor(aId, 1);
    const [fromB] = await b.waitFor(bId, 1);
    expect(fromB).toEqual(fromA);
    expect(Number(fromA.blockNumber)).toBe(block);
    expect(upstream.count("eth_getLogs") - before).toBe(1);
  });

  it("takes back the logs of blocks a reorganization dropped, and sends the new branch's", async () => {
    const s = await subscriber();
    const id = await s.subscribe("logs", { address: probe.address });
    const start = await chain.blockNumber();
    await probe.store(1n);
    await probe.store(2n);
    const before = await chain.logs({ address: probe.address, fromBlock: toHex(start + 1), toBlock: "latest" });
    await s.waitFor(id, 2);
    const data = probe.storeData(9n);
    await chain.rpc("anvil_reorg", [1, [[{ from: SENDER, to: probe.address, data, gas: "0x100000" }, 0]]]);
    const after = await chain.logs({ address: probe.address, fromBlock: toHex(start + 1), toBlock: "latest" });
    const logs = await s.waitFor(id, 4);
    expect(logs).toEqual([before[0], before[1], { ...before[1], removed: true }, after[1]]);
    expect(after[1]?.blockHash).not.toBe(before[1]?.blockHash);
  });

  it("a reorganization to a shorter chain takes back every dropped block's logs before the new branch's", async () => {
    const s = await subscriber();
    const id = await s.subscribe("logs", { address: probe.address });
    const start = await chain.blockNumber();
    await probe.store(51n);
    await probe.store(52n);
    const before = await chain.logs({ address: probe.address, fromBlock: toHex(start + 1), toBlock: "latest" });
    await s.waitFor(id, 2);
    await chain.rpc("anvil_rollback", [2]);
    await probe.store(53n);
    expect(await chain.blockNumber()).toBe(start + 1);
    const after = await chain.logs({ address: probe.address, fromBlock: toHex(start + 1), toBlock: "latest" });
    expect(after.length).toBeGreaterThan(0);
    const logs = await s.waitFor(id, 4 + after.length);
    expect(logs).toEqual([...before, ...before.map((l) => ({ ...l, removed: true })), ...after]);
  });

  it("a failing eth_getLogs delays the logs but loses none", async () => {
    const s = await subscriber();
    const id = await s.subscribe("logs", { address: probe.address });
    let failures = 0;
    upstream.handler = (r) => {
      if (r.method === "eth_getLogs" && failures < 3) {
        failures++;
        return { raw: "upstream down", status: 503 };
      }
      return { forward: anvil.url };
    };
    const start = await chain.blockNumber();
    await probe.store(21n);
    await probe.store(22n);
    await chain.mine(1);
    await probe.store(23n);
    const want = await chain.logs({ address: probe.address, fromBlock: toHex(start + 1), toBlock: "latest" });
    expect(await s.waitFor(id, 3)).toEqual(want);
    expect(failures).toBe(3);
    await chain.mine(2);
    await s.request("eth_chainId");
    expect(s.results(id)).toHaveLength(3);
  });
});

describe("a block with more logs than eth_getLogs answers", () => {
  // Found from outside: nodegate's own eth_getLogs cap, applied to the feed's reads, refused the block at every retry,
  // and the feed sent nothing more to anyone, without a word.
  let capped: TestNodegate;
  beforeAll(async () => {
    capped = await startNodegate({
      upstreamUrl: upstream.url,
      config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, pollIntervalMs: 50 }, limits: { ...nodegate.gateway.limits, getLogsMaxResults: 5 } },
    });
  });
  afterAll(() => capped?.close());

  it("is sent whole to logs subscribers, as a node's own subscription pushes it, and the feed goes on", async () => {
    const s = await openNativeSubscriber(capped.wsUrl);
    subscribers.push(s);
    const id = await s.subscribe("logs", { address: probe.address });
    const start = await chain.blockNumber();
    await probe.storeMany(8);
    await probe.store(3n);
    const want = await chain.logs({ address: probe.address, fromBlock: toHex(start + 1), toBlock: "latest" });
    expect(want).toHaveLength(9);
    expect(await s.waitFor(id, 9)).toEqual(want);
    // Callers of eth_getLogs still get the cap.
    expect((await s.request("eth_getLogs", [{ address: probe.address, fromBlock: toHex(start + 1), toBlock: toHex(start + 1) }])).error?.code).toBe(-32005);
  });

  it("whose logs the node itself refuses as too many ends the subscribers saying so; subscribing again follows on", async () => {
    const s = await openNativeSubscriber(capped.wsUrl);
    subscribers.push(s);
    await s.subscribe("logs", { address: probe.address });
    const refused = (await chain.blockNumber()) + 1;
    upstream.handler = (r) => {
      const [filter] = r.params as [{ fromBlock?: string; toBlock?: string }];
      if (r.method === "eth_getLogs" && Number(filter.fromBlock) <= refused && Number(filter.toBlock) >= refused) {
        return { error: { code: -32005, message: "query returned more than 10000 results" } };
      }
      return { forward: anvil.url };
    };
    expect(await probe.store(41n)).toBe(refused);
    const closed = await s.closed;
    expect([closed.code, closed.reason]).toEqual([1011, expect.stringContaining(`the node refuses the logs of block ${refused}`)]);
    const again = await openNativeSubscriber(capped.wsUrl);
    subscribers.push(again);
    const id = await again.subscribe("logs", { address: probe.address });
    const next = await probe.store(42n);
    const [log] = await again.waitFor(id, 1);
    expect(Number(log.blockNumber)).toBe(next);
  });

  // Found from outside: a one-block page refused at every try with "query timeout exceeded" (a limit, not the result
  // limit) stalled the feed for good, without a word, as a result limit had.
  const refuseWithTimeout = (block: number, times: number) => {
    let refusals = 0;
    let widerAfterRefusal = 0;
    upstream.handler = (r) => {
      const [filter] = r.params as [{ fromBlock?: string; toBlock?: string }];
      if (r.method === "eth_getLogs" && Number(filter.fromBlock) <= block && Number(filter.toBlock) >= block && refusals < times) {
        if (filter.fromBlock === filter.toBlock) refusals++;
        else if (refusals > 0) widerAfterRefusal++;
        return { error: { code: -32005, message: "query timeout exceeded" } };
      }
      return { forward: anvil.url };
    };
    return { tries: () => refusals, widerAfterRefusal: () => widerAfterRefusal };
  };

  it("refused at every try under another limit (a query timeout) for 10 s ends the subscribers, quoting the node", async () => {
    const s = await openNativeSubscriber(capped.wsUrl);
    subscribers.push(s);
    await s.subscribe("logs", { address: probe.address });
    const refused = (await chain.blockNumber()) + 1;
    const { tries, widerAfterRefusal } = refuseWithTimeout(refused, Number.POSITIVE_INFINITY);
    const started = performance.now();
    expect(await probe.store(43n)).toBe(refused);
    await chain.mine(2); // blocks after it, so that each try could page from it to the head
    // New heads keep coming meanwhile: they do not bring the refused block's next try forward (found from outside:
    // a try at every head, about 3 calls a second, where the retry's backoff makes about 8 in 10 to 16 s).
    const mining = setInterval(() => void chain.mine(1).catch(() => {}), 300);
    const closed = await s.closed.finally(() => clearInterval(mining));
    expect([closed.code, closed.reason]).toEqual([1011, expect.stringContaining(`the node refuses the logs of block ${refused} for this filter at every try ("query timeout`)]);
    expect(tries()).toBeGreaterThanOrEqual(3);
    expect(tries()).toBeLessThanOrEqual(10);
    expect(performance.now() - started).toBeGreaterThanOrEqual(10_000);
    // Once refused alone, the block is asked alone again, not in pages halved down to it at every try.
    expect(widerAfterRefusal()).toBe(0);
    upstream.handler = () => ({ forward: anvil.url });
  }, 30_000);

  it("refused at every try while heads are polled less often than the feed retries still ends the subscribers, at a backed-off pace", async () => {
    // Found from outside (h75): with heads polled every 2 s, most tries saw nothing served since the one before, the
    // count started again at each, and the block was asked about 2.4 times a second for good, no one ended.
    const slowPoll = await startNodegate({
      upstreamUrl: upstream.url,
      config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, pollIntervalMs: 2000 } },
    });
    try {
      const s = await openNativeSubscriber(slowPoll.wsUrl);
      subscribers.push(s);
      await s.subscribe("logs", { address: probe.address });
      const refused = (await chain.blockNumber()) + 1;
      const { tries } = refuseWithTimeout(refused, Number.POSITIVE_INFINITY);
      const started = performance.now();
      expect(await probe.store(47n)).toBe(refused);
      const mining = setInterval(() => void chain.mine(1).catch(() => {}), 500);
      const closed = await s.closed.finally(() => clearInterval(mining));
      const seconds = (performance.now() - started) / 1000;
      expect([closed.code, closed.reason]).toEqual([1011, expect.stringContaining(`the node refuses the logs of block ${refused} for this filter at every try`)]);
      // The end comes with the first counted try 10 s or more after the first refusal. The feed's retries back off
      // from 250 ms, doubling, each drawn in [half, full] of its step: the fifth lands 7.9-15.8 s in, and when it is
      // early the sixth comes 8-16 s later, so up to about 26 s after the first refusal, a poll (2 s) after the store.
      // Seen: 13.5-16 s alone, 25-26 s with the other core busy. Never ending is what this bound rules out.
      expect(seconds).toBeLessThan(40);
      expect(tries() / seconds).toBeLessThan(1);
    } finally {
      upstream.handler = () => ({ forward: anvil.url });
      await slowPoll.close();
    }
  }, 60_000);

  it.each(["answering 503 to eth_getLogs", "hung, answering nothing"] as const)("refused once, then the node down (%s) for a while as heads keep coming, then refused twice more: logs resume, and no one is ended", async (outage) => {
    // Found from outside (re-check): after one refusal, an outage's failures kept new heads from trying, and the retry's
    // backoff grew toward 30 s, so logs came 12-13 s after the node was back; and the outage's time counted in the
    // refusals' 10 s, so two refusals after it ended every subscriber. Then: a hung node's silence, which nodegate's
    // own deadline ends, counted as the block refused again ("query timeout exceeded"), and ended every subscriber.
    const s = await openNativeSubscriber(capped.wsUrl);
    subscribers.push(s);
    const id = await s.subscribe("logs", { address: probe.address });
    const refused = (await chain.blockNumber()) + 1;
    let refusedOnce = false;
    let refusalsBefore = outage === "hung, answering nothing" ? 2 : 1;
    let down = false;
    let refusalsAfter = 2;
    upstream.handler = (r) => {
      if (down && outage === "hung, answering nothing") return { delayMs: 60_000, then: { forward: anvil.url } };
      if (r.method === "eth_getLogs") {
        const [filter] = r.params as [{ fromBlock?: string; toBlock?: string }];
        if (!refusedOnce && filter.fromBlock === filter.toBlock && Number(filter.fromBlock) === refused) {
          // Refused twice before a hang: the third try goes into it, and runs out after the node is back.
          refusalsBefore--;
          refusedOnce = refusalsBefore === 0;
          down = refusedOnce;
          return { error: { code: -32005, message: "query timeout exceeded" } };
        }
        if (down) return { raw: "unavailable", status: 503 };
        if (refusalsAfter > 0 && filter.fromBlock === filter.toBlock && Number(filter.fromBlock) === refused) {
          refusalsAfter--;
          return { error: { code: -32005, message: "query timeout exceeded" } };
        }
      }
      return { forward: anvil.url };
    };
    expect(await probe.store(45n)).toBe(refused);
    const mining = setInterval(() => void chain.mine(1).catch(() => {}), 300);
    try {
      // Longer than the refusals' 10 s, which it must not count toward.
      await new Promise((r) => setTimeout(r, 11_000));
      down = false;
      const [log] = await s.waitFor(id, 1, 8000);
      expect(Number(log.blockNumber)).toBe(refused);
    } finally {
      clearInterval(mining);
      upstream.handler = () => ({ forward: anvil.url });
    }
  }, 40_000);

  it("refused while the node refuses every call alike (a rate limit in a limit's words) ends no one: the block's logs come once it serves again", async () => {
    // Found from outside (h73): -32005 "limit exceeded" on every call, head polls included, counted as this block's
    // refusal, ended every logs subscriber after 10 s, told to resume past a block the node served 3 s later.
    const s = await openNativeSubscriber(capped.wsUrl);
    subscribers.push(s);
    const id = await s.subscribe("logs", { address: probe.address });
    const refused = (await chain.blockNumber()) + 1;
    let mode: "its logs" | "every call" | "none" = "its logs";
    const refusedAt: number[] = [];
    upstream.handler = (r) => {
      const [filter] = (r.params ?? []) as [{ fromBlock?: string; toBlock?: string }];
      const coversIt = r.method === "eth_getLogs" && Number(filter.fromBlock) <= refused && Number(filter.toBlock) >= refused;
      if (mode === "every call" || (mode === "its logs" && coversIt)) {
        if (coversIt) refusedAt.push(performance.now());
        // Its logs refused while the node serves the rest (answers between the tries), then every call refused.
        if (refusedAt.length === 4) mode = "every call";
        return { error: { code: -32005, message: "limit exceeded" } };
      }
      return { forward: anvil.url };
    };
    const mining = setInterval(() => void chain.mine(1).catch(() => {}), 300);
    try {
      expect(await probe.store(46n)).toBe(refused);
      // Tries while every call is refused, up to one past the refusals' 10 s; then the node serves again.
      let closed: unknown;
      void s.closed.then((c) => (closed = c));
      const pastTheWindow = () => closed ?? (refusedAt.length > 0 && (refusedAt.at(-1) as number) - (refusedAt[0] as number) > 11_000);
      await expect.poll(pastTheWindow, { timeout: 30_000, interval: 100 }).toBe(true); // the subscriber not closed meanwhile
      mode = "none";
      const [log] = await s.waitFor(id, 1, 8000);
      expect(Number(log.blockNumber)).toBe(refused);
    } finally {
      clearInterval(mining);
      upstream.handler = () => ({ forward: anvil.url });
    }
  }, 50_000);

  it("refused as every call is refused for a while (a rate limit in a limit's words), then once more under a query timeout while the node serves again: no one is ended, the block's logs come", async () => {
    // Found from outside (h77): the tries made in the first 5 s of the node refusing every call counted as the block's
    // refusals (a result had come within 5 s), so the first refusal after the node served again, 12 s on, was the
    // third in a row over 10 s: every logs subscriber was ended, told to resume past a block the next try read.
    const s = await openNativeSubscriber(capped.wsUrl);
    subscribers.push(s);
    const id = await s.subscribe("logs", { address: probe.address });
    const refused = (await chain.blockNumber()) + 1;
    let everyCallUntil = 0;
    let timeoutsLeft = 1;
    upstream.handler = (r) => {
      const [filter] = (r.params ?? []) as [{ fromBlock?: string; toBlock?: string }];
      const coversIt = r.method === "eth_getLogs" && Number(filter.fromBlock) <= refused && Number(filter.toBlock) >= refused;
      // Every call refused for 12 s from the moment the block's logs are first asked for.
      if (coversIt && everyCallUntil === 0) everyCallUntil = performance.now() + 12_000;
      if (performance.now() < everyCallUntil) return { error: { code: -32005, message: "limit exceeded" } };
      if (coversIt && everyCallUntil > 0 && timeoutsLeft > 0) {
        timeoutsLeft--;
        return { error: { code: -32005, message: "query timeout exceeded" } };
      }
      return { forward: anvil.url };
    };
    let closed: { code: number; reason: string } | undefined;
    void s.closed.then((c) => (closed = c));
    const mining = setInterval(() => void chain.mine(1).catch(() => {}), 300);
    try {
      expect(await probe.store(48n)).toBe(refused);
      const [log] = await s.waitFor(id, 1, 30_000).catch((err) => {
        throw new Error(`${(err as Error).message}; closed: ${JSON.stringify(closed)}`);
      });
      expect(Number(log.blockNumber)).toBe(refused);
      expect(timeoutsLeft).toBe(0);
      expect(closed).toBeUndefined();
    } finally {
      clearInterval(mining);
      upstream.handler = () => ({ forward: anvil.url });
    }
  }, 45_000);

  it("refused under a query timeout for a moment, then read, is sent: a timeout may pass on a retry", async () => {
    // Found from outside: three quick retries ended everyone when the node was loaded for a moment.
    const s = await openNativeSubscriber(capped.wsUrl);
    subscribers.push(s);
    const id = await s.subscribe("logs", { address: probe.address });
    const slow = (await chain.blockNumber()) + 1;
    const { tries } = refuseWithTimeout(slow, 5);
    expect(await probe.store(44n)).toBe(slow);
    const [log] = await s.waitFor(id, 1);
    expect(Number(log.blockNumber)).toBe(slow);
    expect(tries()).toBe(5);
    upstream.handler = () => ({ forward: anvil.url });
  });
});

describe("newPendingTransactions by polling", () => {
  it("sends the hashes a pending-transaction filter reports", async () => {
    const s = await subscriber();
    const id = await s.subscribe("newPendingTransactions");
    expect(upstream.count("eth_newPendingTransactionFilter")).toBeGreaterThanOrEqual(1);
    const sent: string[] = [];
    for (let i = 1; i <= 3; i++) sent.push(await chain.rpc<string>("eth_sendTransaction", [{ from: SENDER, to: probe.address, value: toHex(i) }]));
    expect(await s.waitFor(id, 3)).toEqual(sent);
  });

  it("a hash the filter reports in answer after answer (a node answering with its whole pool) is sent once", async () => {
    const s = await subscriber();
    const id = await s.subscribe("newPendingTransactions");
    const repeated = `0x${"ab".repeat(32)}`;
    upstream.handler = (r) => (r.method === "eth_getFilterChanges" ? { result: [repeated] } : { forward: anvil.url });
    const polls = upstream.count("eth_getFilterChanges");
    for (let i = 0; i < 200 && upstream.count("eth_getFilterChanges") < polls + 4; i++) await new Promise((r) => setTimeout(r, 10));
    expect(upstream.count("eth_getFilterChanges")).toBeGreaterThanOrEqual(polls + 4);
    upstream.handler = forwardAll;
    const hash = await chain.rpc<string>("eth_sendTransaction", [{ from: SENDER, to: probe.address, value: "0x7" }]);
    expect(await s.waitFor(id, 2)).toEqual([repeated, hash]);
  });

  it("a hash the filter reports again after an answer without it (the transaction entered the pool again) is sent again", async () => {
    const s = await subscriber();
    const id = await s.subscribe("newPendingTransactions");
    const reentered = `0x${"cd".repeat(32)}`;
    const answers = [[reentered], [], [reentered]];
    upstream.handler = (r) => (r.method === "eth_getFilterChanges" ? { result: answers.shift() ?? [] } : { forward: anvil.url });
    for (let i = 0; i < 200 && answers.length > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(answers).toHaveLength(0);
    upstream.handler = forwardAll;
    expect(await s.waitFor(id, 2)).toEqual([reentered, reentered]);
  });

  it("an answer with one malformed entry sends none of it, and the next answers send each hash once (found from outside, h69)", async () => {
    const s = await subscriber();
    const id = await s.subscribe("newPendingTransactions");
    const [a, b] = [`0x${"a1".repeat(32)}`, `0x${"b2".repeat(32)}`];
    const answers = [[a, b, "0xbad"], [a, b], [a, b]];
    upstream.handler = (r) => (r.method === "eth_getFilterChanges" ? { result: answers.shift() ?? [] } : { forward: anvil.url });
    for (let i = 0; i < 200 && answers.length > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(answers).toHaveLength(0);
    upstream.handler = forwardAll;
    const hash = await chain.rpc<string>("eth_sendTransaction", [{ from: SENDER, to: probe.address, value: "0x9" }]);
    expect(await s.waitFor(id, 3)).toEqual([a, b, hash]);
  });

  it("makes a new filter when the node forgot the old one", async () => {
    const s = await subscriber();
    const id = await s.subscribe("newPendingTransactions");
    const made = upstream.count("eth_newPendingTransactionFilter");
    let forgot = false;
    upstream.handler = (r) => {
      if (r.method === "eth_getFilterChanges" && !forgot) {
        forgot = true;
        return { error: { code: -32000, message: "filter not found" } };
      }
      return { forward: anvil.url };
    };
    for (let i = 0; i < 100 && !forgot; i++) await new Promise((r) => setTimeout(r, 10));
    for (let i = 0; i < 100 && upstream.count("eth_newPendingTransactionFilter") === made; i++) await new Promise((r) => setTimeout(r, 10));
    expect(upstream.count("eth_newPendingTransactionFilter")).toBe(made + 1);
    const hash = await chain.rpc<string>("eth_sendTransaction", [{ from: SENDER, to: probe.address, value: "0x5" }]);
    expect(await s.waitFor(id, 1)).toEqual([hash]);
  });
});
