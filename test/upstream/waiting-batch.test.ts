/**
 * Calls that would wait for one of nodegate's connections to an HTTP node go
 * to it together, as JSON-RPC batches (src/upstream/waiting-batch.ts): a
 * client's batch larger than the connections reaches the node as a few
 * requests, not one per call, and every call still gets its own answer, from
 * Anvil, whatever the node does with a batch (caps it, refuses it, leaves a
 * call out, rate-limits it). Writes are never sent in a batch. The node sits
 * behind a front on 127.0.0.1 that adds a delay (as a network does, so the
 * connections are all busy) and does to batches what the test says.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { createPublicClient, http as viemHttp, type Hex, parseGwei } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { EthService, GetBalanceRequestSchema, type GetBalanceResponse } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { DEFAULT_PASS_THROUGH, type KeyConfig } from "../../src/config/config.js";
import type { HttpUpstream } from "../../src/upstream/http-upstream.js";
import { grpcJsClient } from "../support/grpc-clients.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { ANVIL_KEY_0 } from "../support/probe-chain.js";

const KEY = "batch-test-key-0123456789abcdef";
const OTHER_KEY = "batch-other-key-0123456789abcdef";
/** Never refused for their rate: a batch of 200 counts 201 requests. */
const UNLIMITED: KeyConfig[] = [KEY, OTHER_KEY].map((key) => ({ key, plan: "growth", rateLimit: { requestsPerSecond: 0, requestsPerDay: 0 } }));
/** nodegate's connections to the node: a batch of 200 waits for them. */
const CONNECTIONS = 4;

type BatchMode =
  /** Answers a batch as Anvil does. */
  | "takes"
  /** geth past its BatchRequestLimit (here 10): one error object under the first call's id, code -32600. */
  | "caps"
  /** Answers only the first half of each batch's calls. */
  | "leaves-out"
  /** HTTP 429 with the provider's -32005 for every batch. */
  | "rate-limits"
  /** geth past its BatchResponseMaxSize: every answer after the first is -32003 "response too large". */
  | "too-large"
  /** A node that takes no batches: one -32600 error object for every array. */
  | "no-batches"
  /** Answers every batch with an empty array. */
  | "empty"
  /** Drops the connection of the first batch it is sent, then answers batches as Anvil does. */
  | "drops-first"
  /** Refuses every third batch with one -32603 error object, and answers the others as Anvil does. */
  | "flaky";

interface Front {
  url: string;
  mode: BatchMode;
  /** Calls in each request that reached the front: 0 for a call alone. */
  sizes: number[];
  /** The methods of each request, in order. */
  methods: string[][];
  /** Holds every answer until the function returned is called. */
  hold(): () => void;
  close(): Promise<void>;
}

async function anvilRaw(url: string, body: string): Promise<string> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
  return res.text();
}

/** A front before Anvil that answers 15 ms late and treats batches as `mode` says. */
async function startFront(anvilUrl: string): Promise<Front> {
  let held: Promise<void> | undefined;
  let arrays = 0;
  const front: Front = {
    url: "",
    mode: "takes",
    sizes: [],
    methods: [],
    hold: () => {
      let open!: () => void;
      held = new Promise((resolve) => {
        open = resolve;
      });
      return () => {
        held = undefined;
        open();
      };
    },
    close: async () => {},
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const request = JSON.parse(body) as { id: number; method: string } | { id: number; method: string }[];
      const calls = Array.isArray(request) ? request : [request];
      front.sizes.push(Array.isArray(request) ? request.length : 0);
      front.methods.push(calls.map((c) => c.method));
      const send = (status: number, text: string) => res.writeHead(status, { "content-type": "application/json" }).end(text);
      setTimeout(async () => {
        await held;
        if (!Array.isArray(request) || front.mode === "takes") return send(200, await anvilRaw(anvilUrl, body));
        switch (front.mode) {
          case "caps":
            if (request.length > 10) return send(200, JSON.stringify({ jsonrpc: "2.0", id: request[0]?.id, error: { code: -32600, message: "batch too large" } }));
            return send(200, await anvilRaw(anvilUrl, body));
          case "rate-limits":
            return send(429, JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32005, message: "project ID request rate exceeded" } }));
          case "leaves-out": {
            const answers = JSON.parse(await anvilRaw(anvilUrl, body)) as unknown[];
            return send(200, JSON.stringify(answers.slice(0, Math.ceil(answers.length / 2))));
          }
          case "too-large": {
            const answers = JSON.parse(await anvilRaw(anvilUrl, body)) as { id: number }[];
            return send(200, JSON.stringify(answers.map((a, i) => (i === 0 ? a : { jsonrpc: "2.0", id: a.id, error: { code: -32003, message: "response too large" } }))));
          }
          case "no-batches":
            return send(200, JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "batch requests are not supported" } }));
          case "empty":
            return send(200, "[]");
          case "drops-first":
            front.mode = "takes";
            req.socket.destroy();
            return;
          case "flaky":
            if (++arrays % 3 === 0) return send(200, JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32603, message: "internal error" } }));
            return send(200, await anvilRaw(anvilUrl, body));
        }
      }, 15);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  front.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  front.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return front;
}

