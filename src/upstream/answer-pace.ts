/**
 * How long an upstream typically takes to answer each method: what its
 * silence is judged by (see Network#askChainId).
 *
 * An answer to a call that was out when the upstream's circuit opened may
 * say how long the node takes (a busy node judged down before its pace was
 * known) or only how long it hung. Both are learnt, but as a held pace: the
 * next answer to a call sent after the opening decides which it was (10
 * times faster: the hang's, and it is set aside; at least half as slow: the
 * node's; in between it says nothing), and a held pace no later answer
 * confirmed is forgotten after twice its own length. Learnt outright, a
 * hang's held answers made the next hang's verdict wait 1.5 times their
 * time, 19.5 s, then 22.5 s, then no verdict within 30 s, for methods the
 * node is asked rarely, writes say (found from outside); left out, a busy
 * node behind a front capping its connections was judged down again at every
 * round, since its slow answers were never learnt (found from outside).
 */

/** The weight of each answer's time in a method's typical answer time (a moving average). */
const TYPICAL_WEIGHT = 0.1;
/** The methods whose answer times are kept per upstream (the method table's are fewer). */
const MAX_TIMED_METHODS = 256;
/** An answer this many times faster than a held pace says the held answers waited out a hang. */
const HANG_FASTER = 10;
/** An answer at least 1/this of a held pace confirms it: the node's own pace, a busy node's. */
const CONFIRMS_WITHIN = 2;
/** A held pace no later answer confirmed counts for this many times its own length. */
const HELD_LIFETIMES = 2;

/** A method's pace learnt from held answers only, since its last confirmed one. */
interface HeldPace {
  /** Until when it counts (performance.now()). */
  until: number;
  /** The method's typical time before the held answers; undefined when it had none. */
  before: number | undefined;
}

export class AnswerPace {
  /** Typical answer time by method, ms. */
  readonly #typicalMs = new Map<string, number>();
  readonly #held = new Map<string, HeldPace>();

  /**
   * Learns an answer that took `tookMs`; `held`: its call was out when the circuit opened. `now`: performance.now().
   */
  learn(method: string, tookMs: number, held: boolean, now: number): void {
    if (held) {
      this.#learnHeld(method, tookMs, now);
      return;
    }
    const heldPace = this.#held.size === 0 ? undefined : this.#held.get(method);
    if (heldPace !== undefined) {
      const typical = this.#typicalMs.get(method) as number;
      // Neither much faster nor about as slow (a shorter hang no verdict caught, say): it says nothing either way, and
      // the held pace goes on expiring (found from outside: taken as confirming, an 8 s hang made a 20 s held pace of a
      // write for good, and later hangs were judged after 18 s, or never).
      if (tookMs * HANG_FASTER >= typical && tookMs * CONFIRMS_WITHIN < typical) {
        this.#fold(method, tookMs);
        return;
      }
      this.#held.delete(method);
      // The held answers' time was the hang's: the method's pace is as it was before them.
      if (tookMs * HANG_FASTER < typical) this.#restore(method, heldPace.before);
    }
    this.#fold(method, tookMs);
  }

  #learnHeld(method: string, tookMs: number, now: number): void {
    const typical = this.#typicalMs.get(method);
    const heldPace = this.#held.get(method);
    if (typical === undefined && this.#typicalMs.size >= MAX_TIMED_METHODS) return;
    const ms = Math.max(tookMs, heldPace !== undefined ? (typical as number) : 0);
    this.#typicalMs.set(method, ms);
    this.#held.set(method, { until: now + HELD_LIFETIMES * ms, before: heldPace !== undefined ? heldPace.before : typical });
  }

  /**
   * The typical time of the method answered fastest, ms (0 before any answer): what silence is judged by. Every
   * method's together would let heavy calls stretch it (found from outside: on a node whose traffic was mostly 6-10 s
   * eth_getLogs, a hang was failed over after 23 s, not 5 s).
   */
  fastestMs(now: number): number {
    this.#forgetStale(now);
    let fastest = Number.POSITIVE_INFINITY;
    for (const ms of this.#typicalMs.values()) if (ms < fastest) fastest = ms;
    return fastest === Number.POSITIVE_INFINITY ? 0 : fastest;
  }

  /** The typical time of the method answered slowest, ms (0 before any answer). */
  slowestMs(now: number): number {
    this.#forgetStale(now);
    let slowest = 0;
    for (const ms of this.#typicalMs.values()) if (ms > slowest) slowest = ms;
    return slowest;
  }

  #fold(method: string, tookMs: number): void {
    const typical = this.#typicalMs.get(method);
    if (typical !== undefined) this.#typicalMs.set(method, typical + (tookMs - typical) * TYPICAL_WEIGHT);
    else if (this.#typicalMs.size < MAX_TIMED_METHODS) this.#typicalMs.set(method, tookMs);
  }

  #restore(method: string, before: number | undefined): void {
    if (before === undefined) this.#typicalMs.delete(method);
    else this.#typicalMs.set(method, before);
  }

  #forgetStale(now: number): void {
    if (this.#held.size === 0) return;
    for (const [method, held] of this.#held) {
      if (now < held.until) continue;
      this.#held.delete(method);
      this.#restore(method, held.before);
    }
  }
}
