/**
 * Runs a feed's poll on an HTTP upstream: one tick at a time (a slow node
 * never gets overlapping polls), the next one `intervalMs` after the last
 * finished.
 */

export class Poller {
  readonly #intervalMs: number;
  readonly #tick: () => Promise<void>;
  #timer: NodeJS.Timeout | undefined;
  #running = false;

  constructor(intervalMs: number, tick: () => Promise<void>) {
    this.#intervalMs = intervalMs;
    this.#tick = tick;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule();
  }

  stop(): void {
    this.#running = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(): void {
    if (!this.#running) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      // The tick reports its own failures; the poll goes on.
      this.#tick().finally(() => this.#schedule());
    }, this.#intervalMs);
  }
}