let anvil: AnvilNode;
let front: Front;
const address = (i: number): Hex => `0x${(0xba7c0000 + i).toString(16).padStart(40, "0")}`;
/** Each test account's balance, set in Anvil: distinct, so an answer given to the wrong call shows. */
const balance = (i: number) => 1_000_000n + BigInt(i) * 7919n;
const ACCOUNTS = 200;

async function startGate(batchSize?: number, upstreamTimeoutMs = 30_000, connections = CONNECTIONS): Promise<TestNodegate> {
  return startNodegate({
    upstreamUrl: front.url,
    keys: UNLIMITED,
    // Writes pass through (sent once, as the method table says of methods it does not know as reads).
    config: { passThrough: { methods: [...DEFAULT_PASS_THROUGH, "eth_sendRawTransaction"], allowWrites: true }, upstreamTimeoutMs },
    networks: [{ name: "ethereum", family: "eth", upstreams: [{ label: "primary", url: front.url, connections, ...(batchSize === undefined ? {} : { batchSize }) }] }],
  });
}

/** `n` balances read in one client batch (viem's, over the native door). */
async function readBalances(gate: TestNodegate, n = ACCOUNTS): Promise<bigint[]> {
  const client = createPublicClient({ transport: viemHttp(gate.rpcUrl, { batch: { batchSize: n, wait: 0 }, retryCount: 0 }) });
  return Promise.all(Array.from({ length: n }, (_, i) => client.getBalance({ address: address(i) })));
}

const expected = (n = ACCOUNTS) => Array.from({ length: n }, (_, i) => balance(i));
/** Calls the front passed on, a call alone counting one. */
const callsSent = (sizes: number[]) => sizes.reduce((sum, size) => sum + Math.max(size, 1), 0);

beforeAll(async () => {
  anvil = await startAnvil();
  const setBalances = Array.from({ length: ACCOUNTS }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "anvil_setBalance", params: [address(i), `0x${balance(i).toString(16)}`] }));
  await anvilRaw(anvil.url, JSON.stringify(setBalances));
  front = await startFront(anvil.url);
});
afterAll(async () => {
  await front?.close();
  await anvil?.stop();
});
beforeEach(() => {
  front.mode = "takes";
  front.sizes.length = 0;
  front.methods.length = 0;
});

