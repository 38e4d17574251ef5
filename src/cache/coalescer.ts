/**
 * In-flight coalescing: callers that ask for the same thing while it is being
 * fetched share the one fetch, if it started less than `joinWindowMs` ago: a
 * caller gets no answer older than its call by more than that (a slow node
 * holding a fetch for seconds would otherwise hand a call made after a
 * reorganization the block it replaced). The shared fetch has its own abort signal,
 * aborted only when every caller waiting for it has gone away; a caller that
 * goes away gets `onCancel()` at once.
 *
 * A fetch is for its first caller's flow (an API key), and waits in that
 * flow's line for a connection to the node. A caller of another flow joins it
 * only once it has left that line (its `onSent`): before, it would wait behind
 * the first caller's backlog, and a fresh fetch in its own line takes the
 * place of the old one for newcomers (found from outside: another key's call,
 * identical to the last of a batch of 800, waited 6 s, or failed -32005, where
 * a different call was answered in 0.5 s).
 */
import { CallCancellation, type CallSignal } from "../call-signal.js";

interface InFlight<T> {
  promise: Promise<T>;
  startedAt: number;
  controller: CallCancellation;
  waiters: number;
  /** Whose line the fetch waits in. */
  flow: string;
  /** The fetch has left its flow's line (or never waited in one). */
  sent: boolean;
}

export class Coalescer<T> {
  readonly #inFlight = new Map<string, InFlight<T>>();
  readonly #onCancel: () => Error;
  readonly #joinWindowMs: number;
  /** Callers that joined a fetch already under way (they caused no upstream call). */
  joined = 0;

  constructor(onCancel: () => Error, joinWindowMs = Number.POSITIVE_INFINITY) {
    this.#onCancel = onCancel;
    this.#joinWindowMs = joinWindowMs;
  }

  /**
   * Fetches under `key` for `flow`, or joins the fetch already under way. `fetch` calls its `onSent` once its request
   * has left the flow's line for a connection.
   */
  run(key: string, fetch: (signal: CallSignal, onSent: () => void) => Promise<T>, signal?: CallSignal, flow = ""): Promise<T> {
    if (signal?.aborted) return Promise.reject(this.#onCancel());
    let flight = this.#inFlight.get(key);
    const now = performance.now();
    // Too old to join, or still waiting in another flow's line: a fresh fetch takes its place for newcomers; the old
    // one still answers its own callers.
    if (flight === undefined || now - flight.startedAt >= this.#joinWindowMs || (!flight.sent && flight.flow !== flow)) {
      const controller = new CallCancellation();
      const started: InFlight<T> = { promise: undefined as unknown as Promise<T>, startedAt: now, controller, waiters: 0, flow, sent: false };
      started.promise = fetch(controller.signal, () => {
        started.sent = true;
      }).finally(() => {
        if (this.#inFlight.get(key) === started) this.#inFlight.delete(key);
      });
      this.#inFlight.set(key, started);
      flight = started;
    } else {
      this.joined++;
    }
    return this.#wait(key, flight, signal);
  }

  get size(): number {
    return this.#inFlight.size;
  }

  /** What a caller leaving does (made here, not as a named arrow function in #wait: tsx names those as they are made, per call). */
  #leaver(key: string, flight: InFlight<T>, reject: (err: unknown) => void): () => void {
    return () => {
      flight.waiters--;
      if (flight.waiters === 0) {
        // Nobody wants the answer any more: cancel the upstream call, and let
        // a newcomer start afresh rather than join a cancelled fetch.
        if (this.#inFlight.get(key) === flight) this.#inFlight.delete(key);
        flight.controller.abort();
      }
      reject(this.#onCancel());
    };
  }

  #wait(key: string, flight: InFlight<T>, signal: CallSignal | undefined): Promise<T> {
    flight.waiters++;
    if (signal === undefined) {
      return flight.promise.finally(() => flight.waiters--);
    }
    return new Promise<T>((resolve, reject) => {
      const leave = this.#leaver(key, flight, reject);
      signal.addEventListener("abort", leave, { once: true });
      flight.promise.then(
        (value) => {
          signal.removeEventListener("abort", leave);
          if (signal.aborted) return;
          flight.waiters--;
          resolve(value);
        },
        (err: unknown) => {
          signal.removeEventListener("abort", leave);
          if (signal.aborted) return;
          flight.waiters--;
          reject(err);
        },
      );
    });
  }
}
