/**
 * The API keys nodegate accepts. Lookup compares in constant time, so a
 * caller cannot learn a key byte by byte from response timing.
 */
import { createHash, timingSafeEqual } from "node:crypto";

export interface ApiKey {
  /** The key itself; never logged. */
  readonly key: string;
  /** A safe-to-log name derived from a hash of the key. */
  readonly label: string;
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

export class ApiKeyStore {
  readonly #keys: { digest: Buffer; key: ApiKey }[];

  constructor(keys: readonly string[]) {
    this.#keys = keys.map((key) => ({ digest: digest(key), key: { key, label: `key:${digest(key).toString("hex").slice(0, 10)}` } }));
  }

  /** The matching key, or undefined. Every stored key is compared, match or not. */
  lookup(candidate: string): ApiKey | undefined {
    // Hashing first gives equal-length inputs, as timingSafeEqual requires.
    const d = digest(candidate);
    let found: ApiKey | undefined;
    for (const entry of this.#keys) {
      if (timingSafeEqual(entry.digest, d)) found = entry.key;
    }
    return found;
  }

  get size(): number {
    return this.#keys.length;
  }
}
