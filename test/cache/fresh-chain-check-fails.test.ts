/**
 * A node replaced by a fresh chain with more blocks than before (an Anvil restarted afresh on its port: same chain
 * id, another genesis): the first finalized reading after it names a higher block, and the block final before is
 * asked for to see whether it is still there. When that one question fails (an upstream hiccup: an HTTP 503, or a
 * node error), the chain's change must still be seen, at the next reading. Found from outside: the failed check was
 * taken as "still there", the new chain's finalized block replaced the old one's, and the old chain's stored answers
 * were served for good. A real Anvil behind a front that fails that one question once.
 */
import { afterEach, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type Answer, type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

let anvil: AnvilNode | undefined;
let front: ProgrammableUpstream | undefined;
let nodegate: TestNodegate | undefined;
afterEach(async () => {
  await nodegate?.close();
  await front?.close();
  await anvil?.stop();
});

const block2 = (url: string) => post(url, rpc("eth_getBlockByNumber", ["0x2", false])).then((r) => r.json.result.hash as string);

for (const [what, failure] of [
  ["an HTTP 503 (an outage)", { raw: "service unavailable", status: 503 }],
  ["a node error", { error: { code: -32000, message: "header not found" } }],
] as [string, Answer][]) {
  it(`the old chain's answers are not served for good when the check of the block final before gets ${what}`, async () => {
    anvil = await startAnvil({ args: ["--timestamp", "1700000000"] });
    // Anvil's finalized block is latest - 64: block 16 (0x10) here, and block 2 is final.
    await post(anvil.url, rpc("anvil_mine", ["0x50"]));
    const node = anvil.url;
    /** The params of the one question the front fails, once. */
    let failOnce: string | undefined;
    front = await startProgrammableUpstream((r) => {
      if (failOnce !== undefined && r.method === "eth_getBlockByNumber" && JSON.stringify(r.params) === failOnce) {
        failOnce = undefined;
        return failure;
      }
      return { forward: node };
    });
    nodegate = await startNodegate({ upstreamUrl: front.url, config: { cache: { maxBytes: 1 << 20, coalesce: true, coalesceWindowMs: 60_000, finalizedMaxAgeMs: 300 } } });
    const cache = nodegate.gateway.network(undefined).cache;
    const oldHash = await block2(anvil.url);
    await expect.poll(async () => [await block2(nodegate!.rpcUrl), cache?.stats.stored], { timeout: 10_000 }).toEqual([oldHash, 1]);
    expect(nodegate.gateway.network(undefined).head.lastFinalized).toBe(16n);

    // Restarted afresh on the same port, with more blocks: its finalized block (0x20) is past the old one.
    const port = anvil.port;
    await anvil.stop();
    failOnce = '["0x10",false]';
    anvil = await startAnvil({ port, args: ["--timestamp", "1800000000"] });
    await post(anvil.url, rpc("anvil_mine", ["0x60"]));
    const newHash = await block2(anvil.url);
    expect(newHash).not.toBe(oldHash);

    // The new chain's block 2: the change is seen (as a rewind) at the reading after the failed one, not taken for none.
    await expect.poll(async () => [await block2(nodegate!.rpcUrl), cache?.stats.dropped], { timeout: 10_000 }).toEqual([newHash, 1]);
    expect(failOnce).toBeUndefined();
    // And it stays so, from the store again.
    for (let i = 0; i < 5; i++) {
      expect(await block2(nodegate.rpcUrl)).toBe(newHash);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(nodegate.gateway.network(undefined).head.lastFinalized).toBe(32n);
  }, 60_000);
}

it("while the check of the block final before keeps failing with a 503, nothing stored is served: the node answers", async () => {
  // Found from outside: an outage of that one question (a front's 503 or 429, a reset) left the old chain's stored
  // answers served for as long as it lasted, though the node had just answered the reading itself.
  anvil = await startAnvil({ args: ["--timestamp", "1700000000"] });
  await post(anvil.url, rpc("anvil_mine", ["0x50"]));
  const node = anvil.url;
  let failing = false;
  front = await startProgrammableUpstream((r) =>
    failing && r.method === "eth_getBlockByNumber" && JSON.stringify(r.params) === '["0x10",false]' ? { raw: "service unavailable", status: 503 } : { forward: node },
  );
  nodegate = await startNodegate({ upstreamUrl: front.url, config: { cache: { maxBytes: 1 << 20, coalesce: true, coalesceWindowMs: 60_000, finalizedMaxAgeMs: 300 } } });
  const cache = nodegate.gateway.network(undefined).cache;
  const oldHash = await block2(anvil.url);
  await expect.poll(async () => [await block2(nodegate!.rpcUrl), cache?.stats.stored], { timeout: 10_000 }).toEqual([oldHash, 1]);

  const port = anvil.port;
  await anvil.stop();
  failing = true;
  anvil = await startAnvil({ port, args: ["--timestamp", "1800000000"] });
  await post(anvil.url, rpc("anvil_mine", ["0x60"]));
  const newHash = await block2(anvil.url);

  await expect.poll(() => block2(nodegate!.rpcUrl), { timeout: 10_000 }).toBe(newHash);
  // Past several readings (every 300 ms), each checking that block again and failing: still the node's answer.
  for (let i = 0; i < 8; i++) {
    expect(await block2(nodegate.rpcUrl)).toBe(newHash);
    await new Promise((r) => setTimeout(r, 200));
  }
  // No reading is taken meanwhile (none is known, so nothing is stored or served), and no rewind is told.
  expect(nodegate.gateway.network(undefined).head.lastFinalized).toBeUndefined();
  expect(cache?.stats.dropped).toBe(0);
}, 60_000);
