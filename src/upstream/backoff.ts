/**
 * Reconnect delays: exponential, capped, with jitter so that many gateways
 * that lost the same node do not all knock on it at the same instant.
 */

export interface BackoffOptions {
  /** Delay before the first retry, in ms. */
  minDelayMs: number;
  /** No delay exceeds this, in ms. */
  maxDelayMs: number;
  /** Source of randomness in [0, 1); injectable so tests can pin it. */
  random?: () => number;
}

/**
 * The delay before reconnect attempt `attempt` (0 = first): a random value in
 * [half, full] of min * 2^attempt, the full value capped at max.
 */
export function backoffDelay(attempt: number, options: BackoffOptions): number {
  const random = options.random ?? Math.random;
  const full = Math.min(options.maxDelayMs, options.minDelayMs * 2 ** Math.min(attempt, 30));
  return Math.round(full / 2 + random() * (full / 2));
}
