/**
 * Who may call what, the same for both front doors: the key (path segment or
 * x-api-key), its secret (HTTP Basic with empty user), its allowlists and its
 * rate limits. Each check throws the provider's error as a GatewayError.
 */
import { badSecret, missingKey, overRateLimit, rateLimited, rejectedBySettings, unknownKey } from "../errors/catalogue.js";
import { callAllowed, requestAllowed } from "./allowlist.js";
import { type ApiKey, type ApiKeyStore, matchesDigest } from "./api-keys.js";
import type { RateLimiter } from "./rate-limiter.js";

export interface Credentials {
  key: string | undefined;
  /** Where the key was looked for, when not the URL (the typed door's metadata header): a missing key's error says so. */
  keyHeader?: string | undefined;
  /** The Authorization header, for the key's secret. */
  authorization: string | undefined;
  origin: string | undefined;
  userAgent: string | undefined;
}

function basicPassword(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
  if (m === null) return undefined;
  const decoded = Buffer.from(m[1] as string, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon < 0 ? undefined : decoded.slice(colon + 1);
}

export class AccessControl {
  readonly #keys: ApiKeyStore;
  readonly #limiter: RateLimiter;

  constructor(keys: ApiKeyStore, limiter: RateLimiter) {
    this.#keys = keys;
    this.#limiter = limiter;
  }

  /** Whether some key's allowlist names user agents (see ApiKeyStore.screensUserAgents). */
  get screensUserAgents(): boolean {
    return this.#keys.screensUserAgents;
  }

  /** Checks the key, its secret, the request-wide allowlists, and counts `cost` requests. */
  async admit(credentials: Credentials, cost: number): Promise<ApiKey> {
    const key = this.authenticate(credentials);
    await this.count(key, cost);
    return key;
  }

  /** Counts `cost` requests against the key's limits (a batch of N costs N + 1). */
  async count(key: ApiKey, cost: number): Promise<void> {
    const { requestsPerSecond, requestsPerDay } = key.rateLimit;
    if (requestsPerSecond > 0 && cost > requestsPerSecond) throw overRateLimit("second", cost, requestsPerSecond);
    if (requestsPerDay > 0 && cost > requestsPerDay) throw overRateLimit("day", cost, requestsPerDay);
    const verdict = await this.#limiter.take(key.label, key.rateLimit, cost);
    if (!verdict.ok) throw rateLimited(verdict.window, verdict.retryAfterSeconds);
  }

  /** The key and request-wide checks without counting. */
  authenticate(credentials: Credentials): ApiKey {
    if (!credentials.key) throw missingKey(credentials.keyHeader);
    const key = this.#keys.lookup(credentials.key);
    if (key === undefined) throw unknownKey();
    if (key.secretDigest !== undefined) {
      const offered = basicPassword(credentials.authorization);
      if (offered === undefined || !matchesDigest(offered, key.secretDigest)) throw badSecret();
    }
    if (!requestAllowed(key.allowlists, { origin: credentials.origin, userAgent: credentials.userAgent })) {
      throw rejectedBySettings();
    }
    return key;
  }

  /** The per-call allowlists: the method, and the contract addresses it names. */
  checkCall(key: ApiKey, method: string, addresses: string[] | undefined): void {
    if (!callAllowed(key.allowlists, { method, addresses })) throw rejectedBySettings();
  }
}
