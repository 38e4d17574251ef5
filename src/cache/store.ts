/**
 * Where cached answers live. The cache itself (what to cache, keys, TTLs by
 * method) is built on top of this; the store only keeps bytes: in process
 * (MemoryCacheStore) or shared by several instances (RedisCacheStore).
 * A store never fails a request: an unreachable store is a miss.
 */

/**
 * Where a shared store keeps, for one network's chain, the token its keys
 * carry (see SharedEpoch): a text "<token>" or "<token> <number> <hash>",
 * the last final block a process recorded beside it.
 */
export interface EpochStore {
  /**
   * The text in force for `scope`, made `fresh` (with `anchor` beside it) if there is none. `anchor` ("<number>
   * <hash>") is recorded beside the token if the token is still `mine`, what is beside it is still `seen` (as written,
   * "" for nothing) and `anchor` names a higher block. Undefined when the store cannot say.
   */
  readEpoch(scope: string, fresh: string, mine?: string, anchor?: string, seen?: string): Promise<string | undefined>;
  /**
   * Replaces the token by `fresh` if it is still `mine` (always, when `mine` is undefined), with `anchor` recorded
   * beside it; the text in force after.
   */
  bumpEpoch(scope: string, mine: string | undefined, fresh: string, anchor?: string): Promise<string | undefined>;
}

export interface CacheStore {
  /**
   * Shared by several processes, which may serve other chains under the same network name (Redis): what a key
   * names must then include the chain.
   */
  readonly shared?: boolean;
  /** A shared store's rewind tokens, which every process using it agrees on. */
  readonly epochs?: EpochStore;
  /** The value stored under `key`, or undefined (absent, expired, or the store is unreachable). */
  get(key: string): Buffer | undefined | Promise<Buffer | undefined>;
  /** Stores `value` under `key`, for `ttlMs` when given (else until evicted); says whether it was stored. */
  set(key: string, value: Buffer, ttlMs?: number): boolean | Promise<boolean>;
  /** Removes `key` if present. */
  delete(key: string): void | Promise<void>;
  /** Releases connections and memory. */
  close(): Promise<void>;
}
