/**
 * A bounded queue between a feed and one stream: the feed pushes without
 * waiting, the stream pulls at the client's pace. When the client is too
 * slow (ReaderPace: `capacity` events waiting and none taken for a while) or
 * the waiting events pass `maxBytes`, the queue empties itself (memory stays
 * bounded), ends with subscriberTooSlow and calls `onOverflow`, so the
 * stream's transport can be cut if it is stuck behind an unread write.
 */
import { cancelled, subscriberTooSlow } from "../errors/catalogue.js";
import type { GatewayError } from "../errors/gateway-error.js";
import type { Consumer } from "./consumer.js";
import type { FeedEvent } from "./events.js";
import { ReaderPace } from "./reader-pace.js";
import type { CallSignal } from "../call-signal.js";

export class EventQueue implements Consumer {
  readonly #capacity: number;
  readonly #pace: ReaderPace;
  readonly #maxBytes: number;
  /** Bytes of the events waiting (their JSON text). */
  #bytes = 0;
  readonly #onOverflow: (error: GatewayError) => void;
  #items: FeedEvent[] = [];
  #head = 0;
  #error: GatewayError | undefined;
  /** Wakes the reader waiting for an event or the end. */
  #wakeReader: (() => void) | undefined;
  /** History deliveries waiting for room. */
  #roomWaiters: { resolve: () => void; reject: (err: GatewayError) => void }[] = [];

  constructor(capacity: number, onOverflow: (error: GatewayError) => void = () => {}, maxBytes = Number.POSITIVE_INFINITY) {
    this.#capacity = Math.max(1, capacity);
    this.#pace = new ReaderPace(this.#capacity);
    this.#maxBytes = maxBytes;
    this.#onOverflow = onOverflow;
  }

  get ended(): boolean {
    return this.#error !== undefined;
  }

  /** Events waiting to be read. */
  get length(): number {
    return this.#items.length - this.#head;
  }

  push(event: FeedEvent): void {
    if (this.#error !== undefined) return;
    if (this.length === 0) this.#pace.progressed();
    else if (this.#pace.tooSlow(this.length)) return this.#overflow(subscriberTooSlow(this.length));
    this.#bytes += event.text.length;
    if (this.#bytes > this.#maxBytes) return this.#overflow(subscriberTooSlow(this.length, this.#bytes));
    this.#items.push(event);
    this.#pace.watch(this.length, this.#check);
    this.#wake();
  }

  /** Judges the client again when the grace ran out with the buffer full (no event may come to prompt it). */
  readonly #check = (): void => {
    if (this.#error !== undefined) return;
    if (this.#pace.tooSlow(this.length)) this.#overflow(subscriberTooSlow(this.length));
    else this.#pace.watch(this.length, this.#check);
  };

  judgePace(alsoWaiting: number): void {
    // A client that has taken everything sent waits on nodegate (a history page slow to come), not the other way round
    // (found from outside: one reading as fast as it could was ended while a page took 1.5 s).
    if (this.length === 0) return;
    const waiting = this.length + alsoWaiting;
    if (this.#error === undefined && this.#pace.tooSlow(waiting)) this.#overflow(subscriberTooSlow(waiting));
  }

  #overflow(error: GatewayError): void {
    this.end(error);
    this.#onOverflow(error);
  }

  ready(): Promise<void> {
    if (this.#error !== undefined) return Promise.reject(this.#error);
    if (this.length * 2 < this.#capacity) return Promise.resolve();
    return new Promise((resolve, reject) => this.#roomWaiters.push({ resolve, reject }));
  }

  end(error: GatewayError): void {
    if (this.#error !== undefined) return;
    this.#error = error;
    this.#items = [];
    this.#head = 0;
    this.#bytes = 0;
    this.#pace.stop();
    for (const waiter of this.#roomWaiters.splice(0)) waiter.reject(error);
    this.#wake();
  }

  /** The events in order, until the queue ends (then its reason is thrown) or `signal` aborts. */
  async *events(signal: CallSignal): AsyncGenerator<FeedEvent> {
    const onAbort = (): void => this.end(cancelled());
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        if (this.#error !== undefined) throw this.#error;
        if (this.length > 0) {
          const event = this.#items[this.#head] as FeedEvent;
          this.#head++;
          this.#bytes -= event.text.length;
          this.#pace.progressed();
          if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
            this.#items = this.#items.slice(this.#head);
            this.#head = 0;
          }
          this.#releaseRoom();
          yield event;
          continue;
        }
        await new Promise<void>((resolve) => {
          this.#wakeReader = resolve;
        });
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  #wake(): void {
    const wake = this.#wakeReader;
    this.#wakeReader = undefined;
    wake?.();
  }

  #releaseRoom(): void {
    if (this.#roomWaiters.length === 0 || this.length * 2 >= this.#capacity) return;
    for (const waiter of this.#roomWaiters.splice(0)) waiter.resolve();
  }
}
