/**
 * The Redis stores against a real redis-server: counters add up atomically
 * and always expire, the script survives SCRIPT FLUSH, a refusing or absent
 * Redis falls back (rate limits to this instance's counters, the cache to a
 * miss), and cached values keep their bytes and TTL.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryRateLimitStore } from "../../src/auth/rate-limiter.js";
import { RedisRateLimitStore } from "../../src/auth/redis-rate-limit-store.js";
import { RedisCacheStore, SHARED_CACHE_TTL_MS } from "../../src/cache/redis-cache-store.js";
import { RedisClient } from "../../src/redis/resp-client.js";
import { redisRequirement, type RedisServer, startRedisServer } from "../support/redis-server.js";
import { describeRequiring } from "../support/system-packages.js";

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
      await expect(cache.set("k", Buffer.from("v"))).resolves.toBeUndefined();
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
