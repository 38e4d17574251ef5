/**
 * nodegate's connections to a node are shared by every caller, and a
 * JSON-RPC batch is sent member by member: callers take turns for them, so
 * one key's big batch does not make every other key wait behind it, and a
 * call that waited its whole deadline for a connection (never sent) is
 * nodegate's own capacity, not the node's silence: -32005, no outage.
 * Against a programmable node answering after a delay; order of arrival,
 * not time, is asserted. Calls that wait are sent one by one here
 * (`batchSize: 1`), as writes always are: how waiting calls go as batches,
 * and take turns so, is in waiting-batch.test.ts.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEFAULT_PLANS } from "../../src/config/config.js";
import type { HttpUpstream } from "../../src/upstream/http-upstream.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const BATCH_KEY = "batch-key-0123456789abcdef";
const OTHER_KEY = "other-key-0123456789abcdef";
/** nodegate's connections to one node. */
const CONNECTIONS = 64;

let upstream: ProgrammableUpstream;
let delayMs = 40;
/** While set, the node holds every answer until it is resolved. */
let gate: Promise<void> | undefined;
let nodegate: TestNodegate;

beforeAll(async () => {
  upstream = await startProgrammableUpstream(async () => {
    await gate;
    return { delayMs, then: { result: "0x1" } };
  });
  nodegate = await startNodegate({
    upstreamUrl: upstream.url,
    networks: [{ name: "ethereum", family: "eth", upstreams: [{ label: "primary", url: upstream.url, batchSize: 1 }] }],
    keys: [
      { key: BATCH_KEY, plan: "custom" },
      { key: OTHER_KEY, plan: "custom" },
    ],
    // Identical calls combined (as by default), nothing stored: every call here asks `latest`.
    config: { plans: structuredClone(DEFAULT_PLANS), upstreamTimeoutMs: 1500, cache: { maxBytes: 0, coalesce: true, coalesceWindowMs: 60_000, finalizedMaxAgeMs: 4000 } },
  });
});
afterAll(async () => {
  await nodegate?.close();
  await upstream?.close();
});

const address = (i: number) => `0x${i.toString(16).padStart(40, "0")}`;

/** Makes the node answer at once, but only when the function returned is called. */
function holdAnswers(): () => void {
  delayMs = 0;
  let open!: () => void;
  gate = new Promise((resolve) => {
    open = resolve;
  });
  return open;
}
const batchOf = (n: number, from: number) => Array.from({ length: n }, (_, i) => rpc("eth_getBalance", [address(from + i), "latest"], i));

it("another key's call is sent right after the first connection comes free, not after the whole of a big batch", async () => {
  const open = holdAnswers();
  const primary = nodegate.gateway.networks()[0]?.primary as HttpUpstream;
  const before = upstream.requests.length;
  try {
    const batch = post(`${nodegate.url}/v3/${BATCH_KEY}`, batchOf(4 * CONNECTIONS, 0));
    await expect.poll(() => upstream.requests.length - before).toBe(CONNECTIONS);
    await expect.poll(() => primary.waiting).toBe(3 * CONNECTIONS);
    const other = post(`${nodegate.url}/v3/${OTHER_KEY}`, rpc("eth_getBalance", [address(999_999), "latest"]));
    await expect.poll(() => primary.waiting).toBe(3 * CONNECTIONS + 1);
    open();
    expect((await other).json.result).toBe("0x1");
    expect(((await batch).json as { result?: string }[]).filter((a) => a.result === "0x1")).toHaveLength(4 * CONNECTIONS);
  } finally {
    open();
    gate = undefined;
  }
  const sent = upstream.requests.slice(before).map((r) => JSON.stringify(r.params));
  // Taking turns: the batch's next call, then this one. First come, first served: after all 256 of the batch.
  expect(sent.indexOf(JSON.stringify([address(999_999), "latest"]))).toBeLessThanOrEqual(CONNECTIONS + 1);
});

