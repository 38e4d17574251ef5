/**
 * A WebSocket node pushing a header whose number does not follow its
 * parent's (a node's or a front's bug): nodegate must not pass the bogus
 * number to subscribers, nor take it for a gap of that many blocks (history
 * lost, every subscriber ended). The node below is scripted: Anvil cannot
 * push such a header.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableWsUpstream, startProgrammableWsUpstream, type WsNodeAnswer } from "../support/programmable-ws-upstream.js";

const hex = (n: number) => `0x${n.toString(16)}`;
const hashOf = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const header = (n: number) => ({ number: hex(n), hash: hashOf(n), parentHash: hashOf(n - 1), timestamp: hex(1_700_000_000 + n) });

let head = 100;
let node: ProgrammableWsUpstream;
let nodegate: TestNodegate;

beforeAll(async () => {
  node = await startProgrammableWsUpstream((r): WsNodeAnswer => {
    if (r.method === "eth_chainId") return { result: "0x7a69" };
    if (r.method === "eth_blockNumber") return { result: hex(head) };
    if (r.method === "eth_getBlockByNumber") {
      const tag = r.params[0] as string;
      const n = tag === "latest" ? head : Number(tag);
      return { result: n > head || Number.isNaN(n) ? null : header(n) };
    }
    if (r.method === "eth_getBlockByHash") {
      const n = Number.parseInt((r.params[0] as string).slice(2), 16);
      return { result: n <= head ? header(n) : null };
    }
    return { error: { code: -32601, message: "the method does not exist/is not available" } };
  });
  nodegate = await startNodegate({ upstreamUrl: node.url });
});
afterAll(async () => {
  await nodegate?.close();
  await node?.close();
});

it("a pushed header whose number does not follow its parent's is not sent, and the feed goes on", async () => {
  const s = await openNativeSubscriber(nodegate.wsUrl);
  try {
    const id = await s.subscribe("newHeads");
    await expect.poll(() => node.subscriptions("newHeads"), { timeout: 10_000 }).toBe(1);
    head = 101;
    node.push("newHeads", header(101));
    await s.waitFor(id, 1);
    // Block 102's hash and parent, numbered far ahead (more blocks than nodegate fetches to fill a gap), then near.
    head = 102;
    node.push("newHeads", { ...header(102), number: hex(100_102) });
    node.push("newHeads", { ...header(102), number: hex(110) });
    head = 103;
    node.push("newHeads", header(103));
    await expect.poll(() => s.results(id).map((h: { number: string }) => Number(h.number)).at(-1), { timeout: 10_000 }).toBe(103);
    expect(s.results(id).map((h: { number: string }) => Number(h.number))).toEqual([101, 102, 103]);
    expect(nodegate.logs.some((l) => l.msg === "following a pushed header failed; retrying" && String(l.err).includes("but its parent"))).toBe(true);
  } finally {
    await s.close();
  }
});
