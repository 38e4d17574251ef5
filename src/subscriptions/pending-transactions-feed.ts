/**
 * Hashes of transactions entering the node's pending pool: from the node's
 * newPendingTransactions subscription over WebSocket, or from a pending
 * transaction filter polled over HTTP (made again when the node forgets it),
 * and over WebSocket while the node refuses to subscribe again after a
 * reconnect. A mempool has no history, so nothing is backfilled after a
 * reconnect; a hash two sources send while they overlap (a resubscription
 * overlapping the old one, a filter overlapping the subscription) is sent
 * once. A hash the same source sends again, or one sent long before, is the
 * transaction entering the pool again, and is sent again, as the node sends it
 * (from the filter: once an answer came without it, as a node that answers
 * with its whole pool each time repeats every hash).
 */
import { upstreamBadResponse } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { readResult, resultText, type UpstreamResult } from "../upstream/reply.js";
import type { WsUpstream } from "../upstream/ws-upstream.js";
import { type PendingTransactionEvent, readPendingTransaction } from "./events.js";
import { Feed, type FeedContext, nodeRefused } from "./feed.js";
import { Poller } from "./poller.js";
import { UpstreamSubscription } from "./upstream-subscription.js";

/** How many recent hashes are remembered to drop repeats. */
const RECENT = 10_000;
/** How long a hash one source sent is a repeat when another source sends it (the overlap of a switch). */
const OVERLAP_MS = 30_000;

export class PendingTransactionsFeed extends Feed {
  /** Recent hashes: which source sent each, and when. */
  readonly #recent = new Map<string, { source: number; at: number }>();
  #subscription: UpstreamSubscription | undefined;
  #poller: Poller | undefined;
  #filterId: string | undefined;
  /**
   * Sources of hashes: each subscription (a renewed one is another), each run of the filter. A hash one source sends
   * again is the transaction entering the pool again; one another source sent within OVERLAP_MS is the overlap.
   */
  #sources = 0;
  #subscriptionSource = 0;
  #filterSource = 0;
  /** The hashes of the filter's last answer. */
  #lastPoll = new Set<string>();

  constructor(ctx: FeedContext) {
    super({ kind: "newPendingTransactions" }, ctx);
  }

  get position(): number | undefined {
    return undefined;
  }

  start(): Promise<void> {
    return this.queue(async () => {
      if (this.ctx.ws !== undefined) {
        await this.#subscribe(this.ctx.ws);
        return;
      }
      this.#filterId = await this.#newFilter();
      this.#startPolling();
    });
  }

  #startPolling(): void {
    this.#filterSource = ++this.#sources;
    this.#lastPoll = new Set();
    this.#poller = new Poller(this.ctx.settings.pollIntervalMs, () => this.run("polling the pending transaction filter", () => this.#poll()));
    this.#poller.start();
  }

  /** Back on the subscription: the filter is read once more before it goes, for what came between its last poll and now. */
  async #stopPolling(): Promise<void> {
    if (this.#poller === undefined) return;
    this.#poller.stop();
    this.#poller = undefined;
    if (this.#filterId !== undefined) await this.#poll().catch(() => undefined);
    await this.#uninstallFilter();
  }

  async #subscribe(ws: WsUpstream): Promise<void> {
    this.#subscription = new UpstreamSubscription(
      this.ctx.network,
      ws,
      '["newPendingTransactions"]',
      {
        notification: (text) => {
          const source = this.#subscriptionSource; // as it arrived: the run may come after a renewal
          void this.run("a pushed pending transaction", async () => this.#accept(readPendingTransaction(text), source));
        },
        disconnected: () => {},
        reconnected: () => {
          this.#subscriptionSource = ++this.#sources;
          this.runUntilDone("resubscribing to newPendingTransactions after a reconnect", async () => {
            try {
              await this.#subscription?.renew();
            } catch (err) {
              // Hashes are read from a filter until the node takes the subscription again; the first poll, made at
              // once, makes the filter (a node that refuses filters too costs a failed poll each interval, not this loop).
              if (nodeRefused(err) && this.#poller === undefined) {
                this.#startPolling();
                void this.run("polling the pending transaction filter", () => this.#poll());
              }
              throw err;
            }
            await this.#stopPolling();
          });
        },
      },
      this.ctx.log,
    );
    await this.#subscription.open();
  }

  protected async shutdown(): Promise<void> {
    this.#poller?.stop();
    await this.#subscription?.close();
    await this.#uninstallFilter();
  }

  async #uninstallFilter(): Promise<void> {
    const id = this.#filterId;
    if (id === undefined) return;
    this.#filterId = undefined;
    await this.ctx.network.call("eth_uninstallFilter", `[${JSON.stringify(id)}]`, { idempotent: true }).catch(() => undefined);
  }

  history(): Promise<undefined> {
    return Promise.resolve(undefined);
  }

  async #newFilter(): Promise<string> {
    const text = resultText(await this.ctx.network.call("eth_newPendingTransactionFilter", "[]", { idempotent: false }));
    const id = JSON.parse(text) as unknown;
    if (typeof id !== "string") throw upstreamBadResponse(`eth_newPendingTransactionFilter answered ${text.slice(0, 80)}, not a filter id`);
    return id;
  }

  async #poll(): Promise<void> {
    this.#filterId ??= await this.#newFilter();
    let result: UpstreamResult;
    try {
      result = await this.ctx.network.call("eth_getFilterChanges", `[${JSON.stringify(this.#filterId)}]`, { idempotent: true });
    } catch (err) {
      // Nodes drop filters nobody polled for a while (and restarted nodes know none): make a new one next time.
      if (err instanceof GatewayError && err.origin === "upstream") this.#filterId = undefined;
      throw err;
    }
    const hashes = readResult(result, JSON.parse) as unknown;
    if (!Array.isArray(hashes)) throw upstreamBadResponse("eth_getFilterChanges did not answer a list");
    // A hash also in the previous answer is the same entry (a node that answers with its whole pool each time); one
    // that comes back after an answer without it entered the pool again.
    const previous = this.#lastPoll;
    const current = new Set<string>();
    for (const hash of hashes) {
      const event = readPendingTransaction(JSON.stringify(hash));
      if (!current.has(event.hash) && !previous.has(event.hash)) this.#accept(event, this.#filterSource);
      current.add(event.hash);
    }
    this.#lastPoll = current;
  }

  #accept(event: PendingTransactionEvent, source: number): void {
    const now = Date.now();
    const seen = this.#recent.get(event.hash);
    // Sent by another source just before: the overlap. Sent by this source before, or long ago: the transaction
    // entered the pool again (put back by a reorganization, or sent again after it was dropped), which the node
    // announces again, and so do we.
    if (seen !== undefined && seen.source !== source && now - seen.at < OVERLAP_MS) return;
    this.#recent.delete(event.hash);
    this.#recent.set(event.hash, { source, at: now });
    if (this.#recent.size > RECENT) this.#recent.delete(this.#recent.keys().next().value as string);
    this.emit(event);
  }
}
