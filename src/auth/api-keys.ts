/**
 * The API keys nodegate accepts, with their plans, secrets and allowlists.
 * Lookup compares in constant time, so a caller cannot learn a key byte by
 * byte from response timing.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { Allowlists, KeyConfig, Plan, RateLimit } from "../config/config.js";

export interface ApiKey {
  /** A safe-to-log name derived from a hash of the key. */
  readonly label: string;
  readonly plan: Plan;
  /** Effective limits: the key's own settings over its plan's defaults. */
  readonly rateLimit: RateLimit;
  /** SHA-256 of the secret, when the key requires one. */
  readonly secretDigest: Buffer | undefined;
  readonly allowlists: Allowlists | undefined;
}

export function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/** Constant-time comparison of a candidate against a stored digest. */
export function matchesDigest(candidate: string, stored: Buffer): boolean {
  return timingSafeEqual(digest(candidate), stored);
}

export class ApiKeyStore {
  readonly #keys: { digest: Buffer; key: ApiKey }[];
  /**
   * Keys already matched, by their text: a hash lookup costs the same whatever
   * a wrong key shares with a right one, so it leaks nothing byte by byte, and
   * it spares a SHA-256 per request. Only configured keys ever get in.
   */
  readonly #matched = new Map<string, ApiKey>();

  constructor(keys: readonly KeyConfig[], plans: Readonly<Record<Plan, RateLimit>>) {
    this.#keys = keys.map((k) => ({
      digest: digest(k.key),
      key: {
        label: `key:${digest(k.key).toString("hex").slice(0, 10)}`,
        plan: k.plan,
        rateLimit: { ...plans[k.plan], ...k.rateLimit },
        secretDigest: k.secret === undefined ? undefined : digest(k.secret),
        allowlists: k.allowlists,
      },
    }));
  }

  /** The matching key, or undefined. Every stored key is compared, match or not. */
  lookup(candidate: string): ApiKey | undefined {
    const known = this.#matched.get(candidate);
    if (known !== undefined) return known;
    // Hashing first gives equal-length inputs, as timingSafeEqual requires.
    const d = digest(candidate);
    let found: ApiKey | undefined;
    for (const entry of this.#keys) {
      if (timingSafeEqual(entry.digest, d)) found = entry.key;
    }
    if (found !== undefined) this.#matched.set(candidate, found);
    return found;
  }

  get size(): number {
    return this.#keys.length;
  }

  /** Whether some key is let in only from certain user agents: an answer may then depend on the User-Agent. */
  get screensUserAgents(): boolean {
    return this.#keys.some((entry) => (entry.key.allowlists?.userAgents?.length ?? 0) > 0);
  }
}
