/**
 * eth_subscribe and eth_unsubscribe on one native WebSocket connection.
 * Subscription ids are nodegate's own (the node's never reach the client);
 * notifications go out in the standard eth_subscription shape, never before
 * the answer that named their subscription. The connection's unsent
 * notifications are bounded, in number (ReaderPace) and in bytes
 * (limits.maxWsUnreadBytes, as answers are): a client that stops reading is
 * disconnected with 1008 and a reason instead of growing nodegate's memory.
 */
import { randomBytes } from "node:crypto";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import WebSocket from "ws";
import type { AccessControl } from "../auth/access-control.js";
import type { ApiKey } from "../auth/api-keys.js";
import { acquireSubscription, type KeyQuotas } from "../auth/key-quotas.js";
import type { Limits } from "../config/config.js";
import { cancelled, invalidParams, invalidRequest, MAX_CLOSE_REASON_BYTES, subscriberTooSlow } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { tooManyParams } from "../methods/policies/get-logs-limits.js";
import type { Consumer } from "../subscriptions/consumer.js";
import type { FeedEvent } from "../subscriptions/events.js";
import { ReaderPace } from "../subscriptions/reader-pace.js";
import type { Subscription, SubscriptionHub } from "../subscriptions/hub.js";
import { filterSize, inBlockRange, type LogBlockRange, readSubscribeParams } from "../subscriptions/topic.js";
import type { Network } from "../upstream/network.js";
import type { Call } from "./envelope.js";
import type { Outcome } from "./native-call.js";

/** Most subscriptions one connection may hold (each may be an upstream subscription of its own). */
export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 1024;

/** Close codes: 1008 policy violation (too slow), 1011 a subscription could not go on. */
const CLOSE_TOO_SLOW = 1008;
const CLOSE_ENDED = 1011;

export interface WsSubscriptionOptions {
  ws: WebSocket;
  network: Network;
  hub: () => SubscriptionHub;
  access: AccessControl;
  key: ApiKey;
  limits: Limits;
  /** Notifications a client may leave unsent before it counts as slow (ReaderPace). */
  bufferSize: number;
  /** Per-key quotas: each subscription holds one of the key's subscriptions while it lasts. */
  quotas?: KeyQuotas | undefined;
  log: Logger;
}

/** The subscriptions one incoming message created; their notifications wait for its answer. */
export type MessageSubscriptions = object;

export interface WsSubscriptionSession {
  /** Answers eth_subscribe and eth_unsubscribe; undefined for every other method. */
  handle(call: Call, message: MessageSubscriptions): Promise<Outcome> | undefined;
  /** The answer to `message` went out: notifications of the subscriptions it created may follow. */
  release(message: MessageSubscriptions): void;
  /** Leaves every subscription (the connection closed). */
  close(): void;
  /**
   * nodegate is stopping: a subscription ended from now on (the hub ends them
   * all at the drain deadline) stops notifying but leaves the connection open,
   * which the WebSocket handler closes (1012) once what the client sent is
   * answered.
   */
  drain(): void;
  readonly count: number;
}

/** A close reason is at most 123 bytes: the error's own short form (GatewayError.closeReason), cut only past that. */
function closeReason(error: GatewayError): string {
  const text = error.closeReason ?? error.message;
  return Buffer.byteLength(text) <= MAX_CLOSE_REASON_BYTES ? text : `${Buffer.from(text).subarray(0, 120).toString("utf8").replace(/\uFFFD+$/, "")}...`;
}

function result(text: string): Outcome {
  const body = Buffer.from(text);
  return { result: { body, start: 0, end: body.length } };
}

