/**
 * One eth_subscribe on the node's WebSocket, kept for a feed: notifications
 * are routed to the feed by the node's subscription id (which never leaves
 * nodegate), and the feed hears when the connection drops and when it is
 * back, so it can subscribe again (the old id died with the old connection)
 * and fill what it missed.
 */
import type { Logger } from "pino";
import { upstreamBadResponse } from "../errors/catalogue.js";
import type { Network } from "../upstream/network.js";
import type { SubscriptionNotification } from "../upstream/notification.js";
import { resultText } from "../upstream/reply.js";
import type { WsUpstream } from "../upstream/ws-upstream.js";

export interface UpstreamSubscriptionHandlers {
  /** A pushed value's JSON text. */
  notification(text: string): void;
  /** The connection dropped; notifications stop until reconnected() and renew(). */
  disconnected(): void;
  /** The connection is open again; the feed calls renew() and fills the gap. */
  reconnected(): void;
}

export class UpstreamSubscription {
  readonly #network: Network;
  readonly #upstream: WsUpstream;
  readonly #params: string;
  readonly #handlers: UpstreamSubscriptionHandlers;
  readonly #log: Logger;
  #id: string | undefined;
  #stopRouting: (() => void) | undefined;
  #stopWatching: (() => void) | undefined;
  #closed = false;
  /** Counts renew() calls: only the latest one's subscription is kept. */
  #renewals = 0;

  constructor(network: Network, upstream: WsUpstream, params: string, handlers: UpstreamSubscriptionHandlers, log: Logger) {
    this.#network = network;
    this.#upstream = upstream;
    this.#params = params;
    this.#handlers = handlers;
    this.#log = log;
  }

  /** The node's id for the current subscription (tests and logs). */
  get id(): string | undefined {
    return this.#id;
  }

  /** Subscribes and starts following the connection's state. */
  async open(): Promise<void> {
    this.#stopWatching = this.#upstream.onStateChange((change) => {
      if (this.#closed) return;
      if (change.state === "disconnected") {
        this.#forget();
        this.#handlers.disconnected();
      } else if (change.state === "open" && change.reconnected) {
        this.#handlers.reconnected();
      }
    });
    try {
      await this.renew();
    } catch (err) {
      this.#stopWatching();
      throw err;
    }
  }

  /**
   * Subscribes (again) on the current connection. A subscription still held
   * is on it too (a dropped connection's are forgotten as it drops), and so
   * is one an earlier renew() is still making: the node would go on pushing
   * on them, so each is unsubscribed (found from outside: a feed started
   * while the connection came back subscribed twice, and kept one orphan).
   */
  async renew(): Promise<void> {
    const renewal = ++this.#renewals;
    const held = this.#id;
    this.#forget();
    if (held !== undefined) void this.#unsubscribe(held);
    const result = await this.#network.call("eth_subscribe", this.#params, { idempotent: false });
    const text = resultText(result);
    let id: unknown;
    try {
      id = JSON.parse(text);
    } catch {
      id = undefined;
    }
    if (typeof id !== "string" && typeof id !== "number") throw upstreamBadResponse(`eth_subscribe answered ${text.slice(0, 80)}, not a subscription id`);
    const key = typeof id === "string" ? id : text;
    if (this.#closed || renewal !== this.#renewals) {
      await this.#unsubscribe(key);
      return;
    }
    this.#stopRouting = this.#upstream.onSubscription(key, (n: SubscriptionNotification) => {
      this.#handlers.notification(n.result.body.toString("utf8", n.result.start, n.result.end));
    });
    this.#id = key;
  }

  /** Unsubscribes (best effort: the answer is not awaited for long) and stops following the connection. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopWatching?.();
    const id = this.#id;
    this.#forget();
    if (id !== undefined) await this.#unsubscribe(id);
  }

  #forget(): void {
    this.#stopRouting?.();
    this.#stopRouting = undefined;
    this.#id = undefined;
  }

  async #unsubscribe(id: string): Promise<void> {
    if (this.#upstream.state !== "open") return;
    try {
      await this.#network.call("eth_unsubscribe", `[${JSON.stringify(id)}]`, { idempotent: false, timeoutMs: 5000 });
    } catch (err) {
      this.#log.debug({ err: (err as Error).message }, "upstream eth_unsubscribe failed");
    }
  }
}
