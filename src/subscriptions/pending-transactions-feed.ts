/**
 * Hashes of transactions entering the node's pending pool: from the node's
 * newPendingTransactions subscription over WebSocket, or from a pending
 * transaction filter polled over HTTP (made again when the node forgets it),
 * and over WebSocket while the node refuses to subscribe again after a
 * reconnect. A mempool has no history, so nothing is backfilled after a
 * reconnect; a hash seen twice while two sources overlap (a resubscription
 * overlapping the old one, a filter overlapping the subscription: up to
 * OVERLAP_MS after the switch) is sent once. Later, a hash seen again is the
 * transaction entering the pool again, and is sent again, as the node sends it.
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
/** How long after a switch of source (a resubscription, a filter started or dropped) repeats are dropped. */
const OVERLAP_MS = 30_000;

export class PendingTransactionsFeed extends Feed {
  readonly #recent = new Set<string>();
  #subscription: UpstreamSubscription | undefined;
  #poller: Poller | undefined;
  #filterId: string | undefined;
  /** Until when a hash seen before is a repeat of an overlapping source, not the transaction entering the pool again. */
  #overlapUntil = 0;

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
    this.#overlapUntil = Date.now() + OVERLAP_MS;
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
        notification: (text) => void this.run("a pushed pending transaction", async () => this.#accept(readPendingTransaction(text))),
        disconnected: () => {},
        reconnected: () => {
          this.#overlapUntil = Date.now() + OVERLAP_MS;
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
            this.#overlapUntil = Date.now() + OVERLAP_MS;
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
    for (const hash of hashes) this.#accept(readPendingTransaction(JSON.stringify(hash)));
  }

  #accept(event: PendingTransactionEvent): void {
    if (this.#recent.has(event.hash)) {
      // A repeat while two sources overlap is dropped; otherwise the transaction entered the pool again (put back by
      // a reorganization, or sent again after it was dropped), which the node announces again, and so do we.
      if (Date.now() < this.#overlapUntil) return;
      this.#recent.delete(event.hash);
    }
    this.#recent.add(event.hash);
    if (this.#recent.size > RECENT) this.#recent.delete(this.#recent.values().next().value as string);
    this.emit(event);
  }
}