export function createWsSubscriptionSession(options: WsSubscriptionOptions): WsSubscriptionSession {
  const { ws } = options;
  const subscriptions = new Map<string, { consumer: NotificationConsumer; subscription: Subscription; release: () => void }>();
  /** Subscriptions whose notifications wait for the answer that names them, by message. */
  const unreleased = new Map<MessageSubscriptions, NotificationConsumer[]>();
  let unsent = 0;
  const pace = new ReaderPace(options.bufferSize);
  let closed = false;
  let draining = false;

  const disconnect = (code: number, error: GatewayError): void => {
    if (closed) return;
    options.log.warn({ network: options.network.name, reason: error.message }, "closing a native WebSocket subscriber");
    session.close();
    if (ws.readyState === WebSocket.OPEN) ws.close(code, closeReason(error));
  };

  class NotificationConsumer implements Consumer {
    readonly #prefix: string;
    readonly #blocks: LogBlockRange | undefined;
    #held: string[] | undefined = [];
    #ended = false;

    constructor(id: string, blocks: LogBlockRange | undefined) {
      this.#prefix = `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"${id}","result":`;
      this.#blocks = blocks;
    }

    get ended(): boolean {
      return this.#ended || closed;
    }

    push(event: FeedEvent): void {
      if (this.ended) return;
      if (event.kind === "log" && !inBlockRange(this.#blocks, event.blockNumber)) return;
      const text = `${this.#prefix}${event.text}}}`;
      if (this.#held === undefined) {
        send(text);
        return;
      }
      // Held only until the subscribe answer goes out, which the client cannot hurry: a bound on memory alone.
      if (this.#held.length >= options.bufferSize * 4) {
        disconnect(CLOSE_TOO_SLOW, subscriberTooSlow(this.#held.length));
        return;
      }
      this.#held.push(text);
    }

    ready(): Promise<void> {
      return Promise.resolve();
    }

    end(error: GatewayError): void {
      if (this.ended) return;
      this.#ended = true;
      if (!draining) disconnect(CLOSE_ENDED, error);
    }

    release(): void {
      const held = this.#held ?? [];
      this.#held = undefined;
      for (const text of held) send(text);
    }
  }

  /**
   * The connection is corked from a turn's first notification until the turn ends: a feed hands out a poll's whole
   * batch in one turn (a block's 40 logs, to each of 100 sockets), and a write each made a syscall each, holding the
   * loop up to 0.8 s at a time (found from outside: every other caller's calls waited that long every 2 s). One write
   * per connection per turn instead.
   */
  let corked: Duplex | undefined;
  const uncork = (): void => {
    corked?.uncork();
    corked = undefined;
  };

  const send = (text: string): void => {
    if (closed || ws.readyState !== WebSocket.OPEN) return;
    if (corked === undefined) {
      corked = (ws as unknown as { _socket?: Duplex })._socket;
      if (corked !== undefined) {
        corked.cork();
        process.nextTick(uncork);
      }
    }
    if (unsent === 0) pace.progressed();
    else if (pace.tooSlow(unsent)) {
      disconnect(CLOSE_TOO_SLOW, subscriberTooSlow(unsent));
      return;
    } else if (ws.bufferedAmount > options.limits.maxWsUnreadBytes) {
      disconnect(CLOSE_TOO_SLOW, subscriberTooSlow(unsent, ws.bufferedAmount));
      return;
    }
    unsent++;
    ws.send(text, { binary: false }, () => {
      unsent--;
      pace.progressed();
    });
    pace.watch(unsent, checkPace);
  };

  /** Judges the client again when the grace ran out with notifications unsent (no notification may come to prompt it). */
  const checkPace = (): void => {
    if (closed) return;
    if (pace.tooSlow(unsent)) disconnect(CLOSE_TOO_SLOW, subscriberTooSlow(unsent));
    else pace.watch(unsent, checkPace);
  };

  const subscribe = async (call: Call, message: MessageSubscriptions): Promise<Outcome> => {
    const { topic, blocks } = readSubscribeParams(call.params);
    const addresses = topic.kind === "logs" ? [...topic.filter.addresses] : undefined;
    options.access.checkCall(options.key, "eth_subscribe", addresses);
    if (topic.kind === "logs") {
      const size = filterSize(topic.filter);
      if (size > options.limits.getLogsMaxParams) throw tooManyParams(size, options.limits.getLogsMaxParams);
    }
    if (subscriptions.size >= MAX_SUBSCRIPTIONS_PER_CONNECTION) {
      throw invalidParams(`eth_subscribe: this connection already holds ${MAX_SUBSCRIPTIONS_PER_CONNECTION} subscriptions; unsubscribe some first`);
    }
    const id = `0x${randomBytes(16).toString("hex")}`;
    const consumer = new NotificationConsumer(id, blocks);
    const release = options.quotas === undefined ? () => {} : acquireSubscription(options.quotas, options.key);
    let subscription: Subscription;
    try {
      subscription = await options.hub().subscribe(topic, consumer);
    } catch (err) {
      release();
      throw err;
    }
    if (closed) {
      subscription.close();
      release();
      throw cancelled();
    }
    subscriptions.set(id, { consumer, subscription, release });
    const waiting = unreleased.get(message);
    if (waiting === undefined) unreleased.set(message, [consumer]);
    else waiting.push(consumer);
    return result(`"${id}"`);
  };

  const unsubscribe = (call: Call): Outcome => {
    const params = call.params;
    if (!Array.isArray(params) || params.length !== 1 || typeof params[0] !== "string") {
      throw invalidParams("eth_unsubscribe: want [subscriptionId]");
    }
    const entry = subscriptions.get(params[0].toLowerCase());
    if (entry === undefined) return result("false");
    subscriptions.delete(params[0].toLowerCase());
    entry.subscription.close();
    entry.release();
    return result("true");
  };

  const session: WsSubscriptionSession = {
    handle(call, message) {
      if (call.method !== "eth_subscribe" && call.method !== "eth_unsubscribe") return undefined;
      // On another family's network they are Ethereum methods called in the wrong place: the call path says where to go.
      if (options.network.family !== "eth") return undefined;
      // A subscription whose id the client is never told could only hold a slot and send what nobody can route (Anvil creates none either).
      if (call.id === undefined && call.method === "eth_subscribe") {
        return Promise.resolve({ error: invalidRequest("eth_subscribe needs an id: a notification would create a subscription the client never learns of") });
      }
      const run = call.method === "eth_subscribe" ? subscribe(call, message) : Promise.resolve().then(() => unsubscribe(call));
      return run.catch((err: unknown) => {
        if (err instanceof GatewayError) return { error: err };
        throw err;
      });
    },
    release(message) {
      const waiting = unreleased.get(message);
      if (waiting === undefined) return;
      unreleased.delete(message);
      for (const consumer of waiting) consumer.release();
    },
    close() {
      if (closed) return;
      closed = true;
      pace.stop();
      for (const { subscription, release } of subscriptions.values()) {
        subscription.close();
        release();
      }
      subscriptions.clear();
      unreleased.clear();
    },
    drain() {
      draining = true;
    },
    get count() {
      return subscriptions.size;
    },
  };
  return session;
}
