/**
 * When a subscriber's client counts as too slow. Events come in bursts (a
 * block's logs, a gap fill's page, a catch-up of many headers) far faster
 * than any client can take them, so the number waiting alone cannot tell a
 * slow client from a fast one in the middle of a burst: a client is too slow
 * when `capacity` events wait and it has taken none for `graceMs`. Memory is
 * bounded apart from this, in bytes, by whoever holds the events.
 */
/** How long a client with a full buffer may take no event before it counts as too slow. */
export const READER_GRACE_MS = 1000;

export class ReaderPace {
  readonly #capacity: number;
  readonly #graceMs: number;
  /** The last time the client took an event, or was waiting for one when it came. */
  #lastProgress = performance.now();
  #recheck: NodeJS.Timeout | undefined;

  constructor(capacity: number, graceMs = READER_GRACE_MS) {
    this.#capacity = Math.max(1, capacity);
    this.#graceMs = graceMs;
  }

  /** The client took an event, or one arrived while nothing was waiting. */
  progressed(): void {
    this.#lastProgress = performance.now();
  }

  tooSlow(waiting: number): boolean {
    return waiting >= this.#capacity && performance.now() - this.#lastProgress > this.#graceMs;
  }

  /**
   * With `waiting` events held, makes sure `check` runs once the grace has
   * run out, so a client that stops reading after a burst is judged even if
   * no event follows it.
   */
  watch(waiting: number, check: () => void): void {
    if (waiting < this.#capacity || this.#recheck !== undefined) return;
    const left = this.#graceMs - (performance.now() - this.#lastProgress);
    this.#recheck = setTimeout(() => {
      this.#recheck = undefined;
      check();
    }, Math.max(0, left) + 1).unref();
  }

  stop(): void {
    clearTimeout(this.#recheck);
    this.#recheck = undefined;
  }
}
