/**
 * A polled HTTP node that fails poll after poll (down, or refusing filters)
 * is said at warn once per streak, not once per poll, and its return is
 * said too; subscribers get what comes after. So is a task retried with
 * backoff until it works.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEFAULT_SUBSCRIPTIONS } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { chainDriver } from "../support/chain-driver.js";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { startNodegate } from "../support/nodegate.js";
import { type Answer, startProgrammableUpstream } from "../support/programmable-upstream.js";
import { startProgrammableWsUpstream, type WsNodeAnswer } from "../support/programmable-ws-upstream.js";

let anvil: AnvilNode;
beforeAll(async () => {
  anvil = await startAnvil();
});
afterAll(async () => {
  await anvil?.stop();
});

it("a poll failing every interval is warned about once, and its recovery said; the subscriber then gets the next head", async () => {
  let down = false;
  const node = await startProgrammableUpstream((): Answer => (down ? { raw: "unavailable", status: 503 } : { forward: anvil.url }));
  const ng = await startNodegate({ upstreamUrl: node.url, config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, pollIntervalMs: 50 }, circuitBreaker: { threshold: 5, cooldownMs: 100 } } });
  const subscriber = await openNativeSubscriber(ng.wsUrl);
  try {
    const id = await subscriber.subscribe("newHeads");
    // Polls that reach the node, then (its circuit open) the probes that do, each failing.
    const asked = () => node.requests.length;
    down = true;
    const before = asked();
    while (asked() < before + 10) await new Promise((r) => setTimeout(r, 50));
    const failed = ng.logs.filter((l) => l.msg === "polling the latest block failed");
    expect(failed).toHaveLength(1);
    expect(failed[0]?.level).toBe(40);
    down = false;
    const chain = chainDriver(anvil.url);
    await chain.mine(1);
    const [head] = await subscriber.waitFor(id, 1);
    expect(head.number).toBe(`0x${(await chain.blockNumber()).toString(16)}`);
    expect(ng.logs.filter((l) => l.msg === "polling the latest block works again")).toHaveLength(1);
    expect(ng.logs.filter((l) => l.msg === "polling the latest block failed")).toHaveLength(1);
  } finally {
    await subscriber.close();
    await ng.close();
    await node.close();
  }
});

it("a task retried with backoff (catching up on a WebSocket node's headers) is warned about once per streak, and its recovery said", async () => {
  // Found from outside: a WebSocket upstream that kept failing wrote one warn line per retry (116 in 50 s).
  const hex = (n: number) => `0x${n.toString(16)}`;
  const hashOf = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
  const header = (n: number) => ({ number: hex(n), hash: hashOf(n), parentHash: hashOf(n - 1), timestamp: hex(1_700_000_000 + n) });
  let head = 100;
  let failing = false;
  const node = await startProgrammableWsUpstream((r): WsNodeAnswer => {
    if (r.method === "eth_chainId") return { result: "0x7a69" };
    if (failing) return { error: { code: -32000, message: "header not found" } };
    if (r.method === "eth_blockNumber") return { result: hex(head) };
    if (r.method === "eth_getBlockByNumber") {
      const tag = r.params[0] as string;
      const n = tag === "latest" ? head : Number(tag);
      return { result: n > head || Number.isNaN(n) ? null : header(n) };
    }
    if (r.method === "eth_getBlockByHash") return { result: header(Number.parseInt((r.params[0] as string).slice(2), 16)) };
    return { error: { code: -32601, message: "the method does not exist/is not available" } };
  });
  const ng = await startNodegate({ upstreamUrl: node.url });
  const subscriber = await openNativeSubscriber(ng.wsUrl);
  try {
    const id = await subscriber.subscribe("newHeads");
    await expect.poll(() => node.subscriptions("newHeads"), { timeout: 10_000 }).toBe(1);
    // A gap (101 and 102 unseen) that cannot be filled while the node fails: caught up with backoff, 250 ms doubling.
    failing = true;
    const refusedBefore = node.requests.length;
    head = 103;
    node.push("newHeads", header(103));
    // Tries at 0, 250, 750 and 1750 ms: each asks the node, and is refused.
    await expect.poll(() => node.requests.length - refusedBefore, { timeout: 10_000 }).toBeGreaterThanOrEqual(5);
    const warned = ng.logs.filter((l) => String(l.msg).startsWith("catching up on headers failed") && l.level === 40);
    expect(warned.map((l) => l.msg)).toEqual(["catching up on headers failed; retrying"]);
    failing = false;
    await expect.poll(() => subscriber.results(id).map((h: { number: string }) => Number(h.number)).at(-1), { timeout: 10_000 }).toBe(103);
    expect(subscriber.results(id).map((h: { number: string }) => Number(h.number))).toEqual([101, 102, 103]);
    expect(ng.logs.filter((l) => l.msg === "catching up on headers works again")).toHaveLength(1);
    expect(ng.logs.filter((l) => String(l.msg).startsWith("catching up on headers failed") && l.level === 40)).toHaveLength(1);
  } finally {
    await subscriber.close();
    await ng.close();
    await node.close();
  }
});
