/**
 * Hashes of transactions entering the node's pending pool: from the node's
 * newPendingTransactions subscription over WebSocket, or from a pending
 * transaction filter polled over HTTP (made again when the node forgets it),
 * and over WebSocket while the node refuses to subscribe again after a
 * reconnect. A mempool has no history, so nothing is backfilled after a
 * reconnect; a hash two sources send while both are live (a filter read
 * once more after the subscription is back) is sent once. A hash the same
 * source sends again, one another source sent before this one started (a
 * subscription on a connection now closed), or one sent long before, is the
 * transaction entering the pool again, and is sent again, as the node sends it
 * (from the filter: once an answer came without it, as a node that answers
 * with its whole pool each time repeats every hash; and a filter's first
 * answer, which may be such a whole pool, repeats nothing sent in the 30 s
 * before).
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
   * again is the transaction entering the pool again; one another source sent within OVERLAP_MS, after this one
   * started, is the overlap.
   */
  #sources = 0;
  /** When each live source started: a hash another source sent before it started cannot be an overlap with it. */
  readonly #startedAt = new Map<number, number>([[0, 0]]);
  #subscriptionSource = 0;
  #filterSource = 0;
  /** The hashes of the filter's last answer. */
  #lastPoll = new Set<string>();
  /** Whether this run of the filter has answered: a first answer may be a whole pool another source announced. */
  #filterAnswered = false;

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
    this.#startedAt.delete(this.#filterSource);
    this.#filterSource = ++this.#sources;
    this.#startedAt.set(this.#filterSource, Date.now());
    this.#lastPoll = new Set();
    this.#filterAnswered = false;
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
          this.#startedAt.delete(this.#subscriptionSource);
          this.#subscriptionSource = ++this.#sources;
          this.#startedAt.set(this.#subscriptionSource, Date.now());
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
      result = await this.ctx.network.call("eth_getFilterChanges", `[${JSON.stringify(this.#filterId)}]`, { idempotent: true, ownRead: true });
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
    // Every entry read before any is sent: a malformed one fails the poll with nothing sent, not after some were
    // (the next answer, the last one not having been kept, would send them again).
    const events = hashes.map((hash) => readPendingTransaction(JSON.stringify(hash)));
    for (const event of events) {
      if (!current.has(event.hash) && !previous.has(event.hash)) this.#accept(event, this.#filterSource, !this.#filterAnswered);
      current.add(event.hash);
    }
    this.#lastPoll = current;
    this.#filterAnswered = true;
  }

  #accept(event: PendingTransactionEvent, source: number, wholePoolMaybe = false): void {
    const now = Date.now();
    const seen = this.#recent.get(event.hash);
    // Sent by another source just before: the overlap. Sent by this source before, or long ago: the transaction
    // entered the pool again (put back by a reorganization, or sent again after it was dropped), which the node
    // announces again, and so do we.
    // An overlap only while both were live: what another source sent before this one started is the transaction
    // entering the pool again (a subscription on a connection now closed, a filter that reports only what came after).
    if (seen !== undefined && seen.source !== source && now - seen.at < OVERLAP_MS && (wholePoolMaybe || seen.at >= (this.#startedAt.get(source) ?? 0))) return;
    this.#recent.delete(event.hash);
    this.#recent.set(event.hash, { source, at: now });
    if (this.#recent.size > RECENT) this.#recent.delete(this.#recent.keys().next().value as string);
    this.emit(event);
  }
}
