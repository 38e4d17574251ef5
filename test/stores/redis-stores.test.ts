/**
 * The Redis stores against a real redis-server: counters add up atomically
 * and always expire, the script survives SCRIPT FLUSH, a refusing or absent
 * Redis falls back (rate limits to this instance's counters, the cache to a
 * miss), and cached values keep their bytes and TTL.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { pino } from "pino";
import { MemoryRateLimitStore, RateLimiter } from "../../src/auth/rate-limiter.js";
import { RedisRateLimitStore } from "../../src/auth/redis-rate-limit-store.js";
import { RedisCacheStore, SHARED_CACHE_TTL_MS } from "../../src/cache/redis-cache-store.js";
import { Metrics } from "../../src/observability/metrics.js";
import { RedisClient } from "../../src/redis/resp-client.js";
import { createStores } from "../../src/stores/create-stores.js";
import { redisRequirement, type RedisServer, startRedisServer } from "../support/redis-server.js";
import { describeRequiring } from "../support/system-packages.js";
import { startTcpProxy } from "../support/tcp-proxy.js";
import { testTempDir } from "../support/temp-dir.js";

describeRequiring(redisRequirement, "Redis stores", () => {
  let redis: RedisServer;
  let client: RedisClient;
  let inspect: RedisClient;
  const reported: { store: string; err: unknown }[] = [];
  const report = (store: string, err: unknown) => reported.push({ store, err });
  let fallback: MemoryRateLimitStore;
  let limits: RedisRateLimitStore;
  let cache: RedisCacheStore;

  beforeAll(async () => {
    redis = await startRedisServer();
    client = new RedisClient({ url: redis.url, reconnect: { minDelayMs: 10, maxDelayMs: 50 } });
    inspect = new RedisClient({ url: redis.url });
    await Promise.all([client.ready(), inspect.ready()]);
    fallback = new MemoryRateLimitStore();
    limits = new RedisRateLimitStore(client, { keyPrefix: "t1:", fallback, report });
    cache = new RedisCacheStore(client, { keyPrefix: "t1:", report });
  });
  afterAll(async () => {
    await client?.close();
    await inspect?.close();
    await redis?.stop();
  });

  /** One window: `counter` may hold up to `limit`. */
  const window = (counter: string, limit: number, ttlMs = 60_000) => [{ counter, limit, ttlMs }];
  const total = async (counter: string) => Number(String((await inspect.command(["GET", `t1:${counter}`])) ?? "0"));

  describe("RedisRateLimitStore", () => {
    it("adds costs under the prefixed key and sets the window's expiry once", async () => {
      expect(await limits.take(window("rl:a:s:1", 10), 2)).toBe(-1);
      expect(await limits.take(window("rl:a:s:1", 10), 3)).toBe(-1);
      expect(await inspect.command(["GET", "t1:rl:a:s:1"])).toEqual(Buffer.from("5"));
      const ttl = (await inspect.command(["PTTL", "t1:rl:a:s:1"])) as number;
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    });

    it("adds nothing when the cost does not fit, so a smaller request still can", async () => {
      expect(await limits.take(window("rl:fit:d:1", 20), 16)).toBe(-1);
      expect(await limits.take(window("rl:fit:d:1", 20), 5)).toBe(0);
      expect(await total("rl:fit:d:1")).toBe(16);
      for (let i = 0; i < 4; i++) expect(await limits.take(window("rl:fit:d:1", 20), 1)).toBe(-1);
      expect(await limits.take(window("rl:fit:d:1", 20), 1)).toBe(0);
      expect(await total("rl:fit:d:1")).toBe(20);
    });

    it("counts in every window or in none, and names the one that is full", async () => {
      const both = [
        { counter: "rl:two:s:1", limit: 100, ttlMs: 2000 },
        { counter: "rl:two:d:1", limit: 3, ttlMs: 60_000 },
      ];
      expect(await limits.take(both, 2)).toBe(-1);
      expect(await limits.take(both, 2)).toBe(1);
      expect(await total("rl:two:s:1")).toBe(2);
      expect(await total("rl:two:d:1")).toBe(2);
    });

    it("lets exactly the limit through from two connections at once", async () => {
      const other = new RedisClient({ url: redis.url });
      try {
        await other.ready();
        const second = new RedisRateLimitStore(other, { keyPrefix: "t1:", fallback: new MemoryRateLimitStore(), report });
        const verdicts = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? limits : second).take(window("rl:shared:d:1", 150), 1)));
        expect(verdicts.filter((v) => v === -1)).toHaveLength(150);
        expect(await total("rl:shared:d:1")).toBe(150);
      } finally {
        await other.close();
      }
    });

    it("gives a counter left without an expiry one", async () => {
      await inspect.command(["SET", "t1:rl:stale", "7"]);
      expect(await limits.take(window("rl:stale", 10, 5000), 1)).toBe(-1);
      expect(await total("rl:stale")).toBe(8);
      expect((await inspect.command(["PTTL", "t1:rl:stale"])) as number).toBeGreaterThan(0);
    });

    it("loads its script again after SCRIPT FLUSH (a restarted or flushed Redis)", async () => {
      await inspect.command(["SCRIPT", "FLUSH"]);
      expect(await limits.take(window("rl:after-flush", 10, 5000), 1)).toBe(-1);
      expect(await limits.take(window("rl:after-flush", 10, 5000), 1)).toBe(-1);
      expect(await total("rl:after-flush")).toBe(2);
    });

    it("counts in this instance when Redis refuses the command, and reports it", async () => {
      await inspect.command(["LPUSH", "t1:rl:broken", "not a counter"]);
      reported.length = 0;
      expect(await limits.take(window("rl:broken", 5, 5000), 4)).toBe(-1);
      expect(await limits.take(window("rl:broken", 5, 5000), 1)).toBe(-1);
      expect(fallback.take(window("rl:broken", 5, 5000), 1)).toBe(0);
      expect(reported).toHaveLength(2);
      expect(reported[0]?.store).toBe("rate limits");
      expect(String(reported[0]?.err)).toMatch(/WRONGTYPE/);
    });
  });

  describe("RedisCacheStore", () => {
    it("keeps bytes exactly, with the TTL as PX", async () => {
      const value = Buffer.from([0, 255, 13, 10, 36, 42]);
      await cache.set("block:0x1", value, 30_000);
      expect(await cache.get("block:0x1")).toEqual(value);
      const ttl = (await inspect.command(["PTTL", "t1:cache:block:0x1"])) as number;
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(30_000);
      // Found from outside: answers the cache stores (it gives no TTL) never expired, and filled Redis.
      await cache.set("final", Buffer.from("x"));
      const defaultTtl = (await inspect.command(["PTTL", "t1:cache:final"])) as number;
      expect(defaultTtl).toBeGreaterThan(SHARED_CACHE_TTL_MS - 60_000);
      expect(defaultTtl).toBeLessThanOrEqual(SHARED_CACHE_TTL_MS);
    });

    it("the shared token's key lives as long as an answer, from each reading by a holder and each replacement", async () => {
      // Found from outside: without an expiry, the final block a dev chain long gone recorded beside the token kept every
      // later chain of its genesis off the shared store until it reached that block.
      const ttl = async () => (await inspect.command(["PTTL", "t1:cache:epoch:eth:1"])) as number;
      const read = await cache.readEpoch("eth:1", "tok1", "", "10 0xa");
      expect(read).toBe("tok1 10 0xa");
      expect(await ttl()).toBeGreaterThan(SHARED_CACHE_TTL_MS - 60_000);
      await inspect.command(["PEXPIRE", "t1:cache:epoch:eth:1", 5000]);
      expect(await cache.readEpoch("eth:1", "tok2", "tok1", "20 0xb", "10 0xa")).toBe("tok1 20 0xb");
      expect(await ttl()).toBeGreaterThan(SHARED_CACHE_TTL_MS - 60_000);
      await inspect.command(["PEXPIRE", "t1:cache:epoch:eth:1", 5000]);
      expect(await cache.readEpoch("eth:1", "tok2", "tok1")).toBe("tok1 20 0xb"); // a reading that records nothing
      expect(await ttl()).toBeGreaterThan(SHARED_CACHE_TTL_MS - 60_000);
      // A reader that does not hold the token (kept off it: its node lacks the block recorded there) does not renew it.
      await inspect.command(["PEXPIRE", "t1:cache:epoch:eth:1", 5000]);
      expect(await cache.readEpoch("eth:1", "tok2", "")).toBe("tok1 20 0xb");
      expect(await cache.readEpoch("eth:1", "tok2", "tok0")).toBe("tok1 20 0xb");
      expect(await ttl()).toBeLessThanOrEqual(5000);
      expect(await cache.bumpEpoch("eth:1", "tok1", "tok3", "30 0xc")).toBe("tok3 30 0xc");
      expect(await ttl()).toBeGreaterThan(SHARED_CACHE_TTL_MS - 60_000);
      expect(await ttl()).toBeLessThanOrEqual(SHARED_CACHE_TTL_MS);
    });

    it("misses an absent key and deletes", async () => {
      expect(await cache.get("absent")).toBeUndefined();
      await cache.set("gone", Buffer.from("1"));
      await cache.delete("gone");
      expect(await cache.get("gone")).toBeUndefined();
    });

    it("misses a key of the wrong type instead of failing", async () => {
      await inspect.command(["LPUSH", "t1:cache:list", "x"]);
      reported.length = 0;
      expect(await cache.get("list")).toBeUndefined();
      expect(reported[0]?.store).toBe("cache");
    });
  });

  describe("while Redis is down", () => {
    it("rate limits count in this instance, the cache misses and drops writes", async () => {
      const down = new Promise<void>((resolve) => {
        const stop = client.onStateChange((s) => s === "down" && (stop(), resolve()));
      });
      await redis.stop();
      await down;
      expect(await limits.take(window("rl:outage", 2, 5000), 1)).toBe(-1);
      expect(await limits.take(window("rl:outage", 2, 5000), 1)).toBe(-1);
      expect(await limits.take(window("rl:outage", 2, 5000), 1)).toBe(0);
      await expect(cache.set("k", Buffer.from("v"))).resolves.toBe(false); // said dropped, so the cache does not count it stored
      expect(await cache.get("k")).toBeUndefined();

      const ready = new Promise<void>((resolve) => {
        const stop = client.onStateChange((s) => s === "ready" && (stop(), resolve()));
      });
      await redis.start();
      await ready;
      // Back in Redis (restarted empty): the outage's local counts are not written back.
      // With a limit of 1 this fits only a counter that starts from 0.
      expect(await limits.take(window("rl:outage", 1, 5000), 1)).toBe(-1);
    });
  });
});

