/**
 * A dev chain's rewind behind a cache shared through Redis: every process
 * sets aside what was stored before it, including one started after the
 * rewind. Found from outside: each process numbered the rewinds it had seen
 * itself, and that number was in the keys, so a process started after a
 * rewind read the answers stored before it, for up to 24 hours.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { RedisClient } from "../../src/redis/resp-client.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { redisRequirement, type RedisServer, startRedisServer } from "../support/redis-server.js";
import { describeRequiring } from "../support/system-packages.js";

describeRequiring(redisRequirement, "a dev chain rewound behind a cache shared through Redis", () => {
  let anvil: AnvilNode;
  let redis: RedisServer;
  const gates: TestNodegate[] = [];
  /** The chain as it was before any block: each era rebuilds it from there with other timestamps. */
  let genesis: string;
  let era = 0;

  beforeAll(async () => {
    [anvil, redis] = await Promise.all([startAnvil(), startRedisServer()]);
    genesis = (await post(anvil.url, rpc("evm_snapshot", []))).json.result as string;
    await newEra();
  }, 60_000);

  afterAll(async () => {
    await Promise.all(gates.map((g) => g.close()));
    await Promise.all([anvil?.stop(), redis?.stop()]);
  });

  /** Rewinds the chain to genesis and builds it again with other hashes: Anvil's finalized block (latest - 64) is 16. */
  async function newEra(): Promise<void> {
    if (era > 0) {
      await post(anvil.url, rpc("evm_revert", [genesis]));
      genesis = (await post(anvil.url, rpc("evm_snapshot", []))).json.result as string;
    }
    era++;
    await post(anvil.url, rpc("evm_setNextBlockTimestamp", [2_000_000_000 + era * 1_000_000]));
    await post(anvil.url, rpc("anvil_mine", ["0x50"]));
  }

  /** A nodegate on the shared Redis; `finalizedMaxAgeMs` as given (how soon it sees a rewind while asked). */
  async function gate(finalizedMaxAgeMs: number): Promise<TestNodegate> {
    const config = { stores: { redisUrl: redis.url }, cache: { maxBytes: 16 * 1024 * 1024, coalesce: true, coalesceWindowMs: 60_000, finalizedMaxAgeMs } };
    const started = await startNodegate({ upstreamUrl: anvil.url, keys: [{ key: "shared-rewinds-key-0001", plan: "custom" }], config });
    gates.push(started);
    return started;
  }

  const block2 = async (url: string) => (await post(url, rpc("eth_getBlockByNumber", ["0x2", false]))).json.result.hash as string;
  const stats = (g: TestNodegate) => g.gateway.network(undefined).cache?.stats;

  it("a process started after a rewind no process saw does not serve what was stored before it", async () => {
    const before = await block2(anvil.url);
    const a = await gate(60_000);
    await expect.poll(async () => [await block2(a.rpcUrl), stats(a)?.stored], { timeout: 10_000 }).toEqual([before, 1]);
    // Served from the store from then on.
    expect(await block2(a.rpcUrl)).toBe(before);
    expect(stats(a)?.hits).toBeGreaterThanOrEqual(1);
    await a.close();
    gates.splice(gates.indexOf(a), 1);

    await newEra();
    const after = await block2(anvil.url);
    expect(after).not.toBe(before);
    const b = await gate(60_000);
    // Asked until B has stored its own answer and served it again: never the one stored before the rewind.
    const seen = new Set<string>();
    await expect
      .poll(
        async () => {
          seen.add(await block2(b.rpcUrl));
          return (stats(b)?.hits ?? 0) >= 1;
        },
        { timeout: 10_000 },
      )
      .toBe(true);
    expect([...seen]).toEqual([after]);
    await b.close();
    gates.splice(gates.indexOf(b), 1);
  }, 60_000);

  it("a process started after a rewind another process saw shares that process's answers stored since, not those from before", async () => {
    const before = await block2(anvil.url);
    const a = await gate(200);
    // Stored by the process of the test before, or by A.
    await expect.poll(async () => [await block2(a.rpcUrl), (stats(a)?.hits ?? 0) + (stats(a)?.stored ?? 0) >= 1], { timeout: 10_000 }).toEqual([before, true]);
    const dropped = stats(a)?.dropped ?? 0;
    const stored = stats(a)?.stored ?? 0;

    await newEra();
    const after = await block2(anvil.url);
    // A sees the rewind (its finalized block 16 changed hash) and stores block 2 of the new chain.
    await expect.poll(async () => [await block2(a.rpcUrl), (stats(a)?.dropped ?? 0) > dropped, stats(a)?.stored], { timeout: 10_000 }).toEqual([after, true, stored + 1]);
    // The new token has A's finalized block beside it, for a process started after the next rewind to check (found
    // from outside: written alone, it left nothing to check).
    const client = new RedisClient({ url: redis.url });
    try {
      const [epochKey] = (await client.command(["KEYS", "nodegate:cache:epoch:ethereum:7a69:*"])) as Buffer[];
      const epoch = String(await client.command(["GET", String(epochKey)]));
      expect(epoch).toMatch(/^\S+ \d+ 0x[0-9a-f]{64}$/);
    } finally {
      await client.close();
    }

    const c = await gate(60_000);
    const seen = new Set<string>();
    await expect
      .poll(
        async () => {
          seen.add(await block2(c.rpcUrl));
          return (stats(c)?.hits ?? 0) >= 1;
        },
        { timeout: 10_000 },
      )
      .toBe(true);
    expect([...seen]).toEqual([after]);
    // What A stored after the rewind is shared: C never had to store block 2 itself.
    expect(stats(c)?.stored).toBe(0);
  }, 60_000);
});
