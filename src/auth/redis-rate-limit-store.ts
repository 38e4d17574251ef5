/**
 * Rate-limit counters in Redis, so every nodegate instance behind a load
 * balancer counts against the same per-key limits. One atomic script per
 * request: it checks that the cost fits every window's counter, then INCRBY
 * on each, and PEXPIRE when a counter has no expiry yet (so a window always
 * ends, even for a counter left behind without one). A cost that does not fit
 * adds nothing.
 *
 * Redis unreachable or refusing: nodegate fails open to per-instance
 * counters (the fallback store). Requests keep being served and each instance
 * still enforces the limits on what it sees; a key may get up to (instances x
 * limit) while Redis is away, and those counts are not written back.
 */
import { createHash } from "node:crypto";
import { type RedisClient, RedisReplyError } from "../redis/resp-client.js";
import type { StoreErrorReporter } from "../stores/store-errors.js";
import type { CountWindow, RateLimitStore } from "./rate-limiter.js";

// KEYS: the windows' counters; ARGV: the cost, then each window's limit and time to live (ms).
const TAKE = `local cost = tonumber(ARGV[1])
for i = 1, #KEYS do
  if tonumber(redis.call('GET', KEYS[i]) or '0') + cost > tonumber(ARGV[2 * i]) then return i - 1 end
end
for i = 1, #KEYS do
  redis.call('INCRBY', KEYS[i], cost)
  if redis.call('PTTL', KEYS[i]) < 0 then redis.call('PEXPIRE', KEYS[i], ARGV[2 * i + 1]) end
end
return -1`;
const TAKE_SHA = createHash("sha1").update(TAKE).digest("hex");

export interface RedisRateLimitStoreOptions {
  /** Prepended to every counter ("nodegate:" gives "nodegate:rl:{key:ab12...}:s:1700000000"). */
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

  async take(windows: readonly CountWindow[], cost: number): Promise<number> {
    // While disconnected, skip the attempt (it would fail at once anyway).
    if (this.#client.state !== "ready") return this.#fallback.take(windows, cost);
    try {
      return await this.#takeInRedis(windows, cost);
    } catch (err) {
      this.#report("rate limits", err);
      return this.#fallback.take(windows, cost);
    }
  }

  async #takeInRedis(windows: readonly CountWindow[], cost: number): Promise<number> {
    const args: (string | number)[] = [windows.length, ...windows.map((w) => this.#prefix + w.counter), cost];
    for (const w of windows) args.push(w.limit, w.ttlMs);
    let reply;
    try {
      reply = await this.#client.command(["EVALSHA", TAKE_SHA, ...args]);
    } catch (err) {
      // First use on this Redis (or after a restart or SCRIPT FLUSH): EVAL also caches the script.
      if (!(err instanceof RedisReplyError) || err.kind !== "NOSCRIPT") throw err;
      reply = await this.#client.command(["EVAL", TAKE, ...args]);
    }
    if (typeof reply !== "number") throw new Error(`the counter script answered ${typeof reply}, not an integer`);
    return reply;
  }

  /** The Redis connection is shared with the other stores; its owner closes it. */
  async close(): Promise<void> {}
}
