/**
 * When a subscriber's client counts as too slow. Events come in bursts (a
 * block's logs, a gap fill's page, a catch-up of many headers) far faster
 * than any client can take them, so the number waiting alone cannot tell a
 * slow client from a fast one in the middle of a burst. A client is too slow
 * when `capacity` events wait and it has taken none for `graceMs`, or when
 * four times as many wait whatever its pace (memory stays bounded).
 */
export class ReaderPace {
  readonly #capacity: number;
  readonly #graceMs: number;
  /** The last time the client took an event, or was waiting for one when it came. */
  #lastProgress = performance.now();

  constructor(capacity: number, graceMs = 1000) {
    this.#capacity = Math.max(1, capacity);
    this.#graceMs = graceMs;
  }

  /** The client took an event, or one arrived while nothing was waiting. */
  progressed(): void {
    this.#lastProgress = performance.now();
  }

  tooSlow(waiting: number): boolean {
    if (waiting < this.#capacity) return false;
    return waiting >= this.#capacity * 4 || performance.now() - this.#lastProgress > this.#graceMs;
  }
}
