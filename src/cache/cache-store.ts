/**
 * Where final answers are kept. The in-process LRU is the default; a shared
 * store (Redis) can implement the same two calls so several nodegate
 * instances serve each other's answers. Values are the result's JSON text as
 * the node wrote it.
 */
export interface CacheStore {
  /** The stored bytes, or undefined. May answer synchronously (in-process) or not (shared). */
  get(key: string): Buffer | undefined | Promise<Buffer | undefined>;
  /** Stores bytes under a key; a store may drop them (too large, evicted). */
  set(key: string, value: Buffer): void | Promise<void>;
  close?(): Promise<void>;
}
