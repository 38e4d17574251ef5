/**
 * Per-key request limits, per second and per UTC day, counted in fixed
 * windows. A batch of N counts as N + 1, as the provider counts it. A refused
 * request counts for nothing: a batch that does not fit what is left of a
 * window leaves that rest to smaller requests (counting it would lock the key
 * out until the window ends, a whole day for the daily limit). Counters live
 * behind RateLimitStore so several instances can share them (Redis).
 */
import type { RateLimit } from "../config/config.js";

/** One window a request is counted in: its counter, the most it may hold, and how long it lives. */
export interface CountWindow {
  counter: string;
  limit: number;
  ttlMs: number;
}

export interface RateLimitStore {
  /**
   * Adds `cost` to the counter of every window when each stays within its
   * limit, all or nothing, atomically. Returns -1 when counted, else the index
   * of the first window `cost` does not fit (nothing was added).
   */
  take(windows: readonly CountWindow[], cost: number): number | Promise<number>;
  close?(): Promise<void>;
}

/** The in-process store: counters in a Map, old windows dropped as they pass. */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly #counters = new Map<string, { total: number; expires: number }>();
  #sweepAt = 0;

  take(windows: readonly CountWindow[], cost: number): number {
    const now = Date.now();
    if (now >= this.#sweepAt) {
      for (const [k, v] of this.#counters) if (v.expires <= now) this.#counters.delete(k);
      this.#sweepAt = now + 1000;
    }
    for (let i = 0; i < windows.length; i++) {
      const w = windows[i] as CountWindow;
      if (this.#total(w.counter, now) + cost > w.limit) return i;
    }
    for (const w of windows) {
      const entry = this.#counters.get(w.counter);
      if (entry === undefined || entry.expires <= now) this.#counters.set(w.counter, { total: cost, expires: now + w.ttlMs });
      else entry.total += cost;
    }
    return -1;
  }

  /** What `counter` holds now (0 for a window that has passed). */
  #total(counter: string, now: number): number {
    const entry = this.#counters.get(counter);
    return entry === undefined || entry.expires <= now ? 0 : entry.total;
  }
}

export type LimitVerdict = { ok: true } | { ok: false; window: "second" | "day"; retryAfterSeconds: number };

const DAY_MS = 86_400_000;

export class RateLimiter {
  readonly #store: RateLimitStore;

  constructor(store: RateLimitStore) {
    this.#store = store;
  }

  /** Counts `cost` requests for `keyLabel` when they fit its limits, and says whether they did. */
  async take(keyLabel: string, limit: RateLimit, cost: number, now = Date.now()): Promise<LimitVerdict> {
    const windows: CountWindow[] = [];
    const kinds: ("second" | "day")[] = [];
    const day = Math.floor(now / DAY_MS);
    // The key's label is a Redis Cluster hash tag: one script counts both windows, and a cluster runs a script only on
    // keys of one slot (found from outside: every count failed with CROSSSLOT, and limits were per instance).
    if (limit.requestsPerSecond > 0) {
      windows.push({ counter: `rl:{${keyLabel}}:s:${Math.floor(now / 1000)}`, limit: limit.requestsPerSecond, ttlMs: 2000 });
      kinds.push("second");
    }
    if (limit.requestsPerDay > 0) {
      windows.push({ counter: `rl:{${keyLabel}}:d:${day}`, limit: limit.requestsPerDay, ttlMs: DAY_MS + 60_000 });
      kinds.push("day");
    }
    if (windows.length === 0) return { ok: true };
    const over = await this.#store.take(windows, cost);
    if (over < 0) return { ok: true };
    if (kinds[over] === "second") return { ok: false, window: "second", retryAfterSeconds: 1 };
    return { ok: false, window: "day", retryAfterSeconds: Math.max(1, Math.ceil(((day + 1) * DAY_MS - now) / 1000)) };
  }
}
