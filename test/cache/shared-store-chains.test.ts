/**
 * The cache shared through Redis names the chain in its keys: deployments on
 * other chains that share one Redis (and the default key prefix, and a
 * network name) never serve each other's answers. Found from outside: a
 * nodegate on chain 5 served a block of chain 31337, stored by another
 * deployment, as final. Identical reads under way together ask Redis once.
 */
import { expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { RedisClient } from "../../src/redis/resp-client.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { redisRequirement, type RedisServer, startRedisServer } from "../support/redis-server.js";
import { describeRequiring } from "../support/system-packages.js";

/** Redis's INFO commandstats, read on a connection of its own. */
async function redisInfo(redis: RedisServer): Promise<string> {
  const client = new RedisClient({ url: redis.url });
  try {
    return String(await client.command(["INFO", "commandstats"]));
  } finally {
    await client.close();
  }
}

describeRequiring(redisRequirement, "the cache shared through Redis by deployments on other chains", () => {
  it("an answer one chain's nodegate stored is not served by another's under the same network name and key prefix", async () => {
    let anvils: AnvilNode[] = [];
    let redis: RedisServer | undefined;
    let gates: TestNodegate[] = [];
    try {
      // Another genesis time on chain 5: its blocks differ from chain 31337's at every height.
      [anvils, redis] = await Promise.all([Promise.all([startAnvil(), startAnvil({ args: ["--chain-id", "5", "--timestamp", "1000000"] })]), startRedisServer()]);
      // Anvil's finalized block is latest - 64: block 2 is final on both.
      await Promise.all(anvils.map((a) => post(a.url, rpc("anvil_mine", ["0x50"]))));
      const config = { stores: { redisUrl: redis.url }, cache: { maxBytes: 16 * 1024 * 1024, coalesce: true, coalesceWindowMs: 60_000, finalizedMaxAgeMs: 60_000 } };
      gates = await Promise.all(anvils.map((a) => startNodegate({ upstreamUrl: a.url, keys: [{ key: "shared-chains-key-0001", plan: "custom" }], config })));
      const [onA, onB] = gates as [TestNodegate, TestNodegate];
      await Promise.all(gates.map((g) => g.gateway.network(undefined).head.finalized()));
      const block2 = (url: string) => post(url, rpc("eth_getBlockByNumber", ["0x2", false])).then((r) => r.json.result.hash as string);
      const [hashA, hashB] = await Promise.all(anvils.map((a) => block2(a.url)));
      expect(hashA).not.toBe(hashB);
      // Asked until chain 31337's nodegate has stored it in Redis.
      await expect.poll(async () => [await block2(onA.rpcUrl), onA.gateway.network(undefined).cache?.stats.stored], { timeout: 10_000 }).toEqual([hashA, 1]);
      for (let i = 0; i < 3; i++) expect(await block2(onB.rpcUrl)).toBe(hashB);
      // Each chain's own answers are still shared: B stored its own, and served it again.
      expect(onB.gateway.network(undefined).cache?.stats.stored).toBe(1);
      expect(onB.gateway.network(undefined).cache?.stats.hits).toBeGreaterThanOrEqual(1);

      // Identical reads under way together ask Redis once (found from outside: 32 identical reads of a 1.3 MB block
      // made 32 GETs, each answer transcoded on its own).
      const gets = async () => Number(/cmdstat_get:calls=(\d+)/.exec(String(await redisInfo(redis as RedisServer)))?.[1] ?? 0);
      // A batch starts its calls together; the custom plan counts no rate limits in Redis, so every GET is the cache's.
      const before = await gets();
      const together = await post(onB.rpcUrl, Array.from({ length: 32 }, (_, i) => rpc("eth_getBlockByNumber", ["0x2", false], i)));
      expect(new Set((together.json as { result: { hash: string } }[]).map((r) => r.result.hash))).toEqual(new Set([hashB]));
      expect((await gets()) - before).toBe(1);
    } finally {
      await Promise.all(gates.map((g) => g.close()));
      await Promise.all(anvils.map((a) => a.stop()));
      await redis?.stop();
    }
  }, 60_000);

  /**
   * Two Anvils on one Redis, each behind its own nodegate that reads the shared token again every 300 ms (so each
   * would take the other's, see SharedEpoch): for 2.5 s each is asked block 2, and must answer its own chain's.
   * `prepare` makes the two chains (their genesis and the blocks after it).
   */
  async function eachServesItsOwn(args: [string[], string[]], prepare: (anvils: AnvilNode[]) => Promise<void>): Promise<{ hits: number[] }> {
    let anvils: AnvilNode[] = [];
    let redis: RedisServer | undefined;
    let gates: TestNodegate[] = [];
    try {
      [anvils, redis] = await Promise.all([Promise.all(args.map((a) => startAnvil({ args: a }))), startRedisServer()]);
      await prepare(anvils);
      const config = { stores: { redisUrl: redis.url }, cache: { maxBytes: 16 * 1024 * 1024, coalesce: true, coalesceWindowMs: 60_000, finalizedMaxAgeMs: 300 } };
      gates = await Promise.all(anvils.map((a) => startNodegate({ upstreamUrl: a.url, keys: [{ key: "shared-chains-key-0001", plan: "custom" }], config })));
      const [onA, onB] = gates as [TestNodegate, TestNodegate];
      const block2 = (url: string) => post(url, rpc("eth_getBlockByNumber", ["0x2", false])).then((r) => r.json.result.hash as string);
      const [hashA, hashB] = await Promise.all(anvils.map((a) => block2(a.url)));
      expect(hashA).not.toBe(hashB);
      await expect.poll(async () => [await block2(onA.rpcUrl), onA.gateway.network(undefined).cache?.stats.stored], { timeout: 10_000 }).toEqual([hashA, 1]);
      const seen = { a: new Set<string>(), b: new Set<string>() };
      for (const until = performance.now() + 2500; performance.now() < until; ) {
        seen.b.add(await block2(onB.rpcUrl));
        seen.a.add(await block2(onA.rpcUrl));
        await new Promise((r) => setTimeout(r, 20));
      }
      expect({ a: [...seen.a], b: [...seen.b] }).toEqual({ a: [hashA], b: [hashB] });
      return { hits: gates.map((g) => g.gateway.network(undefined).cache?.stats.hits ?? 0) };
    } finally {
      await Promise.all(gates.map((g) => g.close()));
      await Promise.all(anvils.map((a) => a.stop()));
      await redis?.stop();
    }
  }

  it("two dev chains under one chain id (two Anvils, both 31337) do not serve each other's answers: their genesis blocks differ", async () => {
    // Found from outside: keyed by the chain id alone, the second Anvil's nodegate served the first's block 2 as final.
    const { hits } = await eachServesItsOwn([[], ["--timestamp", "1000000"]], async (anvils) => {
      await Promise.all(anvils.map((a) => post(a.url, rpc("anvil_mine", ["0x50"]))));
    });
    // Each still shares with itself: answers came from the store.
    expect(hits.every((n) => n > 0)).toBe(true);
  }, 60_000);

  it("two chains under one chain id and one genesis (Anvils started with one --timestamp, then apart) do not serve each other's answers", async () => {
    // Found from outside: named alike, each process took the other's rewind token unchecked, with the other's final
    // block beside it, and served the other's blocks (so did forks of one chain, and nodes without block 0).
    const sameStart = ["--timestamp", "1800000000"];
    await eachServesItsOwn([sameStart, sameStart], async (anvils) => {
      // One genesis; the blocks after it differ by their timestamps.
      await Promise.all(anvils.map((a, i) => post(a.url, rpc("evm_setNextBlockTimestamp", [1_800_001_000 + i * 1000]))));
      await Promise.all(anvils.map((a) => post(a.url, rpc("anvil_mine", ["0x50"]))));
      const genesis = await Promise.all(anvils.map((a) => post(a.url, rpc("eth_getBlockByNumber", ["0x0", false])).then((r) => r.json.result.hash as string)));
      expect(genesis[0]).toBe(genesis[1]);
    });
  }, 60_000);
});
