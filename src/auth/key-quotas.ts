/**
 * What one key may hold open at once: native WebSocket connections, requests
 * in progress and subscriptions. Rate limits count requests over time; these
 * bound what a key can pin in the process at one moment (sockets, pending
 * upstream calls, subscription state), so one key cannot exhaust it for all.
 */
import type { Limits } from "../config/config.js";
import { quotaExceeded } from "../errors/catalogue.js";
import type { ApiKey } from "./api-keys.js";

export type QuotaKind = "connections" | "requests" | "subscriptions";

/** Gives back what acquire() took; calling it again does nothing. */
export type Release = () => void;

type QuotaLimits = Pick<Limits, "maxWsConnectionsPerKey" | "maxConcurrentRequestsPerKey" | "maxSubscriptionsPerKey">;

export class KeyQuotas {
  readonly #limits: Record<QuotaKind, number>;
  readonly #held: Record<QuotaKind, Map<string, number>> = { connections: new Map(), requests: new Map(), subscriptions: new Map() };

  constructor(limits: QuotaLimits) {
    this.#limits = {
      connections: limits.maxWsConnectionsPerKey,
      requests: limits.maxConcurrentRequestsPerKey,
      subscriptions: limits.maxSubscriptionsPerKey,
    };
  }

  /**
   * Takes one `kind` for the key, or throws the -32005 GatewayError (HTTP 429,
   * RESOURCE_EXHAUSTED) when the key already holds its maximum.
   */
  acquire(key: ApiKey, kind: QuotaKind): Release {
    const held = this.#held[kind];
    const n = held.get(key.label) ?? 0;
    const limit = this.#limits[kind];
    if (n >= limit) throw quotaExceeded(kind, limit);
    held.set(key.label, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (held.get(key.label) ?? 1) - 1;
      if (left > 0) held.set(key.label, left);
      else held.delete(key.label);
    };
  }

  /** How many `kind` the key holds now. */
  held(key: ApiKey, kind: QuotaKind): number {
    return this.#held[kind].get(key.label) ?? 0;
  }
}

/**
 * The check a subscription takes before it is set up (eth_subscribe on the
 * native path, a typed server stream): hold the returned Release for the
 * subscription's life and call it when the subscription ends, however it ends.
 */
export function acquireSubscription(quotas: KeyQuotas, key: ApiKey): Release {
  return quotas.acquire(key, "subscriptions");
}
