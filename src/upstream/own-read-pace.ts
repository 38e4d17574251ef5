/**
 * How fast nodegate's own reads (subscription feeds' polls, gap fills, catch-ups and resumes) go to a network whose
 * node refuses calls for its rate limit, so that callers' calls keep a share of what it serves.
 *
 * Unpaced, a feed catching up after a spell of refusals asked 17-41 calls a second of a node serving 2-5, which
 * refused 60-90% of them, and callers' calls sent meanwhile were refused with them: 0 of 8 typed calls served
 * during a catch-up (found from outside, h82). Once the node refuses a call for its rate limit, whoever's call it
 * was, nodegate's own reads go one at a time at a pace that starts at half of what the node served in the last
 * second, halves at each further second with a refusal down to half its start (MIN_CALLS_PER_SECOND at least), grows
 * by an eighth (at least half a call) each second without one, and ends PACED_FOR_MS after the last refusal. The
 * floor keeps a node that refuses a share of calls whatever their pace (a busy backend behind a provider's balancer)
 * from slowing the feeds to a crawl: cut after cut, polls of a gap half refused went at one a second, and 24 heads
 * took over 20 s instead of 5. Callers' calls are never held here: they are what the node's share is kept for, and
 * their refusals reach them as the node's own.
 */
import { cancelled } from "../errors/catalogue.js";
import type { CallSignal } from "../call-signal.js";

/** The slowest pace, calls a second: feeds still poll and catch up, if slowly, while callers take the rest. */
export const MIN_CALLS_PER_SECOND = 1;
/** How long pacing lasts after the node's last rate-limit refusal. */
export const PACED_FOR_MS = 30_000;
/** At most one cut of the pace per this long: refusals of calls sent together, at the old pace, cut it once. */
const CUT_EVERY_MS = 1000;
/** Without a refusal for this long, the pace grows by RAISE_SHARE of itself (at least MIN_RAISE). */
const RAISE_EVERY_MS = 1000;
const RAISE_SHARE = 1 / 8;
const MIN_RAISE = 0.5;
/** The span over which results are counted for the first pace. */
const SERVED_SPAN_MS = 1000;

interface Waiter {
  resolve: () => void;
  signal: CallSignal | undefined;
  onAbort: (() => void) | undefined;
}

export interface OwnReadPaceEvents {
  /** Pacing began: own reads now go at most `perSecond` a second. */
  started?(perSecond: number): void;
  /** No rate-limit refusal for PACED_FOR_MS: own reads go unpaced again. */
  ended?(): void;
}

export class OwnReadPace {
  readonly #now: () => number;
  readonly #events: OwnReadPaceEvents;
  /** Calls a second while paced; Infinity when not. */
  #perSecond = Number.POSITIVE_INFINITY;
  /** The slowest pace of this spell: half the first (see refused). */
  #floor = MIN_CALLS_PER_SECOND;
  /** Paced until then (the last refusal plus PACED_FOR_MS). */
  #pacedUntil = Number.NEGATIVE_INFINITY;
  #lastCutAt = Number.NEGATIVE_INFINITY;
  #lastRaiseAt = Number.NEGATIVE_INFINITY;
  /** When the next own read may go. */
  #nextAt = Number.NEGATIVE_INFINITY;
  /** Own reads waiting for their turn, oldest first (a Set: one that is cancelled leaves from anywhere at once). */
  readonly #waiting = new Set<Waiter>();
  #timer: NodeJS.Timeout | undefined;
  /** Results counted in the current span, and a second's worth in the one before it. */
  #servedSpanStart = Number.NEGATIVE_INFINITY;
  #servedNow = 0;
  #servedBefore = 0;

  constructor(events: OwnReadPaceEvents = {}, now: () => number = () => performance.now()) {
    this.#events = events;
    this.#now = now;
  }

  /** Whether own reads are paced now, and how fast. */
  get perSecond(): number {
    this.#endIfCalm(this.#now());
    return this.#perSecond;
  }

  /** The node gave a call its result (at `now`, when the caller has read the clock already). */
  served(now = this.#now()): void {
    if (now - this.#servedSpanStart >= SERVED_SPAN_MS) {
      const spanMs = now - this.#servedSpanStart;
      this.#servedBefore = spanMs < 2 * SERVED_SPAN_MS ? (this.#servedNow * SERVED_SPAN_MS) / spanMs : 0;
      this.#servedNow = 0;
      this.#servedSpanStart = now;
    }
    this.#servedNow++;
  }

