/**
 * A node (or a front before it) that writes a member of its own after a
 * large result (`..."result":{...},"meta":{...}}`): nodegate's reply reader
 * takes such a result to the reply's closing brace unscanned, member and all
 * (reply.ts). A final answer is still stored, as the result alone. Found from
 * outside (h67): the result with the member is not JSON, so such answers were
 * never stored and each was asked of the node again. A real Anvil behind a
 * front that adds the member.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { post, rpc } from "../support/http.js";
import { openWsCaller } from "../support/ws-calls.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const MEMBER = ',"meta":{"servedBy":"edge-1"}';

let anvil: AnvilNode;
let front: ProgrammableUpstream;
let nodegate: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  // Block 1 holds 70 transactions, so its answer passes 4 KB; then blocks enough for it to be final (latest - 64).
  const [from] = await post(anvil.url, rpc("eth_accounts")).then((r) => r.json.result as string[]);
  await post(anvil.url, rpc("evm_setAutomine", [false]));
  for (let i = 0; i < 70; i++) await post(anvil.url, rpc("eth_sendTransaction", [{ from, to: from, value: `0x${(i + 1).toString(16)}` }]));
  await post(anvil.url, rpc("anvil_mine", ["0x1"]));
  await post(anvil.url, rpc("evm_setAutomine", [true]));
  await post(anvil.url, rpc("anvil_mine", ["0x50"]));
  front = await startProgrammableUpstream(async (r) => {
    const answer = await fetch(anvil.url, { method: "POST", headers: { "content-type": "application/json" }, body: r.body }).then((res) => res.text());
    return { raw: answer.length > 4096 ? `${answer.trimEnd().slice(0, -1)}${MEMBER}}` : answer };
  });
  nodegate = await startNodegate({ upstreamUrl: front.url, config: { cache: { maxBytes: 1 << 20, coalesce: true, coalesceWindowMs: 60_000, finalizedMaxAgeMs: 300 } } });
});
afterAll(async () => {
  await nodegate?.close();
  await front?.close();
  await anvil?.stop();
});

it("a final block whose answer a member of the node's own follows is stored as the result alone, and served from the store", async () => {
  const asked = () => front.requests.filter((r) => r.method === "eth_getBlockByNumber" && JSON.stringify(r.params) === '["0x1",false]').length;
  const direct = await post(anvil.url, rpc("eth_getBlockByNumber", ["0x1", false], 1));
  expect(direct.text.length).toBeGreaterThan(4096);
  const cache = nodegate.gateway.network(undefined).cache;
  // The first answer may come before nodegate's first finality reading, and is then not stored.
  await expect.poll(async () => (await post(nodegate.rpcUrl, rpc("eth_getBlockByNumber", ["0x1", false], 1)), cache?.stats.stored), { timeout: 10_000 }).toBe(1);
  const before = asked();
  for (let i = 0; i < 3; i++) {
    const served = await post(nodegate.rpcUrl, rpc("eth_getBlockByNumber", ["0x1", false], 1));
    expect(served.text).toBe(direct.text); // from the store: the result alone, in nodegate's envelope
  }
  expect(asked()).toBe(before);
});

it("every native door answers such a reply with the result alone, as the typed door reads it: a WebSocket and a batch too, not only a single HTTP call", async () => {
  // Found from outside (h94): a single HTTP call got the result (the node's member passed on after it), a WebSocket
  // call got -32052 "the result is not valid JSON". Without a cache, each call reaches the node.
  const uncached = await startNodegate({ upstreamUrl: front.url, config: { cache: { maxBytes: 0, coalesce: false, coalesceWindowMs: 1000, finalizedMaxAgeMs: 4000 } } });
  const ws = await openWsCaller(uncached.wsUrl);
  try {
    const direct = (await post(anvil.url, rpc("eth_getBlockByNumber", ["0x1", true]))).json.result as { hash: string };
    expect(JSON.stringify(direct).length).toBeGreaterThan(4096);
    const single = await post(uncached.rpcUrl, rpc("eth_getBlockByNumber", ["0x1", true], 1));
    expect(single.json.result).toEqual(direct);
    const overWs = await ws.call("eth_getBlockByNumber", ["0x1", true]);
    expect(overWs.error).toBeUndefined();
    expect(overWs.result).toEqual(direct);
    const batch = await post(uncached.rpcUrl, [rpc("eth_getBlockByNumber", ["0x1", true], 7), rpc("eth_chainId", [], 8)]);
    expect(batch.json).toEqual([
      { jsonrpc: "2.0", id: 7, result: direct },
      { jsonrpc: "2.0", id: 8, result: "0x7a69" },
    ]);
  } finally {
    await ws.close();
    await uncached.close();
  }
});
