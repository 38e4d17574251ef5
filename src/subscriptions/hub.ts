/**
 * Fan-out for one network: one feed (one upstream subscription, or one
 * poller) per distinct topic, however many clients ask for it; the last
 * client leaving stops it and unsubscribes upstream. Logs feeds share the
 * network's heads feed, which tells them about reorganizations.
 */
import type { Logger } from "pino";
import type { Limits, SubscriptionSettings } from "../config/config.js";
import { shuttingDown } from "../errors/catalogue.js";
import type { GatewayError } from "../errors/gateway-error.js";
import type { Metrics } from "../observability/metrics.js";
import type { Network } from "../upstream/network.js";
import { WsUpstream } from "../upstream/ws-upstream.js";
import { ChainReader } from "./chain-reader.js";
import type { Consumer } from "./consumer.js";
import type { Feed, FeedContext } from "./feed.js";
import { HeadsFeed } from "./heads-feed.js";
import { LogsFeed } from "./logs-feed.js";
import { PendingTransactionsFeed } from "./pending-transactions-feed.js";
import { ResumeGate } from "./resume-gate.js";
import { type Topic, topicKey } from "./topic.js";
import { type CallSignal, NEVER_CANCELLED } from "../call-signal.js";

export interface SubscribeOptions {
  /** Resume point: history from this block first, then live. */
  fromBlock?: number | undefined;
  /** Aborts a history delivery when the client goes away. */
  signal?: CallSignal | undefined;
}

/** A client's place in a feed; close() leaves it. */
export interface Subscription {
  close(): void;
}

interface Entry {
  feed: Feed;
  started: Promise<void>;
  /** Clients plus the logs feeds that follow the chain (heads feed only). */
  users: number;
  /** What the entry itself holds (a logs feed holds the heads feed). */
  release?: () => void;
}

export class SubscriptionHub {
  readonly #ctx: FeedContext;
  readonly #metrics: Metrics | undefined;
  readonly #entries = new Map<string, Entry>();
  #closed = false;

  constructor(network: Network, settings: SubscriptionSettings, limits: Limits, log: Logger, metrics?: Metrics) {
    this.#ctx = {
      network,
      reader: new ChainReader(network, limits),
      settings,
      limits,
      log,
      ws: network.primary instanceof WsUpstream ? network.primary : undefined,
    };
    this.#metrics = metrics;
  }

  /** Feeds running now (one upstream subscription or poller each), by topic key. */
  get feedKeys(): string[] {
    return [...this.#entries.keys()];
  }

  /**
   * Adds `consumer` to the topic's feed (starting it if it is the first) and
   * resolves once the feed runs; with a resume point, once the history is
   * sent. Rejects with the start's or the history's failure.
   */
  async subscribe(topic: Topic, consumer: Consumer, options: SubscribeOptions = {}): Promise<Subscription> {
    if (this.#closed) throw shuttingDown();
    const entry = this.#acquire(topic);
    const gate =
      options.fromBlock === undefined
        ? undefined
        : new ResumeGate(consumer, options.fromBlock, this.#ctx.settings.clientBufferSize, (entry.feed.position ?? 0) - this.#ctx.settings.reorgWindowBlocks);
    const member = gate ?? consumer;
    entry.feed.attach(member, gate !== undefined);
    let closed = false;
    let counted = false;
    const subscription: Subscription = {
      close: () => {
        if (closed) return;
        closed = true;
        entry.feed.detach(member);
        if (counted) this.#metrics?.subscriptions.dec({ kind: topic.kind });
        this.#release(entry);
      },
    };
    try {
      await entry.started;
      if (gate !== undefined && options.fromBlock !== undefined) {
        await gate.sendHistory((from, deliver, signal, atLeastTo) => entry.feed.history(from, deliver, signal, gate, atLeastTo), options.signal ?? NEVER_CANCELLED);
      }
    } catch (err) {
      subscription.close();
      throw err;
    }
    // Counted once live, so the gauge says how many clients are receiving.
    if (!closed) {
      counted = true;
      this.#metrics?.subscriptions.inc({ kind: topic.kind });
    }
    return subscription;
  }

  /** Ends every subscriber (they may resume elsewhere) and stops every feed. */
  async close(error: GatewayError = shuttingDown()): Promise<void> {
    this.#closed = true;
    const entries = [...this.#entries.values()];
    for (const key of [...this.#entries.keys()]) this.#forget(key);
    for (const entry of entries) entry.feed.endAll(error);
    await Promise.all(entries.map((entry) => entry.feed.stop().catch(() => undefined)));
  }

  #acquire(topic: Topic): Entry {
    const key = topicKey(topic);
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      entry = this.#create(topic);
      this.#entries.set(key, entry);
      this.#metrics?.subscriptionFeeds.inc({ network: this.#ctx.network.name, kind: topic.kind });
      const created = entry;
      created.started.catch(() => {
        // A feed that failed to start is forgotten, so the next subscriber tries afresh.
        if (this.#entries.get(key) === created) this.#forget(key);
      });
    }
    entry.users++;
    return entry;
  }

  #release(entry: Entry): void {
    entry.users--;
    if (entry.users > 0) return;
    const key = topicKey(entry.feed.topic);
    if (this.#entries.get(key) === entry) this.#forget(key);
    entry.release?.();
    entry.feed.stop().catch((err: unknown) => this.#ctx.log.warn({ err: (err as Error).message }, "stopping a subscription feed failed"));
  }

  #forget(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#metrics?.subscriptionFeeds.dec({ network: this.#ctx.network.name, kind: entry.feed.topic.kind });
  }

  #create(topic: Topic): Entry {
    switch (topic.kind) {
      case "newHeads": {
        const feed = new HeadsFeed(this.#ctx);
        return { feed, started: feed.start(), users: 0 };
      }
      case "newPendingTransactions": {
        const feed = new PendingTransactionsFeed(this.#ctx);
        return { feed, started: feed.start(), users: 0 };
      }
      case "logs": {
        const heads = this.#acquire({ kind: "newHeads" });
        const feed = new LogsFeed(topic, this.#ctx, heads.feed as HeadsFeed);
        let released = false;
        const release = () => {
          if (released) return;
          released = true;
          this.#release(heads);
        };
        const started = heads.started.then(() => feed.start());
        started.catch(release);
        return { feed, started, users: 0, release };
      }
    }
  }
}
