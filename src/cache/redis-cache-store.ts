/**
 * The cache store shared by several nodegate instances: values in Redis under
 * a key prefix, expiring with PX. While Redis is unreachable or refuses
 * (OOM, READONLY), reads miss and writes are dropped: a cache must not turn a
 * Redis outage into a nodegate outage.
 */
import type { RedisClient } from "../redis/resp-client.js";
import type { StoreErrorReporter } from "../stores/store-errors.js";
import type { CacheStore, EpochStore } from "./store.js";

// KEYS: the token's key; ARGV: a fresh token, the token the caller holds ("" for none), the anchor to record ("" for
// none), what the caller last saw beside its token, the key's time to live (ms). An anchor is recorded only over the one
// the caller saw (and checked on its node's chain), and only above it: every anchor recorded beside a token is on the
// chain of the one before. The key's life is renewed only by a caller that holds the token (uses it): a process kept
// off it (its node lacks the block recorded there, e.g. a chain of the same genesis restarted) must not keep it alive.
const READ_EPOCH = `local v = redis.call('GET', KEYS[1])
if not v then
  v = ARGV[1]
  if ARGV[3] ~= '' then v = v .. ' ' .. ARGV[3] end
  redis.call('SET', KEYS[1], v, 'PX', ARGV[5])
  return v
end
local token, was = string.match(v, '^(%S+) ?(.*)$')
if ARGV[3] ~= '' and token == ARGV[2] and was == ARGV[4] then
  local n = string.match(was, '^(%d+) ')
  if not n or tonumber(string.match(ARGV[3], '^%d+')) > tonumber(n) then v = token .. ' ' .. ARGV[3] end
end
if token == ARGV[2] then redis.call('SET', KEYS[1], v, 'PX', ARGV[5]) end
return v`;

// KEYS: the token's key; ARGV: the fresh token, the token the caller holds ("" for none: replaced whatever it is), the
// final block to record beside the fresh one ("" for none), the key's time to live (ms).
const BUMP_EPOCH = `local v = redis.call('GET', KEYS[1])
if not v or ARGV[2] == '' or string.match(v, '^%S+') == ARGV[2] then v = ARGV[1]; if ARGV[3] ~= '' then v = v .. ' ' .. ARGV[3] end end
redis.call('SET', KEYS[1], v, 'PX', ARGV[4])
return v`;

export interface RedisCacheStoreOptions {
  /** Prepended to every key ("nodegate:" gives "nodegate:cache:<key>"). */
  keyPrefix: string;
  report: StoreErrorReporter;
}

/**
 * A final answer never changes, but Redis has no byte budget of its own (its
 * default policy refuses writes when full, and then the shared rate-limit
 * counts fall back to each instance): every value expires, so the shared
 * cache holds about a day's distinct reads. It also bounds what a dev
 * chain's rewind leaves behind for processes that did not see it.
 */
export const SHARED_CACHE_TTL_MS = 24 * 60 * 60 * 1000;

export class RedisCacheStore implements CacheStore, EpochStore {
  readonly shared = true;
  readonly epochs: EpochStore = this;
  readonly #client: RedisClient;
  readonly #prefix: string;
  readonly #report: StoreErrorReporter;

  constructor(client: RedisClient, options: RedisCacheStoreOptions) {
    this.#client = client;
    this.#prefix = `${options.keyPrefix}cache:`;
    this.#report = options.report;
  }

  async get(key: string): Promise<Buffer | undefined> {
    if (this.#client.state !== "ready") return undefined;
    try {
      const reply = await this.#client.command(["GET", this.#prefix + key]);
      return Buffer.isBuffer(reply) ? reply : undefined;
    } catch (err) {
      this.#report("cache", err);
      return undefined;
    }
  }

  /** Stores `value` for `ttlMs`, by default SHARED_CACHE_TTL_MS. */
  async set(key: string, value: Buffer, ttlMs = SHARED_CACHE_TTL_MS): Promise<boolean> {
    if (this.#client.state !== "ready") return false;
    const args = ["SET", this.#prefix + key, value, "PX", Math.max(1, Math.ceil(ttlMs))];
    try {
      await this.#client.command(args);
      return true;
    } catch (err) {
      this.#report("cache", err);
      return false;
    }
  }

  readEpoch(scope: string, fresh: string, mine = "", anchor = "", seen = ""): Promise<string | undefined> {
    return this.#epochScript(READ_EPOCH, scope, [fresh, mine, anchor, seen, String(SHARED_CACHE_TTL_MS)]);
  }

  bumpEpoch(scope: string, mine: string | undefined, fresh: string, anchor = ""): Promise<string | undefined> {
    return this.#epochScript(BUMP_EPOCH, scope, [fresh, mine ?? "", anchor, String(SHARED_CACHE_TTL_MS)]);
  }

  /**
   * The token's key lives as long as an answer, from each reading or record: one no process read for that long names
   * only answers gone too, and a fresh token replaces it. Without an expiry, the final block a dev chain long gone
   * recorded there kept every later chain of its genesis off the store until it reached that block (found from
   * outside). Evicted or lost, a fresh token replaces it too, which no stored answer carries.
   */
  async #epochScript(script: string, scope: string, args: string[]): Promise<string | undefined> {
    if (this.#client.state !== "ready") return undefined;
    try {
      const reply = await this.#client.command(["EVAL", script, 1, `${this.#prefix}epoch:${scope}`, ...args]);
      return Buffer.isBuffer(reply) || typeof reply === "string" ? String(reply) : undefined;
    } catch (err) {
      this.#report("cache", err);
      return undefined;
    }
  }

  async delete(key: string): Promise<void> {
    if (this.#client.state !== "ready") return;
    try {
      await this.#client.command(["DEL", this.#prefix + key]);
    } catch (err) {
      this.#report("cache", err);
    }
  }

  /** The Redis connection is shared with the other stores; its owner closes it. */
  async close(): Promise<void> {}
}
