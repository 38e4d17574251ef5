/**
 * The in-process cache store: least recently used entries go first once the
 * stored bytes exceed the budget. A Map keeps insertion order, so re-inserting
 * on a hit makes the Map's first entry the least recently used one.
 */
import type { CacheStore } from "./cache-store.js";

export interface MemoryCacheStoreOptions {
  /** Budget for stored values plus their keys, in bytes. */
  maxBytes: number;
  /** Largest single value kept; larger ones are not stored. Default a quarter of maxBytes. */
  maxEntryBytes?: number;
}

export class MemoryCacheStore implements CacheStore {
  readonly #entries = new Map<string, Buffer>();
  readonly #maxBytes: number;
  readonly #maxEntryBytes: number;
  #bytes = 0;
  /** Entries dropped to stay within the budget. */
  evictions = 0;

  constructor(options: MemoryCacheStoreOptions) {
    this.#maxBytes = options.maxBytes;
    this.#maxEntryBytes = options.maxEntryBytes ?? Math.floor(options.maxBytes / 4);
  }

  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: string): Buffer | undefined {
    const value = this.#entries.get(key);
    if (value !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, value);
    }
    return value;
  }

  set(key: string, bytes: Buffer): void {
    // A small slice of a larger buffer would pin all of it: keep a copy instead.
    const value = bytes.length * 2 < bytes.buffer.byteLength ? Buffer.from(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)) : bytes;
    const cost = entryCost(key, value);
    if (cost > this.#maxEntryBytes) return;
    const old = this.#entries.get(key);
    if (old !== undefined) {
      this.#entries.delete(key);
      this.#bytes -= entryCost(key, old);
    }
    this.#entries.set(key, value);
    this.#bytes += cost;
    for (const [oldest, stored] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= entryCost(oldest, stored);
      this.evictions++;
    }
  }

  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }
}

/** What an entry holds on to: the key's characters and the value's backing memory. */
function entryCost(key: string, value: Buffer): number {
  return key.length * 2 + value.buffer.byteLength;
}
