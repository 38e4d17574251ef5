/**
 * The in-process cache store: least recently used entries go first once the
 * keys and values held pass a byte budget, so memory stays bounded however
 * large the answers are (one eth_getBlockReceipts can be megabytes). A Map
 * keeps insertion order, so re-inserting on a hit makes its first entry the
 * least recently used one.
 */
import { keptCopy } from "./kept-copy.js";
import type { CacheStore } from "./store.js";

export interface MemoryCacheStoreOptions {
  /** Budget for stored values plus their keys, in bytes. Default 64 MiB. */
  maxBytes?: number;
  /** Largest single value kept; larger ones are not stored. Default a quarter of maxBytes. */
  maxEntryBytes?: number;
  /** The clock, in ms; injectable so expiry can be tested without waiting. */
  now?: () => number;
}

interface Entry {
  value: Buffer;
  /** Epoch ms; Infinity when the entry has no TTL. */
  expiresAt: number;
  bytes: number;
}

/**
 * What an entry's objects take beyond its key's characters and its value's
 * bytes: the Map slot, the entry record, the Buffer and its backing store's
 * bookkeeping (measured on Node 20: about 475 bytes). Left uncounted, a cache
 * full of small answers (balances, nonces) held 3.7 times its budget.
 */
export const ENTRY_OVERHEAD_BYTES = 480;

/** What an entry holds on to: the key's characters, the value's backing memory and the objects around them. */
function entryCost(key: string, value: Buffer): number {
  return key.length * 2 + value.buffer.byteLength + ENTRY_OVERHEAD_BYTES;
}

export class MemoryCacheStore implements CacheStore {
  readonly maxBytes: number;
  readonly #maxEntryBytes: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;
  /** Entries dropped to stay within the budget. */
  evictions = 0;

  constructor(options: MemoryCacheStoreOptions = {}) {
    this.maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
    this.#maxEntryBytes = options.maxEntryBytes ?? Math.floor(this.maxBytes / 4);
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

  set(key: string, bytes: Buffer, ttlMs?: number): boolean {
    this.delete(key);
    const value = keptCopy(bytes);
    const cost = entryCost(key, value);
    // A value larger than its share of the budget would only evict everything else.
    if (cost > this.#maxEntryBytes) return false;
    this.#entries.set(key, { value, bytes: cost, expiresAt: ttlMs === undefined ? Number.POSITIVE_INFINITY : this.#now() + ttlMs });
    this.#bytes += cost;
    for (const [oldest, stored] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= stored.bytes;
      this.evictions++;
    }
    return true;
  }

  delete(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
  }

  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }

  async close(): Promise<void> {
    this.clear();
  }
}
