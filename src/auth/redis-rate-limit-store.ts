/**
 * Rate-limit counters in Redis, so every nodegate instance behind a load
 * balancer counts against the same per-key limits. One atomic script per
 * count: INCRBY, and PEXPIRE when the counter has no expiry yet (so a window
 * always ends, even for a counter left behind without one).
 *
 * Redis unreachable or refusing: nodegate fails open to per-instance
 * counters (the fallback store). Requests keep being served and each instance
 * still enforces the limits on what it sees; a key may get up to (instances x
 * limit) while Redis is away, and those counts are not written back.
 */
import { createHash } from "node:crypto";
import { type RedisClient, RedisReplyError } from "../redis/resp-client.js";
import type { StoreErrorReporter } from "../stores/store-errors.js";
import type { RateLimitStore } from "./rate-limiter.js";

const INCREMENT = `local total = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return total`;
const INCREMENT_SHA = createHash("sha1").update(INCREMENT).digest("hex");

export interface RedisRateLimitStoreOptions {
  /** Prepended to every counter ("nodegate:" gives "nodegate:rl:key:ab12...:s:1700000000"). */
  keyPrefix: string;
  /** Counts while Redis cannot. */
  fallback: RateLimitStore;
  report: StoreErrorReporter;
}

export class RedisRateLimitStore implements RateLimitStore {
  readonly #client: RedisClient;
  readonly #prefix: string;
  readonly #fallback: RateLimitStore;
  readonly #report: StoreErrorReporter;

  constructor(client: RedisClient, options: RedisRateLimitStoreOptions) {
    this.#client = client;
    this.#prefix = options.keyPrefix;
    this.#fallback = options.fallback;
    this.#report = options.report;
  }

  async increment(counter: string, cost: number, ttlMs: number): Promise<number> {
    // While disconnected, skip the attempt (it would fail at once anyway).
    if (this.#client.state !== "ready") return this.#fallback.increment(counter, cost, ttlMs);
    try {
      return await this.#incrementInRedis(this.#prefix + counter, cost, ttlMs);
    } catch (err) {
      this.#report("rate limits", err);
      return this.#fallback.increment(counter, cost, ttlMs);
    }
  }

  async #incrementInRedis(key: string, cost: number, ttlMs: number): Promise<number> {
    let reply;
    try {
      reply = await this.#client.command(["EVALSHA", INCREMENT_SHA, 1, key, cost, ttlMs]);
    } catch (err) {
      // First use on this Redis (or after a restart or SCRIPT FLUSH): EVAL also caches the script.
      if (!(err instanceof RedisReplyError) || err.kind !== "NOSCRIPT") throw err;
      reply = await this.#client.command(["EVAL", INCREMENT, 1, key, cost, ttlMs]);
    }
    if (typeof reply !== "number") throw new Error(`the counter script answered ${typeof reply}, not an integer`);
    return reply;
  }

  /** The Redis connection is shared with the other stores; its owner closes it. */
  async close(): Promise<void> {}
}
