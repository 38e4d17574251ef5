/**
 * What every feed shares: the consumers it fans out to, one queue of work
 * (live notifications, polls, reconnect backfills run one after another, so
 * events leave in order and the gap-free bookkeeping never races itself),
 * and retries for work that must eventually succeed.
 */
import type { Logger } from "pino";
import type { Limits, SubscriptionSettings } from "../config/config.js";
import { NODEGATE_CODES } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { backoffDelay } from "../upstream/backoff.js";
import type { Network } from "../upstream/network.js";
import type { WsUpstream } from "../upstream/ws-upstream.js";
import type { ChainReader } from "./chain-reader.js";
import type { Consumer } from "./consumer.js";
import type { FeedEvent } from "./events.js";
import type { Topic } from "./topic.js";
import type { CallSignal } from "../call-signal.js";

export interface FeedContext {
  network: Network;
  reader: ChainReader;
  settings: SubscriptionSettings;
  limits: Limits;
  log: Logger;
  /** The network's primary upstream when it is a WebSocket (feeds subscribe); undefined when it is HTTP (feeds poll). */
  ws: WsUpstream | undefined;
}

/** Delivers one history event, waiting while the consumer has no room. */
export type Deliver = (event: FeedEvent) => Promise<void>;

const RETRY = { minDelayMs: 250, maxDelayMs: 30_000 };
/** How long one read for a resuming client's history is tried again, and the wait before the second (see Feed.historyRead). */
const HISTORY_READ_PATIENCE_MS = 30_000;
const HISTORY_READ_FIRST_DELAY_MS = 250;
/** What a runUntilDone task that failed, and is tried again later, resolves to. */
const RETRYING = Symbol("retrying");

export abstract class Feed {
  readonly topic: Topic;
  protected readonly ctx: FeedContext;
  readonly #consumers = new Set<Consumer>();
  #work: Promise<void> = Promise.resolve();
  #stopped = false;
  /** Pending retries, by what they retry (a newer retry of the same work replaces the older). */
  readonly #retryTimers = new Map<string, NodeJS.Timeout>();
  /** Work failing now: its later failures are logged at debug until it succeeds again. */
  readonly #failing = new Set<string>();

  constructor(topic: Topic, ctx: FeedContext) {
    this.topic = topic;
    this.ctx = ctx;
  }

  /** Subscribes upstream (or starts polling) and sets the starting point. */
  abstract start(): Promise<void>;

  /**
   * Delivers the events from block `fromBlock` up to where the feed is now
   * and at least to `atLeastTo` (blocks of live events the recipient let
   * go), in order (a client resuming after its own reconnect), to
   * `recipient` alone; resolves with the block it went up to, undefined
   * when there was nothing to deliver.
   */
  abstract history(fromBlock: number, deliver: Deliver, signal: CallSignal, recipient: Consumer, atLeastTo: number | undefined): Promise<number | undefined>;

  /** The latest block the feed has passed, undefined before it started. */
  abstract get position(): number | undefined;

  /** Unsubscribes upstream or stops polling. */
  protected abstract shutdown(): Promise<void>;

  get stopped(): boolean {
    return this.#stopped;
  }

  get consumerCount(): number {
    return this.#consumers.size;
  }

  /** `resuming`: the consumer gets a history (Feed.history) before the live events. */
  attach(consumer: Consumer, _resuming = false): void {
    this.#consumers.add(consumer);
  }

  detach(consumer: Consumer): void {
    this.#consumers.delete(consumer);
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const timer of this.#retryTimers.values()) clearTimeout(timer);
    this.#retryTimers.clear();
    await this.shutdown();
  }