  /** The node refused a call for its rate limit (see isRateLimitRefusal). */
  refused(): void {
    const now = this.#now();
    this.#endIfCalm(now);
    const starting = this.#perSecond === Number.POSITIVE_INFINITY;
    if (starting) {
      const served = this.#servedPerSecond(now);
      this.#perSecond = Math.max(MIN_CALLS_PER_SECOND, served / 2);
      this.#floor = Math.max(MIN_CALLS_PER_SECOND, this.#perSecond / 2);
      this.#lastCutAt = this.#lastRaiseAt = now;
      this.#nextAt = now;
    } else if (now - this.#lastCutAt >= CUT_EVERY_MS) {
      this.#perSecond = Math.max(this.#floor, this.#perSecond / 2);
      this.#lastCutAt = this.#lastRaiseAt = now;
    }
    this.#pacedUntil = now + PACED_FOR_MS;
    if (starting) this.#events.started?.(this.#perSecond);
  }

  /**
   * Undefined when an own read may go now (not paced, or its turn has come); else a promise that resolves at its turn,
   * or rejects when `signal` is cancelled first.
   */
  turn(signal?: CallSignal): Promise<void> | undefined {
    if (this.#perSecond === Number.POSITIVE_INFINITY) return undefined;
    const now = this.#now();
    this.#endIfCalm(now);
    if (this.#waiting.size === 0 && now >= this.#nextAt) {
      this.#take(now);
      return undefined;
    }
    if (signal?.aborted === true) return Promise.reject(cancelled());
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, signal, onAbort: undefined };
      if (signal !== undefined) {
        waiter.onAbort = () => {
          this.#waiting.delete(waiter);
          reject(cancelled());
        };
        signal.addEventListener("abort", waiter.onAbort);
      }
      this.#waiting.add(waiter);
      this.#schedule();
    });
  }

  /**
   * What the node served a second lately: the current span's results over its length when it is over a second long
   * (none when over two: nothing was served for a second), else the larger of the span before and the current one
   * as far as it has gone, a short one counted as a tenth of a second (its first result is not a second's worth).
   */
  #servedPerSecond(now: number): number {
    const since = now - this.#servedSpanStart;
    if (since >= 2 * SERVED_SPAN_MS) return 0;
    if (since >= SERVED_SPAN_MS) return (this.#servedNow * SERVED_SPAN_MS) / since;
    return Math.max(this.#servedBefore, (this.#servedNow * SERVED_SPAN_MS) / Math.max(SERVED_SPAN_MS / 10, since));
  }

  /** Lets every waiting read go (the network is closing). */
  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const waiter of this.#waiting) this.#release(waiter);
  }

  #take(now: number): void {
    if (this.#perSecond === Number.POSITIVE_INFINITY) return;
    if (now - this.#lastRaiseAt >= RAISE_EVERY_MS) {
      this.#perSecond += Math.max(MIN_RAISE, this.#perSecond * RAISE_SHARE);
      this.#lastRaiseAt = now;
    }
    this.#nextAt = Math.max(now, this.#nextAt) + 1000 / this.#perSecond;
  }

  #release(waiter: Waiter): void {
    this.#waiting.delete(waiter);
    if (waiter.onAbort !== undefined) waiter.signal?.removeEventListener("abort", waiter.onAbort);
    waiter.resolve();
  }

  #schedule(): void {
    if (this.#timer !== undefined) return;
    const now = this.#now();
    this.#endIfCalm(now);
    for (const waiter of this.#waiting) {
      if (this.#perSecond !== Number.POSITIVE_INFINITY && now < this.#nextAt) break;
      this.#take(now);
      this.#release(waiter);
    }
    if (this.#waiting.size === 0) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#schedule();
      },
      Math.max(1, Math.ceil(this.#nextAt - now)),
    );
    this.#timer.unref();
  }

  #endIfCalm(now: number): void {
    if (this.#perSecond === Number.POSITIVE_INFINITY || now < this.#pacedUntil) return;
    this.#perSecond = Number.POSITIVE_INFINITY;
    this.#nextAt = Number.NEGATIVE_INFINITY;
    this.#events.ended?.();
  }
}