describe("calls waiting for a connection go to the node as batches", () => {
  it("sends a client's batch of 200 as a few requests, each call answered with its own balance", async () => {
    const gate = await startGate();
    try {
      expect(await readBalances(gate)).toEqual(expected());
      expect(callsSent(front.sizes)).toBe(ACCOUNTS);
      // The first calls take the free connections alone; those that wait go together, at most 100 a batch.
      expect(front.sizes.filter((s) => s === 0).length).toBeGreaterThanOrEqual(1);
      expect(front.sizes.filter((s) => s === 0).length).toBeLessThanOrEqual(CONNECTIONS);
      expect(Math.max(...front.sizes)).toBeLessThanOrEqual(100);
      expect(front.sizes.length).toBeLessThan(CONNECTIONS + 6);
    } finally {
      await gate.close();
    }
  });

  it("another key's call is not held behind a big batch's calls: it goes in its own turn, after one of their batches", async () => {
    const gate = await startGate();
    const primary = gate.gateway.networks()[0]?.primary as HttpUpstream;
    const open = front.hold();
    try {
      const big = fetch(gate.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(Array.from({ length: 400 }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "eth_getBalance", params: [address(i % ACCOUNTS), "latest"] }))) });
      // Four calls on the connections, 396 waiting: four requests in line will carry them, 99 each.
      await expect.poll(() => front.sizes.length).toBe(CONNECTIONS);
      await expect.poll(() => primary.waiting).toBe(CONNECTIONS);
      const other = fetch(gate.url + `/v3/${OTHER_KEY}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getTransactionCount", params: [address(1), "latest"] }) });
      await expect.poll(() => primary.waiting).toBe(CONNECTIONS + 1);
      open();
      expect(((await (await other).json()) as { result: string }).result).toBe("0x0");
      const answers = (await (await big).json()) as { id: number; result: string }[];
      expect(answers.map((a) => BigInt(a.result))).toEqual(Array.from({ length: 400 }, (_, i) => balance(i % ACCOUNTS)));
    } finally {
      open();
      await gate.close();
    }
    // Taking turns: the big batch's first waiting batch, then the other key's call; not after all four. That call, its
    // request's only one, goes as itself (0), not as an array of one.
    expect(front.methods.findIndex((m) => m.includes("eth_getTransactionCount"))).toBe(CONNECTIONS + 1);
    expect(front.sizes).toEqual([0, 0, 0, 0, 99, 0, 99, 99, 99]);
  });

  it("batches typed calls too: concurrent grpc-js GetBalance calls past the connections", async () => {
    const gate = await startGate();
    const client = grpcJsClient(gate.address, EthService);
    try {
      const n = 40;
      const answers = await Promise.all(
        Array.from({ length: n }, (_, i) => client.call<GetBalanceResponse>("getBalance", create(GetBalanceRequestSchema, { address: Buffer.from(address(i).slice(2), "hex") }), { "x-api-key": KEY })),
      );
      expect(answers.map((a) => BigInt(`0x${Buffer.from(a.balance?.value ?? []).toString("hex") || "0"}`))).toEqual(expected(n));
      expect(callsSent(front.sizes)).toBe(n);
      expect(Math.max(...front.sizes)).toBeGreaterThan(1);
    } finally {
      client.close();
      await gate.close();
    }
  });

  it("a request carrying one waiting call sends it as itself: the node's answer or error is the call's, sent once", async () => {
    const gate = await startGate();
    const primary = gate.gateway.networks()[0]?.primary as HttpUpstream;
    const open = front.hold();
    const single = (params: unknown[]) =>
      fetch(gate.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "eth_getBalance", params }) }).then(
        async (res) => (await res.json()) as { result?: string; error?: { code: number; message: string } },
      );
    try {
      const busy = Array.from({ length: CONNECTIONS }, (_, i) => single([address(i), "latest"]));
      await expect.poll(() => front.sizes.length).toBe(CONNECTIONS);
      // Past the block Anvil has: its -32602 is that call's answer, as it would be alone.
      const waiting = [single([address(10), "latest"]), single([address(11), "0xffffff"])];
      await expect.poll(() => primary.waiting).toBe(2);
      open();
      expect((await Promise.all(busy)).map((a) => BigInt(a.result ?? "-1"))).toEqual(expected(CONNECTIONS));
      const [good, outOfRange] = await Promise.all(waiting);
      expect(BigInt(good?.result ?? "-1")).toBe(balance(10));
      expect(outOfRange?.error?.code).toBe(-32602);
      expect(outOfRange?.error?.message).toMatch(/BlockOutOfRange/);
      // Each went as a call of its own (0), not as an array of one, and none was sent twice.
      expect(front.sizes).toEqual(Array(CONNECTIONS + 2).fill(0));
    } finally {
      open();
      await gate.close();
    }
  });

  it("sends every call alone with batchSize: 1", async () => {
    const gate = await startGate(1);
    try {
      expect(await readBalances(gate, 40)).toEqual(expected(40));
      expect(front.sizes).toEqual(Array(40).fill(0));
    } finally {
      await gate.close();
    }
  });

  it("never puts a write in a batch: raw transactions waiting for a connection go alone", async () => {
    const gate = await startGate();
    try {
      const account = privateKeyToAccount(ANVIL_KEY_0);
      const nonce = await createPublicClient({ transport: viemHttp(anvil.url) }).getTransactionCount({ address: account.address });
      const signed = await Promise.all(
        Array.from({ length: 12 }, (_, i) => account.signTransaction({ chainId: 31337, type: "eip1559", to: account.address, value: 1n, nonce: nonce + i, gas: 21_000n, maxFeePerGas: parseGwei("10"), maxPriorityFeePerGas: 1n })),
      );
      const batch = signed.map((tx, i) => ({ jsonrpc: "2.0", id: i, method: "eth_sendRawTransaction", params: [tx] }));
      const res = await fetch(gate.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(batch) });
      const answers = (await res.json()) as { id: number; result?: string; error?: unknown }[];
      expect(answers.map((a) => a.error)).toEqual(Array(12).fill(undefined));
      expect(answers.every((a) => /^0x[0-9a-f]{64}$/.test(a.result ?? ""))).toBe(true);
      const writes = front.methods.filter((m) => m.includes("eth_sendRawTransaction"));
      expect(writes.length).toBe(12);
      expect(writes.every((m) => m.length === 1)).toBe(true);
      expect(front.sizes.every((s) => s === 0)).toBe(true);
    } finally {
      await gate.close();
    }
  });
});

describe("a batch still waiting for a connection is never sent once nobody waits for it", () => {
  const balancesBody = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "eth_getBalance", params: [address(i), "latest"] })));
  /** The balance reads that reached the front, once answers held until now have gone out and a while has passed. */
  const balanceReadsSent = async (open: () => void) => {
    open();
    await new Promise((resolve) => setTimeout(resolve, 300));
    // No request went emptied of its calls.
    expect(front.methods.every((m) => m.length >= 1)).toBe(true);
    return front.methods.flat().filter((m) => m === "eth_getBalance").length;
  };

  it("at their deadline: the calls sent time out (-32051), those still waiting get -32005 and never reach the node", async () => {
    const gate = await startGate(undefined, 1000);
    const open = front.hold();
    try {
      const answers = (await (await fetch(gate.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: balancesBody(50) })).json()) as { error?: { code: number; message: string } }[];
      const codes = answers.map((a) => a.error?.code);
      // The calls on the connections time out; as those connections close at the deadline, the new ones opened in
      // their place may carry the waiting calls with time left (10 ms or more), which time out in turn.
      expect(codes.every((c) => c === -32051 || c === -32005)).toBe(true);
      const timedOut = codes.filter((c) => c === -32051).length;
      expect(timedOut).toBeGreaterThanOrEqual(CONNECTIONS);
      expect(codes.filter((c) => c === -32005).length).toBeGreaterThan(0);
      for (const a of answers.filter((x) => x.error?.code === -32005)) expect(a.error?.message).toMatch(/^limit exceeded: no connection to the node came free within 1000 ms \(\d+ calls were waiting\); try again shortly$/);
      // A call told -32005 was never sent: the node got at most the calls that timed out.
      expect(await balanceReadsSent(open)).toBeLessThanOrEqual(timedOut);
    } finally {
      open();
      await gate.close();
    }
  });

  it("when their caller leaves: the waiting batch leaves the line", async () => {
    const gate = await startGate();
    const primary = gate.gateway.networks()[0]?.primary as HttpUpstream;
    const open = front.hold();
    try {
      const caller = new AbortController();
      const request = fetch(gate.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: balancesBody(50), signal: caller.signal }).catch(() => undefined);
      await expect.poll(() => primary.waiting).toBe(CONNECTIONS);
      caller.abort();
      await request;
      await expect.poll(() => primary.waiting).toBe(0);
      // (nodegate may ask the node its chain id meanwhile: calls whose caller left say nothing of the node.)
      expect(await balanceReadsSent(open)).toBe(CONNECTIONS);
      // The connections are free again: the next batch is answered.
      expect(await readBalances(gate, 20)).toEqual(expected(20));
    } finally {
      open();
      await gate.close();
    }
  });
});

describe("whatever the node does with a batch, each call gets its own answer", () => {
  it("a node capping its batches (geth's 'batch too large'): the refused calls go alone, later batches shrink until taken", async () => {
    front.mode = "caps";
    const gate = await startGate();
    try {
      // Each refusal halves the batches (100, 50, 25, 12, then 6, which the node takes); every read is answered in full.
      const upstream = gate.gateway.networks()[0]?.primary as HttpUpstream;
      const limits: number[] = [];
      const limit = () => Object.values(upstream.loweredBatchSizes)[0] ?? 100;
      for (let read = 0; read < 6 && limit() > 10; read++) {
        expect(await readBalances(gate)).toEqual(expected());
        limits.push(limit());
      }
      // Lowered for this key alone, to what the node took.
      expect(Object.keys(upstream.loweredBatchSizes)).toHaveLength(1);
      expect(limit()).toBeLessThanOrEqual(10);
      expect(limit()).toBeGreaterThanOrEqual(2);
      expect(gate.logs.some((l) => l.level === 40 && /the node refused a batch of \d+ calls \(batch too large\)/.test(String(l.msg)))).toBe(true);
      // A second client batch: no batch over the cap is sent now.
      const before = front.sizes.length;
      expect(await readBalances(gate)).toEqual(expected());
      expect(Math.max(...front.sizes.slice(before))).toBeLessThanOrEqual(10);
      expect(front.sizes.slice(before).some((s) => s > 1)).toBe(true);
    } finally {
      await gate.close();
    }
  });

  it.each([
    ["a node leaving calls out of its answer (the first half of each batch answered)", "leaves-out"],
    ["geth's -32003 'response too large' for the calls after a batch's first", "too-large"],
  ] as const)("%s: those calls are asked alone", async (_, mode) => {
    front.mode = mode;
    const gate = await startGate();
    try {
      expect(await readBalances(gate)).toEqual(expected());
      expect(front.sizes.some((s) => s > 1)).toBe(true);
      // Each such call went once more, alone.
      expect(callsSent(front.sizes)).toBeGreaterThan(ACCOUNTS);
    } finally {
      await gate.close();
    }
  });

  it("a node that takes no batches: every call is answered alone, and calls that wait go one by one from then on", async () => {
    front.mode = "no-batches";
    const gate = await startGate();
    try {
      expect(await readBalances(gate)).toEqual(expected());
      const upstream = gate.gateway.networks()[0]?.primary as HttpUpstream;
      expect(Object.values(upstream.loweredBatchSizes)).toEqual([1]);
      expect(gate.logs.filter((l) => l.level === 40 && /answered them alone: calls of key:[0-9a-f]{10} waiting for a connection now go one by one for 10 minutes/.test(String(l.msg)))).toHaveLength(1);
      const before = front.sizes.length;
      expect(await readBalances(gate)).toEqual(expected());
      expect(front.sizes.slice(before).every((s) => s === 0)).toBe(true);
    } finally {
      await gate.close();
    }
  });

  it("a node answering batches with an empty array: the calls are asked alone, and batches stop", async () => {
    front.mode = "empty";
    const gate = await startGate();
    try {
      expect(await readBalances(gate)).toEqual(expected());
      expect(Object.values((gate.gateway.networks()[0]?.primary as HttpUpstream).loweredBatchSizes)).toEqual([1]);
    } finally {
      await gate.close();
    }
  });

  it("a batch whose connection drops: its calls are asked once more alone, all answered", async () => {
    front.mode = "drops-first";
    const gate = await startGate();
    try {
      expect(await readBalances(gate)).toEqual(expected());
      expect(gate.gateway.networks()[0]?.primaryCircuit).toBe("closed");
    } finally {
      await gate.close();
    }
  });

  it("Anvil refusing a whole batch for one call it cannot read: the halves find that call, the others are answered, and batches keep their size", async () => {
    const gate = await startGate();
    try {
      const nested = (depth: number): unknown => (depth === 0 ? 1 : [nested(depth - 1)]);
      const reads = Array.from({ length: 40 }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "eth_getBalance", params: [address(i), "latest"] }));
      // A call object with a member nested past what Anvil reads (it answers such a request, alone or in a batch, with one -32600).
      const unreadable = { jsonrpc: "2.0", id: 40, method: "eth_call", params: [{ to: address(0), data: "0x", extra: nested(130) }, "latest"] };
      const res = await fetch(gate.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify([...reads, unreadable]) });
      const answers = (await res.json()) as { id: number; result?: string; error?: { code: number; message: string } }[];
      expect(answers.slice(0, 40).map((a) => BigInt(a.result ?? "-1"))).toEqual(expected(40));
      expect(answers[40]?.error).toEqual({ code: -32600, message: "Invalid request" });
      expect(front.sizes.some((s) => s > 1)).toBe(true);
      expect((gate.gateway.networks()[0]?.primary as HttpUpstream).loweredBatchSizes).toEqual({});
      expect(gate.logs.filter((l) => (l.level as number) >= 40)).toEqual([]);
    } finally {
      await gate.close();
    }
  });

  it("a node refusing a batch now and then, as large as ones it took: nothing is lowered, every call answered", async () => {
    front.mode = "flaky";
    const gate = await startGate();
    try {
      for (let read = 0; read < 4; read++) expect(await readBalances(gate)).toEqual(expected());
      expect((gate.gateway.networks()[0]?.primary as HttpUpstream).loweredBatchSizes).toEqual({});
    } finally {
      await gate.close();
    }
  });

  it("a call Anvil refuses in a batch but answers alone stops batches for its caller alone, and not at all once the node took batches lately", async () => {
    // The nesting depth of a call object's extra member at which Anvil answers the call alone but refuses any array
    // holding it (found from outside, h108: 124 with this Anvil); looked for here, so another Anvil's limit is found too.
    const nested = (depth: number): unknown => (depth === 0 ? 1 : [nested(depth - 1)]);
    const call = (depth: number, id: number) => ({ jsonrpc: "2.0", id, method: "eth_call", params: [{ to: address(0), data: "0x", extra: nested(depth) }, "latest"] });
    let depth = 0;
    for (let d = 100; d <= 140 && depth === 0; d++) {
      const alone = JSON.parse(await anvilRaw(anvil.url, JSON.stringify(call(d, 1)))) as { result?: string };
      const inArray = JSON.parse(await anvilRaw(anvil.url, JSON.stringify([call(d, 1)]))) as unknown;
      if (alone.result !== undefined && !Array.isArray(inArray)) depth = d;
    }
    expect(depth, "no nesting depth at which Anvil answers a call alone and refuses it in an array").toBeGreaterThan(0);
    const gate = await startGate();
    const upstream = gate.gateway.networks()[0]?.primary as HttpUpstream;
    const send = async (key: string, calls: unknown[]) =>
      (await (await fetch(`${gate.url}/v3/${key}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(calls) })).json()) as { result?: string }[];
    try {
      // Nothing taken lately: the first key's batches stop, and only its own.
      const answers = await send(KEY, Array.from({ length: 12 }, (_, i) => call(depth, i)));
      expect(answers.map((a) => a.result)).toEqual(Array(12).fill("0x"));
      expect(Object.values(upstream.loweredBatchSizes)).toEqual([1]);
      const before = front.sizes.length;
      const client = createPublicClient({ transport: viemHttp(`${gate.url}/v3/${OTHER_KEY}`, { batch: { batchSize: 200, wait: 0 }, retryCount: 0 }) });
      expect(await Promise.all(Array.from({ length: 200 }, (_, i) => client.getBalance({ address: address(i) })))).toEqual(expected());
      expect(front.sizes.slice(before).some((s) => s > 1)).toBe(true);
      // The node took those batches: the same calls from the other key now lower nothing.
      expect((await send(OTHER_KEY, Array.from({ length: 12 }, (_, i) => call(depth, i)))).map((a) => a.result)).toEqual(Array(12).fill("0x"));
      expect(Object.values(upstream.loweredBatchSizes)).toEqual([1]);
    } finally {
      await gate.close();
    }
  });

  it("a rate-limited batch: each of its calls gets the provider's -32005, and none is sent again alone", async () => {
    const gate = await startGate();
    try {
      front.mode = "rate-limits";
      const body = JSON.stringify(Array.from({ length: 40 }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "eth_getBalance", params: [address(i), "latest"] })));
      const res = await fetch(gate.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
      const answers = (await res.json()) as { id: number; result?: string; error?: { code: number; message: string } }[];
      const batched = front.sizes.filter((s) => s > 1);
      expect(batched.length).toBeGreaterThan(0);
      const refused = answers.filter((a) => a.error !== undefined);
      // Calls alone are answered by Anvil; every call that went in a batch got the provider's refusal, unchanged.
      expect(refused.length).toBe(batched.reduce((a, b) => a + b, 0));
      for (const a of refused) expect(a.error).toMatchObject({ code: -32005, message: "project ID request rate exceeded" });
      expect(callsSent(front.sizes)).toBe(40);
    } finally {
      await gate.close();
    }
  });
});

