/**
 * Keeps a dead upstream from being hammered: after `threshold` consecutive
 * outages the circuit opens and calls fail fast; after `cooldownMs` one probe
 * call is let through, and its outcome closes or re-opens the circuit. A
 * probe still unanswered after another `cooldownMs` (a slow upstream) does not
 * hold the circuit shut: the next call may probe too, so an upstream that has
 * recovered answers again within a cooldown, however long its deadline.
 * Calls that come while a probe is out may wait for its outcome rather than
 * be refused: the probe is often nodegate's own (the cache's finality read),
 * and a healed upstream should answer the caller too.
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
  /** Calls waiting for the probe's outcome. */
  #waiters: (() => void)[] = [];

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

  /** A probe is out, and has been for less than a cooldown. */
  get probing(): boolean {
    return this.#state === "half-open" && this.#probing && Date.now() - this.#probeStartedAt < this.#cooldownMs;
  }

  /** Resolves when the probe out now settles, or when it has been out a cooldown (the next call may then probe itself). */
  probeSettled(): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      // A timer counts on the loop's own clock, the breaker on Date.now(): a timer set for the time left can fire a
      // little before the cooldown has passed by Date.now(), and the woken call would find the probe still out.
      const wait = (): void => {
        const left = this.#cooldownMs - (Date.now() - this.#probeStartedAt);
        if (left <= 0) done();
        else timer = setTimeout(wait, left);
      };
      wait();
      this.#waiters.push(done);
    });
  }

  success(): void {
    this.#failures = 0;
    this.#state = "closed";
    this.#settle();
  }

  failure(now = Date.now()): void {
    this.#failures++;
    if (this.#state === "half-open" || this.#failures >= this.#threshold) {
      this.#state = "open";
      this.#openedAt = now;
      this.#settle();
    }
  }

  /** A call ended without telling anything about the upstream's health (the caller went away). */
  release(): void {
    if (this.#state === "half-open") {
      this.#state = "open";
    }
    this.#settle();
  }

  #settle(): void {
    this.#probing = false;
    if (this.#waiters.length > 0) for (const wake of this.#waiters.splice(0)) wake();
  }
}
