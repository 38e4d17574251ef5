/**
 * Keeps a dead upstream from being hammered: after `threshold` consecutive
 * outages the circuit opens and calls fail fast; after `cooldownMs` one probe
 * call is let through, and its outcome closes or re-opens the circuit. A
 * probe still unanswered after another `cooldownMs` (a slow upstream) does not
 * hold the circuit shut: the next call may probe too, so an upstream that has
 * recovered answers again within a cooldown, however long its deadline.
 */

export interface CircuitBreakerOptions {
  /** Consecutive outages that open the circuit. Default 5. */
  threshold?: number;
  /** How long the circuit stays open before a probe, in ms. Default 1000. */
  cooldownMs?: number;
}

export type CircuitState = "closed" | "open" | "half-open";

export class CircuitBreaker {
  readonly #threshold: number;
  readonly #cooldownMs: number;
  #failures = 0;
  #openedAt = 0;
  #state: CircuitState = "closed";
  #probing = false;
  #probeStartedAt = 0;

  constructor(options: CircuitBreakerOptions = {}) {
    this.#threshold = options.threshold ?? 5;
    this.#cooldownMs = options.cooldownMs ?? 1000;
  }

  get state(): CircuitState {
    return this.#state;
  }

  /** May a call go to the upstream now? (In half-open, only the one probe may.) */
  allow(now = Date.now()): boolean {
    if (this.#state === "closed") return true;
    if (this.#state === "open") {
      if (now - this.#openedAt < this.#cooldownMs) return false;
      this.#state = "half-open";
      this.#probing = false;
    }
    if (this.#probing && now - this.#probeStartedAt < this.#cooldownMs) return false;
    this.#probing = true;
    this.#probeStartedAt = now;
    return true;
  }

  success(): void {
    this.#failures = 0;
    this.#state = "closed";
    this.#probing = false;
  }

  failure(now = Date.now()): void {
    this.#failures++;
    if (this.#state === "half-open" || this.#failures >= this.#threshold) {
      this.#state = "open";
      this.#openedAt = now;
      this.#probing = false;
    }
  }

  /** A call ended without telling anything about the upstream's health (the caller went away). */
  release(): void {
    this.#probing = false;
    if (this.#state === "half-open") {
      this.#state = "open";
    }
  }
}