  /** Ends every consumer with `error` (the feed cannot keep its promise to them). */
  endAll(error: GatewayError): void {
    for (const consumer of this.#consumers) consumer.end(error);
  }

  /** Sends `event` to every consumer, but those in `skip`. */
  protected emit(event: FeedEvent, skip?: ReadonlySet<Consumer>): void {
    for (const consumer of this.#consumers) if (!consumer.ended && skip?.has(consumer) !== true) consumer.push(event);
  }

  /** Queues `task` behind the feed's other work; resolves or rejects with it. */
  protected queue<T>(task: () => Promise<T>): Promise<T> {
    const next = this.#work.then(task);
    this.#work = next.then(
      () => undefined,
      () => undefined,
    );
    return next;
  }

  /**
   * Queues `task`; its failure is logged, and ends the consumers when history was lost. A task that resolves
   * RETRYING failed and is tried again later (runUntilDone): it has not worked again yet.
   */
  protected run(what: string, task: () => Promise<void | typeof RETRYING>): Promise<void> {
    return this.queue(async () => {
      if (this.#stopped) return;
      let outcome;
      try {
        outcome = await task();
      } catch (err) {
        this.#failed(what, err);
        return;
      }
      if (outcome !== RETRYING && this.#failing.delete(what)) this.ctx.log.info({ network: this.ctx.network.name, feed: this.topic.kind }, `${what} works again`);
    });
  }

  /** Whether `what` failed and waits for its next try (runUntilDone's backoff). */
  protected retryPending(what: string): boolean {
    return this.#retryTimers.has(what);
  }

  /**
   * The longest wait between two tries of work that holds every subscriber's events back (a reconnect's gap fill):
   * two head polls, at least a second (found from outside, h77: backed off to 30 s, logs came 15 s after the node
   * served again).
   */
  protected get holdingRetryMaxMs(): number {
    return Math.max(1000, 2 * this.ctx.settings.pollIntervalMs);
  }

  /**
   * `read` for a resuming client's history, tried again after a failure `retry` accepts (a node's passing refusal:
   * a 429, a dropped reply) for up to HISTORY_READ_PATIENCE_MS, waiting from HISTORY_READ_FIRST_DELAY_MS doubling up
   * to holdingRetryMaxMs, while the client waits: as the live feed waits such refusals out, rather than ending the
   * stream before its first event (found from outside, h80: resumes under a flaky node ended RESOURCE_EXHAUSTED or
   * UNAVAILABLE with nothing sent). Bounded by time, not by tries, and each wait drawn from half to all of its span:
   * reads refused together are not tried again together, and a steady rate limit that serves some of them each
   * second lets all through (found from outside, h82: at 5 calls a second, where the live feed took most, 5 tries in
   * 2.75 s ended resumes of 30 blocks RESOURCE_EXHAUSTED in 4 of 4 runs).
   */
  protected async historyRead<T>(read: () => Promise<T>, signal: CallSignal, retry: (err: unknown) => boolean = (err) => err instanceof GatewayError): Promise<T> {
    const giveUpAt = Date.now() + HISTORY_READ_PATIENCE_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        return await read();
      } catch (err) {
        if (Date.now() >= giveUpAt || signal.aborted || this.#stopped || !retry(err)) throw err;
        const span = Math.min(HISTORY_READ_FIRST_DELAY_MS * 2 ** Math.min(attempt - 1, 16), this.holdingRetryMaxMs);
        await new Promise((resolve) => setTimeout(resolve, span * (0.5 + Math.random() / 2)));
        if (signal.aborted) throw err;
      }
    }
  }

  /**
   * Like run, but a failed task is queued again after a backoff (up to `maxDelayMs`) until it succeeds or the feed
   * stops.
   */
  protected runUntilDone(what: string, task: () => Promise<void>, maxDelayMs = RETRY.maxDelayMs, attempt = 0): void {
    clearTimeout(this.#retryTimers.get(what));
    this.#retryTimers.delete(what);
    void this.run(what, async () => {
      try {
        await task();
        return undefined;
      } catch (err) {
        if (this.#stopped || isHistoryLost(err)) throw err;
        const delay = backoffDelay(attempt, { minDelayMs: RETRY.minDelayMs, maxDelayMs });
        // Said at warn once until it works again, as #failed says a failing poll (found from outside: a WebSocket
        // upstream that kept dropping wrote 116 of these in 50 s).
        const fields = { network: this.ctx.network.name, feed: this.topic.kind, err: (err as Error).message, retryMs: delay };
        if (this.#failing.has(what)) this.ctx.log.debug(fields, `${what} failed again; retrying (said at warn once, until it works again)`);
        else this.ctx.log.warn(fields, `${what} failed; retrying`);
        this.#failing.add(what);
        this.#retryTimers.set(
          what,
          setTimeout(() => this.runUntilDone(what, task, maxDelayMs, attempt + 1), delay),
        );
        return RETRYING;
      }
    });
  }

  #failed(what: string, err: unknown): void {
    const fields = { network: this.ctx.network.name, feed: this.topic.kind, err: (err as Error).message };
    if (isHistoryLost(err)) {
      this.ctx.log.warn(fields, `${what}: ending the subscribers`);
      this.endAll(err);
      return;
    }
    // A poll that fails the same way every interval (a node down, one that refuses filters) is said once at warn,
    // not every interval (found from outside: the log filled with one warning per poll).
    const again = this.#failing.has(what);
    this.#failing.add(what);
    if (again) this.ctx.log.debug(fields, `${what} failed again (said at warn once, until it works again)`);
    else this.ctx.log.warn(fields, `${what} failed`);
  }
}

/**
 * The node answered a subscribe with an error (it refuses subscriptions for
 * now: a provider's subscription limit, a node restarted without them), as
 * against a connection that failed. Feeds then poll until it accepts again,
 * so subscribers are not left with nothing (found from outside: heads and
 * logs stopped, with no error, until the backoff's next try succeeded).
 */
export function nodeRefused(err: unknown): boolean {
  return err instanceof GatewayError && err.origin === "upstream";
}

/** The feed could not fill a gap (too long): its subscribers must start over. */
export function isHistoryLost(err: unknown): err is GatewayError {
  return err instanceof GatewayError && err.code === NODEGATE_CODES.historyLost;
}
