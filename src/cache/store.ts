/**
 * Where cached answers live. The cache itself (what to cache, keys, TTLs by
 * method) is built on top of this; the store only keeps bytes: in process
 * (MemoryCacheStore) or shared by several instances (RedisCacheStore).
 * A store never fails a request: an unreachable store is a miss.
 */

export interface CacheStore {
  /**
   * Shared by several processes, which may serve other chains under the same network name (Redis): what a key
   * names must then include the chain.
   */
  readonly shared?: boolean;
  /** The value stored under `key`, or undefined (absent, expired, or the store is unreachable). */
  get(key: string): Buffer | undefined | Promise<Buffer | undefined>;
  /** Stores `value` under `key`, for `ttlMs` when given (else until evicted); says whether it was stored. */
  set(key: string, value: Buffer, ttlMs?: number): boolean | Promise<boolean>;
  /** Removes `key` if present. */
  delete(key: string): void | Promise<void>;
  /** Releases connections and memory. */
  close(): Promise<void>;
}
