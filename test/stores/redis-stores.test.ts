/**
 * The Redis stores against a real redis-server: counters add up atomically
 * and always expire, the script survives SCRIPT FLUSH, a refusing or absent
 * Redis falls back (rate limits to this instance's counters, the cache to a
 * miss), and cached values keep their bytes and TTL.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryRateLimitStore } from "../../src/auth/rate-limiter.js";
import { RedisRateLimitStore } from "../../src/auth/redis-rate-limit-store.js";
import { RedisCacheStore } from "../../src/cache/redis-cache-store.js";
import { RedisClient } from "../../src/redis/resp-client.js";
import { redisRequirement, type RedisServer, startRedisServer } from "../support/redis-server.js";
import { requiredTitle } from "../support/system-packages.js";

describe.skipIf(redisRequirement.skip)("Redis stores", () => {
  if (redisRequirement.missing !== undefined) {
    it(requiredTitle(redisRequirement), () => {
      throw new Error(redisRequirement.missing);
    });
    return;
  }

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

  describe("RedisRateLimitStore", () => {
    it("adds costs under the prefixed key and sets the window's expiry once", async () => {
      expect(await limits.increment("rl:a:s:1", 2, 60_000)).toBe(2);
      expect(await limits.increment("rl:a:s:1", 3, 60_000)).toBe(5);
      expect(await inspect.command(["GET", "t1:rl:a:s:1"])).toEqual(Buffer.from("5"));
      const ttl = (await inspect.command(["PTTL", "t1:rl:a:s:1"])) as number;
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    });

    it("counts concurrent increments from two connections exactly", async () => {
      const other = new RedisClient({ url: redis.url });
      try {
        await other.ready();
        const second = new RedisRateLimitStore(other, { keyPrefix: "t1:", fallback: new MemoryRateLimitStore(), report });
        const totals = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? limits : second).increment("rl:shared:d:1", 1, 60_000)));
        expect([...totals].sort((x, y) => x - y)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      } finally {
        await other.close();
      }
    });

    it("gives a counter left without an expiry one", async () => {
      await inspect.command(["SET", "t1:rl:stale", "7"]);
      expect(await limits.increment("rl:stale", 1, 5000)).toBe(8);
      expect((await inspect.command(["PTTL", "t1:rl:stale"])) as number).toBeGreaterThan(0);
    });

    it("loads its script again after SCRIPT FLUSH (a restarted or flushed Redis)", async () => {
      await inspect.command(["SCRIPT", "FLUSH"]);
      expect(await limits.increment("rl:after-flush", 1, 5000)).toBe(1);
      expect(await limits.increment("rl:after-flush", 1, 5000)).toBe(2);
    });

    it("counts in this instance when Redis refuses the command, and reports it", async () => {
      await inspect.command(["LPUSH", "t1:rl:broken", "not a counter"]);
      reported.length = 0;
      expect(await limits.increment("rl:broken", 4, 5000)).toBe(4);
      expect(await limits.increment("rl:broken", 1, 5000)).toBe(5);
      expect(fallback.increment("rl:broken", 0, 5000)).toBe(5);
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
      await cache.set("forever", Buffer.from("x"));
      expect(await inspect.command(["PTTL", "t1:cache:forever"])).toBe(-1);
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
      expect(await limits.increment("rl:outage", 1, 5000)).toBe(1);
      expect(await limits.increment("rl:outage", 1, 5000)).toBe(2);
      await expect(cache.set("k", Buffer.from("v"))).resolves.toBeUndefined();
      expect(await cache.get("k")).toBeUndefined();

      const ready = new Promise<void>((resolve) => {
        const stop = client.onStateChange((s) => s === "ready" && (stop(), resolve()));
      });
      await redis.start();
      await ready;
      // Back in Redis (restarted empty): the outage's local counts are not written back.
      expect(await limits.increment("rl:outage", 1, 5000)).toBe(1);
    });
  });
});
