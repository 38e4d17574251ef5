/**
 * A node URL whose finalized reading steps back a little while its chain
 * stays the same (a load balancer's backends, an epoch apart) keeps what the
 * cache stored; a real rewind (the block called final before has left the
 * chain) sets it all aside, says so in the log, and counts it. A recorded
 * node, as Anvil's finality only moves forward or rewinds its whole chain.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const hex = (n: number) => `0x${n.toString(16)}`;
/** The chain's blocks: their hashes carry `era`, which a rewind changes. */
let era = "aa";
let finalized = 100;
const block = (n: number) => ({ number: hex(n), hash: `0x${era}${n.toString(16).padStart(62, "0")}`, parentHash: `0x${era}${(n - 1).toString(16).padStart(62, "0")}`, transactions: [] });

let node: ProgrammableUpstream;
let nodegate: TestNodegate;

beforeAll(async () => {
  node = await startProgrammableUpstream((r) => {
    if (r.method === "eth_chainId") return { result: "0x7a69" };
    if (r.method === "eth_getBlockByNumber") {
      const tag = (r.params as string[])[0];
      if (tag === "finalized") return { result: block(finalized) };
      if (tag === "latest") return { result: block(finalized + 64) };
      return { result: block(Number(tag)) };
    }
    return { error: { code: -32601, message: "the method does not exist/is not available" } };
  });
  nodegate = await startNodegate({ upstreamUrl: node.url, config: { cache: { maxBytes: 1 << 20, coalesce: true, coalesceWindowMs: 60_000, finalizedMaxAgeMs: 50 } } });
  nodegate.learnFinality();
  for (let i = 0; i < 500 && nodegate.gateway.network(undefined).head.lastFinalized !== 100n; i++) await new Promise((r) => setTimeout(r, 10));
});
afterAll(async () => {
  await nodegate?.close();
  await node?.close();
});

const readBlock50 = async () => (await post(nodegate.rpcUrl, rpc("eth_getBlockByNumber", ["0x32", false]))).json.result?.hash as string;
const reads = () => node.requests.filter((r) => r.method === "eth_getBlockByNumber" && (r.params as string[])[0] === "0x32").length;
const finalityReadings = () => node.requests.filter((r) => r.method === "eth_getBlockByNumber" && (r.params as string[])[0] === "finalized").length;
const rewindLogs = () => nodegate.logs.filter((l) => String(l.msg).startsWith("the node's finalized block went back"));
const dropped = () => nodegate.gateway.network(undefined).cache?.stats.dropped;

it("a finalized reading that steps back on the same chain keeps the stored answers", async () => {
  // Found from outside: each step back (100, then 98 from another backend) set every stored answer aside.
  expect(await readBlock50()).toBe(block(50).hash);
  for (let i = 0; i < 10; i++) {
    finalized = i % 2 === 0 ? 98 : 100;
    const before = finalityReadings();
    await expect.poll(async () => (await readBlock50(), finalityReadings())).toBeGreaterThan(before);
  }
  expect(dropped()).toBe(0);
  expect(rewindLogs()).toEqual([]);
  // Still served from the store. (Calls during a reading after a pause may go to the node meanwhile: not counted.)
  const hits = nodegate.gateway.network(undefined).cache?.stats.hits ?? 0;
  expect(await readBlock50()).toBe(block(50).hash);
  expect(nodegate.gateway.network(undefined).cache?.stats.hits).toBe(hits + 1);
});

it("a rewind (the block final before has left the chain) sets the stored answers aside, logs it and counts it", async () => {
  finalized = 100;
  await expect.poll(async () => (await readBlock50(), nodegate.gateway.network(undefined).head.lastFinalized)).toBe(100n);
  const before = reads();
  era = "bb";
  finalized = 90;
  await expect.poll(async () => await readBlock50()).toBe(block(50).hash);
  expect(reads()).toBeGreaterThan(before);
  expect(dropped()).toBe(1);
  expect(rewindLogs()).toEqual([expect.objectContaining({ level: 40, network: "ethereum", from: "100", to: "90" })]);
});
