/**
 * A node replaced by a fresh chain (an Anvil restarted afresh on its port: same chain id, another genesis block, more
 * blocks than before) behind a nodegate that shares its cache through Redis: the process that lived through the
 * restart names the new chain by its new genesis in its keys, as a process started after the restart does, so the
 * two share what they store; neither serves the old chain's answers. Found from outside: the genesis was asked once
 * per process, so the first kept the old chain's name, and the two never shared (each stored its own copy).
 */
import { expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { redisRequirement, type RedisServer, startRedisServer } from "../support/redis-server.js";
import { describeRequiring } from "../support/system-packages.js";

const KEY = "fresh-chain-key-0001";
const block2 = (url: string) => post(url, rpc("eth_getBlockByNumber", ["0x2", false])).then((r) => r.json.result.hash as string);
const stats = (g: TestNodegate) => g.gateway.network(undefined).cache?.stats;

describeRequiring(redisRequirement, "the cache shared through Redis across a node restarted afresh", () => {
  it("a process that lived through the restart stores the new chain's answers where a process started after it finds them", async () => {
    let anvil: AnvilNode | undefined;
    let redis: RedisServer | undefined;
    const gates: TestNodegate[] = [];
    try {
      [anvil, redis] = await Promise.all([startAnvil({ args: ["--timestamp", "1700000000"] }), startRedisServer()]);
      // Anvil's finalized block is latest - 64: block 2 is final.
      await post(anvil.url, rpc("anvil_mine", ["0x50"]));
      // Readings every 300 ms: the restart is seen as a rewind at once.
      const config = { stores: { redisUrl: redis.url }, cache: { maxBytes: 16 * 1024 * 1024, coalesce: true, coalesceWindowMs: 60_000, finalizedMaxAgeMs: 300 } };
      const before = await startNodegate({ upstreamUrl: anvil.url, keys: [{ key: KEY, plan: "custom" }], config });
      gates.push(before);
      const oldHash = await block2(anvil.url);
      await expect.poll(async () => [await block2(before.rpcUrl), stats(before)?.stored], { timeout: 10_000 }).toEqual([oldHash, 1]);

      // Restarted afresh on the same port: another genesis (its timestamp), and more blocks than the old chain had.
      const port = anvil.port;
      await anvil.stop();
      anvil = await startAnvil({ port, args: ["--timestamp", "1800000000"] });
      await post(anvil.url, rpc("anvil_mine", ["0x60"]));
      const newHash = await block2(anvil.url);
      expect(newHash).not.toBe(oldHash);
      // The process before the restart sees it (a rewind: everything it stored is set aside), and stores the new block 2.
      await expect.poll(async () => [await block2(before.rpcUrl), stats(before)?.stored], { timeout: 10_000 }).toEqual([newHash, 2]);
      expect(stats(before)?.dropped).toBe(1);

      // A process started after the restart, on the same node, is served what the first stored.
      const after = await startNodegate({ upstreamUrl: anvil.url, keys: [{ key: KEY, plan: "custom" }], config });
      gates.push(after);
      await expect.poll(async () => [await block2(after.rpcUrl), (stats(after)?.hits ?? 0) > 0], { timeout: 10_000 }).toEqual([newHash, true]);
      expect(stats(after)?.stored).toBe(0);
      for (let i = 0; i < 3; i++) expect(await block2(before.rpcUrl)).toBe(newHash);
    } finally {
      await Promise.all(gates.map((g) => g.close()));
      await anvil?.stop();
      await redis?.stop();
    }
  }, 60_000);
});
