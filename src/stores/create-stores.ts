/**
 * The stores behind rate limits and the cache, chosen by the `stores`
 * settings: in process by default, in Redis when `stores.redisUrl` is set so
 * that several instances share them. nodegate starts and serves whether or
 * not Redis answers; the Redis state is logged on each change and exported as
 * the nodegate_redis_up gauge.
 */
import type { Logger } from "pino";
import { Counter, Gauge } from "prom-client";
import { MemoryRateLimitStore, type RateLimitStore } from "../auth/rate-limiter.js";
import { RedisRateLimitStore } from "../auth/redis-rate-limit-store.js";
import { MemoryCacheStore } from "../cache/memory-cache-store.js";
import { RedisCacheStore } from "../cache/redis-cache-store.js";
import type { CacheStore } from "../cache/store.js";
import type { StoresConfig } from "../config/config.js";
import type { Metrics } from "../observability/metrics.js";
import { RedisClient, redactRedisUrl } from "../redis/resp-client.js";
import { type StoreErrorReporter, throttledStoreErrors } from "./store-errors.js";

export const DEFAULT_KEY_PREFIX = "nodegate:";
export const DEFAULT_REDIS_TIMEOUT_MS = 500;

export interface Stores {
  kind: "memory" | "redis";
  rateLimits: RateLimitStore;
  cache: CacheStore;
  /** The rate limits' connection to Redis, when kind is redis (the cache has one of its own). */
  redis: RedisClient | undefined;
  close(): Promise<void>;
}

export function createStores(config: StoresConfig | undefined, log: Logger, metrics: Metrics, cacheMaxBytes?: number): Stores {
  const local = new MemoryRateLimitStore();
  if (config?.redisUrl === undefined) {
    const cache = new MemoryCacheStore(cacheMaxBytes === undefined ? {} : { maxBytes: cacheMaxBytes });
    return { kind: "memory", rateLimits: local, cache, redis: undefined, close: () => cache.close() };
  }

  const shown = redactRedisUrl(config.redisUrl);
  const keyPrefix = config.keyPrefix ?? DEFAULT_KEY_PREFIX;
  // Two connections: Redis answers each connection's commands in order, and a rate-limit count, on every request's
  // path, must not wait behind a large cached value on its way (found from outside: counts waited 333 ms behind 25 MB
  // answers).
  const limitsClient = new RedisClient({ url: config.redisUrl, commandTimeoutMs: config.timeoutMs ?? DEFAULT_REDIS_TIMEOUT_MS });
  const cacheClient = new RedisClient({ url: config.redisUrl, commandTimeoutMs: config.timeoutMs ?? DEFAULT_REDIS_TIMEOUT_MS });
  const clients = [limitsClient, cacheClient];
  const up = new Gauge({
    name: "nodegate_redis_up",
    help: "1 while both connections to the shared Redis store (rate limits, cache) are up; 0 while either is down (the log says which: rate limits counted per instance, or the cache missing).",
    registers: [metrics.registry],
    // With workers, a scrape reads 1 only when every worker is connected (summed, two connected workers read 2).
    aggregator: "min",
  });
  up.set(0);
  // Reconnect attempts fail one after another during an outage: say so once per connection, naming what falls back
  // (found from outside: the cache's connection alone down was told as rate limits counted per instance), and once
  // when both are back. The gauge reads 1 only while both are connected.
  const roles = [
    { client: limitsClient, fallback: "rate limits are counted per instance until it is back" },
    { client: cacheClient, fallback: "the cache misses until it is back" },
  ];
  let connected = false;
  for (const role of roles) {
    let announcedDown = false;
    role.client.onStateChange((state, error) => {
      const allReady = clients.every((c) => c.state === "ready");
      up.set(allReady ? 1 : 0);
      if (state === "ready") announcedDown = false;
      else if (state === "down" && !announcedDown) {
        announcedDown = true;
        log.warn({ redis: shown, err: error?.message }, `redis unavailable: ${role.fallback}`);
      }
      if (allReady && !connected) log.info({ redis: shown }, "redis connected: rate limits and cache are shared with the other instances");
      connected = allReady;
    });
  }
  // A connected Redis may still refuse (out of memory, a read-only replica): redis_up stays 1 then, so the refusals
  // are counted where an alert can see them (found from outside: a full Redis turned shared limits per-instance unseen).
  const failures = new Counter({
    name: "nodegate_redis_command_failures_total",
    help: "Redis commands that failed while connected (refused: out of memory, read-only; or timed out); that store fell back to this instance for them.",
    labelNames: ["store"],
    registers: [metrics.registry],
  });
  const warn = throttledStoreErrors(log);
  const report: StoreErrorReporter = (store, err) => {
    failures.inc({ store });
    warn(store, err);
  };
  return {
    kind: "redis",
    rateLimits: new RedisRateLimitStore(limitsClient, { keyPrefix, fallback: local, report }),
    cache: new RedisCacheStore(cacheClient, { keyPrefix, report }),
    redis: limitsClient,
    close: async () => {
      await Promise.all(clients.map((c) => c.close()));
    },
  };
}