it("calls that waited for a connection and then missed their deadline are not an outage, and a call still waiting at its deadline is never sent", async () => {
  // Found from outside: a key's batches queued behind each other until their deadline, and those timeouts opened the
  // circuit of a healthy node, so every key got -32050 for the cooldown; then (the re-attack) the connections freed
  // by calls timing out carried queued calls whose own deadline was passing, to a node nobody waited for. 1500 ms
  // deadline, 600 ms per call, 64 connections: a batch of four waves has a third sent after 1200 ms of waiting and a
  // fourth still waiting at its deadline.
  delayMs = 600;
  const before = upstream.requests.length;
  const answers = (await post(`${nodegate.url}/v3/${BATCH_KEY}`, batchOf(4 * CONNECTIONS, 10_000))).json as { result?: string; error?: { code: number; message: string } }[];
  expect(answers.filter((a) => a.result === "0x1")).toHaveLength(2 * CONNECTIONS);
  const timedOut = answers.flatMap((a) => (a.error?.code === -32051 ? [a.error.message] : []));
  const neverSent = answers.flatMap((a) => (a.error?.code === -32005 ? [a.error.message] : []));
  expect(timedOut.length + neverSent.length).toBe(2 * CONNECTIONS);
  expect(neverSent.length).toBeGreaterThan(0);
  for (const message of neverSent) expect(message).toMatch(/^limit exceeded: no connection to the node came free within 1500 ms \(\d+ calls were waiting\); try again shortly$/);
  // The calls waiting when each joined, not those left when it gave up (found from outside: calls of one deadline
  // leave together, and the last said "1 calls were waiting"): each of the fourth wave joined behind two waves.
  const waitingSaid = neverSent.map((message) => Number(/\((\d+) calls were waiting\)/.exec(message)?.[1]));
  expect(Math.min(...waitingSaid)).toBeGreaterThan(2 * CONNECTIONS);
  for (const message of timedOut) {
    const waited = Number(/^upstream timeout: no answer within 1500 ms \((\d+) ms of them waiting for a connection to the node\)$/.exec(message)?.[1]);
    expect(waited, message).toBeLessThan(1500);
  }
  // Only calls that were sent reached the node: the first two waves and those of the rest sent before their deadline.
  await new Promise((resolve) => setTimeout(resolve, 700)); // the node's answers to the last calls sent
  expect(upstream.requests.length - before).toBe(2 * CONNECTIONS + timedOut.length);
  expect(nodegate.gateway.networks()[0]?.primaryCircuit).toBe("closed");
  delayMs = 0;
  expect((await post(`${nodegate.url}/v3/${OTHER_KEY}`, rpc("eth_getBalance", [address(5), "latest"]))).json.result).toBe("0x1");
});

it("another key's call identical to one still waiting in a big batch's line is not held behind that batch", async () => {
  // Found from outside: identical calls are combined, and the combined call waited in the first caller's line: another
  // key's call identical to the last of a batch of 800 waited 6 s (or failed -32005), where a different call was
  // answered in 0.5 s.
  const open = holdAnswers();
  const primary = nodegate.gateway.networks()[0]?.primary as HttpUpstream;
  const before = upstream.requests.length;
  const shared = [address(777_777), "latest"];
  try {
    // The batch's last call is the one the other key will ask too.
    const batch = post(`${nodegate.url}/v3/${BATCH_KEY}`, [...batchOf(4 * CONNECTIONS, 1_000_000), rpc("eth_getBalance", shared, "last")]);
    await expect.poll(() => primary.waiting).toBe(3 * CONNECTIONS + 1);
    const other = post(`${nodegate.url}/v3/${OTHER_KEY}`, rpc("eth_getBalance", shared));
    await expect.poll(() => primary.waiting).toBe(3 * CONNECTIONS + 2);
    open();
    expect((await other).json.result).toBe("0x1");
    const answers = (await batch).json as { id: unknown; result?: string }[];
    expect(answers.filter((a) => a.result === "0x1")).toHaveLength(4 * CONNECTIONS + 1);
  } finally {
    open();
    gate = undefined;
  }
  // The other key's call was sent in its own turn, as any other call of its; the batch's own copy went at its end.
  const sent = upstream.requests.slice(before).map((r) => JSON.stringify(r.params));
  expect(sent.indexOf(JSON.stringify(shared))).toBeLessThanOrEqual(CONNECTIONS + 1);
  expect(sent.lastIndexOf(JSON.stringify(shared))).toBe(4 * CONNECTIONS + 1);
});

it("another key's identical call joins one already sent to the node: one upstream call for both", async () => {
  const open = holdAnswers();
  const before = upstream.requests.length;
  const shared = [address(888_888), "latest"];
  try {
    const first = post(`${nodegate.url}/v3/${BATCH_KEY}`, rpc("eth_getBalance", shared));
    await expect.poll(() => upstream.requests.length - before).toBe(1);
    const second = post(`${nodegate.url}/v3/${OTHER_KEY}`, rpc("eth_getBalance", shared));
    await expect.poll(() => nodegate.gateway.networks()[0]?.cache?.stats.joined).toBeGreaterThanOrEqual(1);
    open();
    expect([(await first).json.result, (await second).json.result]).toEqual(["0x1", "0x1"]);
  } finally {
    open();
    gate = undefined;
  }
  expect(upstream.requests.length - before).toBe(1);
});