describeRequiring(redisRequirement, "rate limits on a Redis Cluster", () => {
  let redis: RedisServer;
  let client: RedisClient;

  beforeAll(async () => {
    const dir = testTempDir("redis-cluster-");
    redis = await startRedisServer({ args: ["--cluster-enabled", "yes", "--cluster-config-file", join(dir, "nodes.conf")] });
    client = new RedisClient({ url: redis.url });
    await client.ready();
    // A one-node cluster owning every slot: a script's keys must still share one slot, as on a real cluster.
    await client.command(["CLUSTER", "ADDSLOTSRANGE", 0, 16383]);
    for (const until = performance.now() + 10_000; !String(await client.command(["CLUSTER", "INFO"])).includes("cluster_state:ok"); ) {
      if (performance.now() > until) throw new Error("the one-node cluster did not become ok");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });
  afterAll(async () => {
    await client?.close();
    await redis?.stop();
  });

  it("one script counts a key's second and day windows: they share a hash slot", async () => {
    // Found from outside: the two counters hashed to different slots, every count failed with CROSSSLOT, and limits
    // were counted per instance while nodegate_redis_up read 1.
    const reported: unknown[] = [];
    const limiter = new RateLimiter(new RedisRateLimitStore(client, { keyPrefix: "nodegate:", fallback: new MemoryRateLimitStore(), report: (_store, err) => reported.push(err) }));
    const limit = { requestsPerSecond: 100, requestsPerDay: 3 };
    const verdicts = [];
    for (let i = 0; i < 4; i++) verdicts.push((await limiter.take("key:0123456789", limit, 1)).ok);
    expect(verdicts).toEqual([true, true, true, false]);
    expect(reported).toEqual([]);
    const counters = ((await client.command(["KEYS", "nodegate:rl:*"])) as Buffer[]).map(String).sort();
    expect(counters).toHaveLength(2);
    expect(counters.every((k) => k.startsWith("nodegate:rl:{key:0123456789}:"))).toBe(true);
  });
});

describeRequiring(redisRequirement, "createStores with Redis", () => {
  it("a rate-limit count does not wait behind a large cached value on its way", async () => {
    // Found from outside: on one pipelined connection, counts (on every request's path) waited 333 ms behind 25 MB
    // cached answers.
    const redis = await startRedisServer();
    const proxy = await startTcpProxy(redis.port);
    const stores = createStores({ redisUrl: `redis://127.0.0.1:${proxy.port}`, keyPrefix: "two:" }, pino({ level: "silent" }), new Metrics({ processMetrics: false }));
    try {
      for (const until = performance.now() + 5000; ; ) {
        await stores.cache.set("warm", Buffer.from("x"));
        if ((await stores.cache.get("warm")) !== undefined) break;
        if (performance.now() > until) throw new Error("the cache's connection did not become ready");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await stores.redis?.ready();
      const large = Buffer.alloc(8 * 1024 * 1024, 9);
      await stores.cache.set("large", large);
      // Replies pass at 3.2 MB/s: the value takes about 2.6 s to arrive.
      proxy.throttleReplies(3_200_000);
      const order: string[] = [];
      const got = (async () => order.push(`cache ${(await stores.cache.get("large"))?.length}`))();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const counted = (async () => order.push(`count ${await stores.rateLimits.take([{ counter: "rl:{key:two}:s:1", limit: 10, ttlMs: 60_000 }], 1)}`))();
      await Promise.all([got, counted]);
      expect(order).toEqual(["count -1", `cache ${large.length}`]);
      // Counted in Redis, not in this instance's fallback.
      proxy.throttleReplies(undefined);
      expect(String(await stores.redis?.command(["GET", "two:rl:{key:two}:s:1"]))).toBe("1");
    } finally {
      await stores.close();
      await proxy.close();
      await redis.stop();
    }
  });
});

describeRequiring(redisRequirement, "createStores with one of its two Redis connections refused", () => {
  it("says which store falls back, and reads nodegate_redis_up 0 while it does", async () => {
    // Found from outside: the cache's connection alone down was logged as "rate limits are counted per instance and
    // the cache misses", though the counts still went to Redis.
    const redis = await startRedisServer({ args: ["--maxclients", "1"] });
    const lines: { msg: string }[] = [];
    const log = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line) as { msg: string }) });
    const metrics = new Metrics({ processMetrics: false });
    const stores = createStores({ redisUrl: redis.url }, log, metrics);
    try {
      await expect.poll(() => lines.filter((l) => l.msg.startsWith("redis unavailable")).length, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
      const said = new Set(lines.filter((l) => l.msg.startsWith("redis unavailable")).map((l) => l.msg));
      // One connection got the only place; the other names what it leaves to this instance.
      expect(said.size).toBe(1);
      expect(["redis unavailable: rate limits are counted per instance until it is back", "redis unavailable: the cache misses until it is back"]).toContain([...said][0]);
      expect(lines.some((l) => l.msg.startsWith("redis connected"))).toBe(false);
      expect(await metrics.registry.getSingleMetricAsString("nodegate_redis_up")).toMatch(/nodegate_redis_up 0/);
    } finally {
      await stores.close();
      await redis.stop();
    }
  });
});
