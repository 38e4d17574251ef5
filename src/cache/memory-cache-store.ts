/**
 * The in-process cache store: least recently used entries go first once the
 * values and keys held pass a byte budget, so memory stays bounded however
 * large the answers are (one eth_getBlockReceipts can be megabytes).
 */
import type { CacheStore } from "./store.js";

export interface MemoryCacheStoreOptions {
  /** Most bytes of keys and values held. Default 64 MiB. */
  maxBytes?: number;
  /** The clock, in ms; injectable so expiry can be tested without waiting. */
  now?: () => number;
}

interface Entry {
  value: Buffer;
  /** Epoch ms; Infinity when the entry has no TTL. */
  expiresAt: number;
  bytes: number;
}

export class MemoryCacheStore implements CacheStore {
  readonly maxBytes: number;
  readonly #now: () => number;
  /** Map order is recency order: the first entry is the least recently used. */
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;

  constructor(options: MemoryCacheStoreOptions = {}) {
    this.maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
    this.#now = options.now ?? Date.now;
  }

  /** Bytes of keys and values held now. */
  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: string): Buffer | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.#now()) {
      this.delete(key);
      return undefined;
    }
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: Buffer, ttlMs?: number): void {
    this.delete(key);
    const bytes = Buffer.byteLength(key) + value.length;
    // A value larger than the whole budget would only evict everything else and then itself.
    if (bytes > this.maxBytes) return;
    while (this.#bytes + bytes > this.maxBytes) {
      const oldest = this.#entries.keys().next();
      if (oldest.done === true) break;
      this.delete(oldest.value);
    }
    this.#entries.set(key, { value, bytes, expiresAt: ttlMs === undefined ? Number.POSITIVE_INFINITY : this.#now() + ttlMs });
    this.#bytes += bytes;
  }

  delete(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
  }

  async close(): Promise<void> {
    this.#entries.clear();
    this.#bytes = 0;
  }
}
