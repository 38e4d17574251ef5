/**
 * Per-key request limits, per second and per UTC day, counted in fixed
 * windows. A batch of N counts as N + 1, as the provider counts it. Counters
 * live behind RateLimitStore so several instances can share them (Redis).
 */
import type { RateLimit } from "../config.js";

export interface RateLimitStore {
  /** Adds `cost` to `counter` (which expires after `ttlMs`) and returns the new total. */
  increment(counter: string, cost: number, ttlMs: number): number | Promise<number>;
  close?(): Promise<void>;
}

/** The in-process store: counters in a Map, old windows dropped as they pass. */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly #counters = new Map<string, { total: number; expires: number }>();
  #sweepAt = 0;

  increment(counter: string, cost: number, ttlMs: number): number {
    const now = Date.now();
    if (now >= this.#sweepAt) {
      for (const [k, v] of this.#counters) if (v.expires <= now) this.#counters.delete(k);
      this.#sweepAt = now + 1000;
    }
    const entry = this.#counters.get(counter);
    if (entry === undefined || entry.expires <= now) {
      this.#counters.set(counter, { total: cost, expires: now + ttlMs });
      return cost;
    }
    entry.total += cost;
    return entry.total;
  }
}

export type LimitVerdict = { ok: true } | { ok: false; window: "second" | "day"; retryAfterSeconds: number };

const DAY_MS = 86_400_000;

export class RateLimiter {
  readonly #store: RateLimitStore;

  constructor(store: RateLimitStore) {
    this.#store = store;
  }

  /** Counts `cost` requests for `keyLabel` and says whether they fit its limits. */
  async take(keyLabel: string, limit: RateLimit, cost: number, now = Date.now()): Promise<LimitVerdict> {
    if (limit.requestsPerSecond > 0) {
      const second = Math.floor(now / 1000);
      const total = await this.#store.increment(`rl:${keyLabel}:s:${second}`, cost, 2000);
      if (total > limit.requestsPerSecond) return { ok: false, window: "second", retryAfterSeconds: 1 };
    }
    if (limit.requestsPerDay > 0) {
      const day = Math.floor(now / DAY_MS);
      const total = await this.#store.increment(`rl:${keyLabel}:d:${day}`, cost, DAY_MS + 60_000);
      if (total > limit.requestsPerDay) {
        return { ok: false, window: "day", retryAfterSeconds: Math.max(1, Math.ceil(((day + 1) * DAY_MS - now) / 1000)) };
      }
    }
    return { ok: true };
  }
}