describe("a burst of calls past the connections free goes to the node in one round", () => {
  /** More connections than the calls sent alone in one turn of the event loop (16) before the rest are gathered. */
  const FREE = 24;

  it("a client's batch of 100 with 24 connections free: every call reaches the node before any is answered, in at most 24 requests", async () => {
    const gate = await startGate(undefined, 30_000, FREE);
    const release = front.hold();
    try {
      const reading = readBalances(gate, 100);
      // One call per connection, as before, would leave 76 calls waiting for the first answers.
      await expect.poll(() => callsSent(front.sizes), { timeout: 5000 }).toBe(100);
      expect(front.sizes.length).toBeLessThanOrEqual(FREE);
      // The calls gathered go at least two to a request (a batch of one would cost the node a request for nothing).
      expect(front.sizes.every((s) => s !== 1)).toBe(true);
      expect(front.sizes.some((s) => s >= 2)).toBe(true);
      release();
      expect(await reading).toEqual(expected(100));
    } finally {
      release();
      await gate.close();
    }
  });

  it("a burst the free connections can carry: each call goes alone, all at once", async () => {
    const gate = await startGate(undefined, 30_000, FREE);
    const release = front.hold();
    try {
      const reading = readBalances(gate, 22);
      await expect.poll(() => callsSent(front.sizes), { timeout: 5000 }).toBe(22);
      expect(front.sizes).toEqual(Array(22).fill(0));
      release();
      expect(await reading).toEqual(expected(22));
    } finally {
      release();
      await gate.close();
    }
  });

  it("a burst's caller leaving before the node answers: nothing is left waiting, and the next burst is answered in full", async () => {
    const gate = await startGate(undefined, 30_000, FREE);
    const release = front.hold();
    try {
      const aborted = new AbortController();
      const body = JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "eth_getBalance", params: [address(i), "latest"] })));
      const leaving = fetch(gate.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body, signal: aborted.signal }).catch(() => undefined);
      await expect.poll(() => callsSent(front.sizes), { timeout: 5000 }).toBe(100);
      aborted.abort();
      await leaving;
      release();
      const upstream = gate.gateway.networks()[0]?.primary as HttpUpstream;
      await expect.poll(() => upstream.waiting).toBe(0);
      expect(await readBalances(gate, 100)).toEqual(expected(100));
    } finally {
      release();
      await gate.close();
    }
  });
});
