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

/** The longest pause a provider's Retry-After buys: a longer one would stop a network for longer than an outage does. */
export const MAX_RETRY_AFTER_PAUSE_MS = 60_000;

export class CircuitBreaker {
  readonly #threshold: number;
  readonly #cooldownMs: number;
  #failures = 0;
  #openedAt = 0;
  /** How long the circuit stays open this time: the cooldown, or the provider's Retry-After. */
  #openForMs: number;
  /** Opened for the provider's Retry-After. */
  #paused = false;
  #state: CircuitState = "closed";
  #probing = false;
  #probeStartedAt = 0;
  /** Counts the probes let through: names the one out now (see release). */
  #probeSerial = 0;
  /** Calls waiting for the probe's outcome. */
  #waiters: (() => void)[] = [];

  constructor(options: CircuitBreakerOptions = {}) {
    this.#threshold = options.threshold ?? 5;
    this.#cooldownMs = options.cooldownMs ?? 1000;
    this.#openForMs = this.#cooldownMs;
  }

  get state(): CircuitState {
    return this.#state;
  }

  /** How long the circuit stays open before a probe, in ms. */
  get cooldownMs(): number {
    return this.#cooldownMs;
  }

  /** May a call go to the upstream now? (In half-open, only the one probe may.) */
  allow(now = performance.now()): boolean {
    if (this.#state === "closed") return true;
    if (this.#state === "open") {
      if (now - this.#openedAt < this.#openForMs) return false;
      this.#state = "half-open";
      this.#probing = false;
    }
    if (this.#probing && now - this.#probeStartedAt < this.#cooldownMs) return false;
    this.#probing = true;
    this.#probeStartedAt = now;
    this.#probeSerial++;
    return true;
  }

  /** The probe let through last (while the circuit is not closed): what a call let through as it hands to release(). */
  get probeSerial(): number {
    return this.#probeSerial;
  }

  /** Open, and not yet due for a probe: nothing is to be sent to the upstream, not even a call sent once more. */
  resting(now = performance.now()): boolean {
    return this.#state === "open" && now - this.#openedAt < this.#openForMs;
  }

  /** While open for a provider's Retry-After: the whole seconds left (to pass on to callers). */
  retryAfterSeconds(now = performance.now()): number | undefined {
    if (this.#state !== "open" || !this.#paused) return undefined;
    const left = this.#openForMs - (now - this.#openedAt);
    return left > 0 ? Math.ceil(left / 1000) : undefined;
  }

  /** A probe is out, and has been for less than a cooldown. */
  get probing(): boolean {
    return this.#state === "half-open" && this.#probing && performance.now() - this.#probeStartedAt < this.#cooldownMs;
  }

  /**
   * Resolves when the probe out now settles, or when it has been out a cooldown (the next call may then probe
   * itself). Only that probe is waited for: one that another call starts meanwhile is not (found from outside: with
   * a silent node and calls coming steadily, a new probe started every cooldown, and a call waited on probe after
   * probe, for up to 30 s, before being told the calls were paused).
   */
  probeSettled(): Promise<void> {
    const until = this.#probeStartedAt + this.#cooldownMs;
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      // A timer's clock and performance.now() differ by rounding: a timer set for the time left can fire a little
      // before the cooldown has passed by performance.now(), and the woken call would find the probe still out.
      const wait = (): void => {
        const left = until - performance.now();
        if (left <= 0) done();
        else timer = setTimeout(wait, left);
      };
      wait();
      this.#waiters.push(done);
    });
  }

  success(now = performance.now()): void {
    this.#failures = 0;
    // The provider's Retry-After pause holds: an answer to a call sent before it (in flight when the 429/503 came)
    // does not end it early.
    if (this.#state === "open" && this.#paused && now - this.#openedAt < this.#openForMs) return;
    this.#state = "closed";
    this.#settle();
  }

  /**
   * An outage. `retryAfterMs`: the upstream said when to come back (HTTP 429
   * with Retry-After): the circuit opens at once, for that long (at most
   * MAX_RETRY_AFTER_PAUSE_MS), rather than after the threshold and for a
   * cooldown (found from outside: a provider asking for 7 s was probed every
   * second).
   */
  failure(now = performance.now(), retryAfterMs?: number): void {
    this.#failures++;
    const pause = retryAfterMs === undefined ? undefined : Math.min(retryAfterMs, MAX_RETRY_AFTER_PAUSE_MS);
    // A provider's Retry-After pause holds, to its end and still said to callers, against calls sent before it failing
    // meanwhile (found from outside: failures in its last cooldown replaced it with a cooldown, which ran past its end
    // and told callers no Retry-After); only a longer Retry-After asked for meanwhile extends it.
    if (this.#state === "open" && this.#paused && now - this.#openedAt < this.#openForMs) {
      if (pause === undefined || pause <= 0 || now + pause <= this.#openedAt + this.#openForMs) return;
    }
    if (this.#state === "half-open" || this.#failures >= this.#threshold || (pause !== undefined && pause > 0)) {
      this.#state = "open";
      this.#openedAt = now;
      this.#openForMs = Math.max(this.#cooldownMs, pause ?? 0);
      this.#paused = pause !== undefined && pause > 0;
      this.#settle();
    }
  }

  /** The upstream was found down by a check of its own (see Network's silence check): open now, for a cooldown. */
  trip(now = performance.now()): void {
    this.#failures = Math.max(this.#failures + 1, this.#threshold);
    // A provider's Retry-After pause that ends later stays: nodegate cannot answer sooner either.
    if (this.#state === "open" && this.#paused && this.#openedAt + this.#openForMs > now + this.#cooldownMs) return;
    this.#state = "open";
    this.#openedAt = now;
    this.#openForMs = this.#cooldownMs;
    this.#paused = false;
    this.#settle();
  }

  /**
   * The probe ended without telling anything about the upstream's health
   * (its caller went away, or nodegate's own limits stopped it): the next
   * call may probe. The circuit stays half-open, so the next probe's failure
   * re-opens it for a full cooldown (found from outside: released to "open"
   * with its old, long-passed opening time, a circuit a provider's
   * Retry-After had opened stayed so through a failed probe, and the next
   * call waited a cooldown on a probe that never went out). Only the probe's
   * own end is a release: a call let through while the circuit was closed
   * says nothing of a probe out now, and nor does an earlier probe that a
   * newer one has overtaken (`probe`: the serial it was let through as; found
   * from outside: a readiness check's probe, stuck on a hung node for its 2 s
   * deadline, woke the calls waiting on the newer probe, which then found the
   * node healed, and they were refused).
   */
  release(probe: number): void {
    if (this.#state === "half-open" && probe === this.#probeSerial) this.#settle();
  }

  #settle(): void {
    this.#probing = false;
    if (this.#waiters.length > 0) for (const wake of this.#waiters.splice(0)) wake();
  }
}
