/**
 * JSON-RPC over one multiplexed WebSocket to the node. nodegate numbers the
 * requests itself (callers' ids never reach the node), so replies that come
 * back in any order find their caller. The connection is kept alive with
 * pings, re-opened with capped exponential backoff when it drops, and a
 * request in flight at the drop is sent once more on the new connection when
 * its method is idempotent, or fails with upstreamConnectionLost otherwise.
 *
 * Subscriptions (later) hook in through onSubscription (notifications routed
 * by subscription id) and onStateChange (to resubscribe after a reconnect).
 */
import { webSocketErrorWords } from "./network-errors.js";
import type { IncomingMessage } from "node:http";
import type { Logger } from "pino";
import WebSocket from "ws";
import { cancelled, capacityExceeded, replyTooLarge, requestTooLargeForNode, shuttingDown, upstreamBadResponse, upstreamConnectionLost, upstreamTimeout, upstreamUnavailable } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { DEFAULT_WEBSOCKET } from "../config/config.js";
import { backoffDelay } from "./backoff.js";
import { askedPauseSeconds } from "./retry-after.js";
import { readSubscriptionNotification, type SubscriptionNotification } from "./notification.js";
import { peekReplyId, readReply, requestBody, type UpstreamResult } from "./reply.js";
import type { CallOptions, Upstream } from "./upstream.js";

export interface WsUpstreamOptions {
  /** The node's WebSocket URL, for example wss://mainnet.example/ws/v3/<KEY>. */
  url: string;
  /** Safe-to-log name. */
  label: string;
  /** How often the connection is pinged, in ms. Default 5 000 (websocket.upstreamPingIntervalMs). */
  pingIntervalMs?: number | undefined;
  /** A ping unanswered for this long counts as a dropped connection, in ms; also the handshake deadline. Default 5 000. */
  pongTimeoutMs?: number | undefined;
  /** First reconnect delay, doubled per failed attempt, in ms. Default 250. */
  reconnectMinDelayMs?: number | undefined;
  /** Longest reconnect delay, in ms. Default 1000, so a node that comes back is reached within a second. */
  reconnectMaxDelayMs?: number | undefined;
  /** Largest message accepted from the node, in bytes. Default 256 MiB (providers cap eth_getLogs answers near 150 MB). */
  maxMessageBytes?: number | undefined;
  /**
   * Largest reply taken for a call (limits.maxReplyBytesInFlight): a larger one could never be held, and is that
   * call's -32052, as an HTTP node's is; the connection, and the node's other replies, go on.
   */
  maxReplyBytes?: number | undefined;
  log?: Logger | undefined;
}

/**
 * idle: never used yet; connecting: opening (first time or again); open;
 * disconnected: dropped, waiting to reconnect; closed: close() was called.
 */
export type WsUpstreamState = "idle" | "connecting" | "open" | "disconnected" | "closed";

export interface WsStateChange {
  state: WsUpstreamState;
  /** True when the connection opened again after an earlier one dropped (subscriptions must be renewed). */
  reconnected: boolean;
}

export type NotificationListener = (notification: SubscriptionNotification) => void;

interface Pending {
  method: string;
  paramsText: string;
  idempotent: boolean;
  /** Already sent again after a dropped connection; it gets no second retry. */
  retried: boolean;
  /** The connection the request went out on; undefined while it waits for one. */
  sentOn: WebSocket | undefined;
  resolve(result: UpstreamResult): void;
  reject(error: GatewayError): void;
  /** Clears the deadline and the abort listener. */
  cleanup(): void;
}

const MAX_ID = 0x7fffffff;
/**
 * The largest request sent to a WebSocket node. Nodes read a message up to a
 * limit of their own (Anvil about 16 MiB, geth 15-32 MiB by version) and close
 * the connection on a larger one, which loses every call on it and counts as
 * an outage (found from outside: one 18 MiB eth_call, with the body limit
 * raised, cut 6 other callers' calls and opened the circuit for 322 more).
 * A larger request is refused as too large for the node, unsent.
 */
const MAX_REQUEST_CHARS = 15 * 1024 * 1024;

/**
 * The most request bytes left waiting to be sent to a node that has read
 * none of them for UNSENT_STALL_MS before more calls are refused (-32005,
 * try again shortly): a node that stops reading would otherwise hold every
 * request made meanwhile in nodegate's memory, and those of calls that
 * already failed, until its keep-alive gives up (found from outside: 100
 * calls of 4 MiB to such a node held 1 GB for 40 s). A node that reads goes
 * on taking bursts of any size (found from outside: 20 calls of 4.4 MiB at
 * once were refused by a bound on bytes alone), and a call finding nothing
 * waiting goes whatever its size.
 */
const MAX_UNSENT_BYTES = 64 * 1024 * 1024;
const UNSENT_STALL_MS = 2000;
/**
 * The stall is counted in turns of a timer, not read off the clock: only time in which nodegate's own event loop ran,
 * and so could have written, counts against the node. Counted by the clock, a burst of calls made in one go (20 of 4
 * MiB, on a loaded machine) took over 2 s before the loop could write any of them, and the last were refused as if a
 * node reading at full speed had stopped (found in the test suite with 3 files at once on 2 cores).
 */
const UNSENT_WATCH_MS = 100;

/**
 * A connection that drops sooner than this after opening does not end the
 * backoff: a node that accepts and closes at once (shedding load with 1013)
 * is tried once a second, not several times (found from outside: 5 attempts a
 * second, for good), and its drops after the first are logged at debug.
 */
const SHORT_LIVED_MS = 5000;

/**
 * A handshake the node answers 401 or 403 refuses nodegate's credentials:
 * asking again each second changes nothing (and a provider may block an
 * address that keeps knocking), so attempts back off from a second to this.
 * Calls meanwhile fail at once with the node's refusal.
 */
const REFUSED_MAX_DELAY_MS = 30_000;

export class WsUpstream implements Upstream {
  readonly label: string;
  lastHeardAt: number | undefined;
  readonly #url: string;
  readonly #pingIntervalMs: number;
  readonly #pongTimeoutMs: number;
  readonly #reconnect: { minDelayMs: number; maxDelayMs: number };
  readonly #maxMessageBytes: number;
  readonly #maxReplyBytes: number;
  readonly #log: Logger | undefined;

  readonly #pending = new Map<number, Pending>();
  readonly #subscriptions = new Map<string, NotificationListener>();
  readonly #stateListeners = new Set<(change: WsStateChange) => void>();
  #nextId = 1;
  #state: WsUpstreamState = "idle";
  #socket: WebSocket | undefined;
  /** The last connection that opened (a drop of any other was a failed attempt). */
  #openedSocket: WebSocket | undefined;
  #everOpened = false;
  #attempt = 0;
  #reconnectTimer: NodeJS.Timeout | undefined;
  /** A failed connection attempt has been logged at warn since the last open. */
  #attemptsAnnounced = false;
  #pingTimer: NodeJS.Timeout | undefined;
  #pongDeadline: NodeJS.Timeout | undefined;
  /** The TCP connection under the open WebSocket, whose bytes read say it is alive while a pong waits behind data. */
  #transport: { readonly bytesRead: number } | undefined;
  #closing: Promise<void> | undefined;
  /** Why the last connection failed or dropped, for the errors of requests that waited for a new one. */
  #lastError: string | undefined;
  /** When the connection attempt under way began (performance.now() ms). */
  #connectingSince = 0;
  /** The last attempt's handshake was refused (401, 403): see REFUSED_MAX_DELAY_MS. */
  #refused = false;
  /** The last attempt's handshake was answered 429 or 503 with a Retry-After: its seconds (capped), else undefined. */
  #askedPauseSeconds: number | undefined;
  /** Until when (performance.now() ms) no attempt is made, as that Retry-After asked. */
  #pausedUntil = 0;
  /** The attempt whose handshake the node answered with a status other than 101 (its error event adds nothing). */
  #answeredAttempt: WebSocket | undefined;
  /** Turns of #unsentWatch since the node last took request bytes (a send left for it), or a send began with nothing waiting. */
  #quietTurns = 0;
  /** Counts #quietTurns while request bytes wait; stopped when none wait. */
  #unsentWatch: NodeJS.Timeout | undefined;
  /** When the open connection opened (performance.now()). */
  #openedAt = 0;
  /** A connection that lived less than SHORT_LIVED_MS dropped, and was told, since one lived longer. */
  #shortLivedDropTold = false;
  /** The last drop was logged at debug only: so is the reconnect after it. */
  #droppedQuietly = false;

  constructor(options: WsUpstreamOptions) {
    const url = new URL(options.url);
    if (url.protocol !== "ws:" && url.protocol !== "wss:") throw new Error(`upstream ${options.label}: want a ws(s) URL`);
    this.label = options.label;
    this.#url = options.url;
    this.#pingIntervalMs = options.pingIntervalMs ?? DEFAULT_WEBSOCKET.upstreamPingIntervalMs;
    this.#pongTimeoutMs = options.pongTimeoutMs ?? DEFAULT_WEBSOCKET.pongTimeoutMs;
    this.#reconnect = { minDelayMs: options.reconnectMinDelayMs ?? 250, maxDelayMs: options.reconnectMaxDelayMs ?? 1000 };
    this.#maxMessageBytes = options.maxMessageBytes ?? 256 * 1024 * 1024;
    this.#maxReplyBytes = options.maxReplyBytes ?? Number.POSITIVE_INFINITY;
    this.#log = options.log?.child({ upstream: options.label });
  }

  get state(): WsUpstreamState {
    return this.#state;
  }

  /** Requests waiting for an answer, sent or not. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Requests sent on the current connection and not yet answered. */
  get inFlightCount(): number {
    let n = 0;
    for (const p of this.#pending.values()) if (p.sentOn !== undefined && p.sentOn === this.#socket) n++;
    return n;
  }

  call(method: string, paramsText: string, options: CallOptions): Promise<UpstreamResult> {
    if (this.#state === "closed") return Promise.reject(upstreamUnavailable("the upstream client is closed"));
    if (options.signal?.aborted) return Promise.reject(cancelled());
    if (paramsText.length > MAX_REQUEST_CHARS) {
      return Promise.reject(requestTooLargeForNode(`a request of ${paramsText.length} bytes of params is more than a node reads in one WebSocket message (${MAX_REQUEST_CHARS}); it was not sent`));
    }
    // Calls wait in no line of flows here: each goes out as soon as the connection is open.
    options.onSent?.();
    return new Promise<UpstreamResult>((resolve, reject) => {
      const id = this.#allocateId();
      const signal = options.signal;
      const onAbort = (): void => this.#fail(id, cancelled());
      const deadline = setTimeout(() => this.#fail(id, this.#deadlineError(id, options.timeoutMs)), options.timeoutMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      const pending: Pending = {
        method,
        paramsText,
        idempotent: options.idempotent === true,
        retried: false,
        sentOn: undefined,
        resolve,
        reject,
        cleanup: () => {
          clearTimeout(deadline);
          signal?.removeEventListener("abort", onAbort);
        },
      };
      this.#pending.set(id, pending);
      if (this.#state === "disconnected" && (this.#refused || this.#pausedUntil > performance.now())) this.#fail(id, this.#refusedError());
      else if (this.#state === "idle") this.#connect();
      else if (this.#state === "open" && this.#socket !== undefined) {
        const waiting = this.#socket.bufferedAmount;
        const stalledMs = this.#quietTurns * UNSENT_WATCH_MS;
        if (waiting > 0 && waiting + paramsText.length > MAX_UNSENT_BYTES && stalledMs >= UNSENT_STALL_MS) {
          this.#fail(id, capacityExceeded(`${waiting} bytes of requests wait to be sent to the node, which has read none of them for ${Math.round(stalledMs)} ms`));
        } else {
          this.#send(this.#socket, id, pending);
        }
      }
      // Otherwise it waits in #pending and goes out when the connection opens (or its deadline passes).
    });
  }

  /** Opens the connection now instead of at the first call (subscribers want it up). */
  start(): void {
    if (this.#state === "idle") this.#connect();
  }

  /**
   * Routes notifications for `subscriptionId` (as the node wrote it) to
   * `listener`; returns the function that stops routing them.
   */
  onSubscription(subscriptionId: string, listener: NotificationListener): () => void {
    // Two subscriptions under one id cannot be told apart: one would get the other's notifications (found from
    // outside: a node answering every eth_subscribe with "0x1" sent heads to a logs feed, and both fell silent).
    if (this.#subscriptions.has(subscriptionId)) throw upstreamBadResponse(`the node gave subscription id ${subscriptionId} to two subscriptions at once`);
    this.#subscriptions.set(subscriptionId, listener);
    return () => {
      if (this.#subscriptions.get(subscriptionId) === listener) this.#subscriptions.delete(subscriptionId);
    };
  }

  /** Calls `listener` on every state change; returns the function that stops it. */
  onStateChange(listener: (change: WsStateChange) => void): () => void {
    this.#stateListeners.add(listener);
    return () => this.#stateListeners.delete(listener);
  }

  onOutage(listener: () => void): () => void {
    return this.onStateChange(({ state }) => {
      if (state === "disconnected") listener();
    });
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    this.#setState("closed", false);
    clearTimeout(this.#reconnectTimer);
    this.#stopKeepAlive();
    // Closed when nodegate stops: what still waits for the node is told so (at the drain deadline, calls get an answer).
    for (const id of [...this.#pending.keys()]) this.#fail(id, shuttingDown());
    this.#subscriptions.clear();
    const socket = this.#socket;
    this.#socket = undefined;
    if (socket === undefined || socket.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      socket.once("close", () => resolve());
      if (socket.readyState === WebSocket.OPEN) {
        socket.close(1000, "nodegate closing");
        // A node that does not answer the close frame must not hold shutdown up.
        const force = setTimeout(() => socket.terminate(), this.#pongTimeoutMs);
        socket.once("close", () => clearTimeout(force));
      } else {
        socket.terminate();
      }
    });
  }

  /** A request that never got onto a connection failed for want of one, not because the node was slow. */
  #deadlineError(id: number, timeoutMs: number): GatewayError {
    if (this.#pending.get(id)?.sentOn !== undefined) return upstreamTimeout(timeoutMs);
    if (this.#state === "connecting") {
      // Not the last close's words alone: they read as if the node had just closed on this call (found from outside).
      const before = this.#lastError === undefined ? "" : `; before it: ${this.#lastError}`;
      const waited = Math.round(performance.now() - this.#connectingSince);
      return upstreamUnavailable(`no connection to the node within ${timeoutMs} ms (connecting: the node has not completed the WebSocket handshake in ${waited} ms${before})`);
    }
    const why = this.#lastError === undefined ? "" : ` (${this.#lastError})`;
    return upstreamUnavailable(`no connection to the node within ${timeoutMs} ms${why}`);
  }

  /**
   * Why calls fail at once while the node refuses connections (401, 403), or asked for a pause (429, 503 with
   * Retry-After): the refusal, and the seconds of the pause left, passed on as an HTTP node's are.
   */
  #refusedError(): GatewayError {
    const left = Math.ceil((this.#pausedUntil - performance.now()) / 1000);
    return upstreamUnavailable(`no connection to the node (${this.#lastError})`, undefined, left > 0 ? left : undefined);
  }

  #allocateId(): number {
    for (;;) {
      const id = this.#nextId;
      this.#nextId = id >= MAX_ID ? 1 : id + 1;
      if (!this.#pending.has(id)) return id;
    }
  }

  #setState(state: WsUpstreamState, reconnected: boolean): void {
    this.#state = state;
    for (const listener of this.#stateListeners) {
      try {
        listener({ state, reconnected });
      } catch (err) {
        this.#log?.error({ err }, "WebSocket upstream state listener failed");
      }
    }
  }

  #connect(): void {
    this.#connectingSince = performance.now();
    this.#askedPauseSeconds = undefined;
    this.#setState("connecting", false);
    const socket = new WebSocket(this.#url, {
      perMessageDeflate: false,
      maxPayload: this.#maxMessageBytes,
      handshakeTimeout: this.#pongTimeoutMs,
    });
    this.#socket = socket;
    socket.on("upgrade", (response) => {
      if (socket === this.#socket) this.#transport = response.socket;
    });
    socket.on("unexpected-response", (_request, response) => this.#onHandshakeAnswered(socket, response));
    socket.on("open", () => this.#onOpen(socket));
    socket.on("message", (data) => this.#onMessage(socket, data as Buffer));
    socket.on("pong", () => {
      if (socket === this.#socket) {
        clearTimeout(this.#pongDeadline);
        this.#pongDeadline = undefined;
      }
    });
    // 'close' follows every error; the listener only keeps the error from being thrown.
    socket.on("error", (err) => {
      if (socket === this.#socket && socket !== this.#answeredAttempt) {
        this.#lastError = webSocketErrorWords(err);
        this.#refused = false;
      }
      this.#log?.debug({ err: err.message }, "WebSocket upstream error");
      // Sent again, the answer would be as large again: the calls on this connection fail as a bad reply does on HTTP.
      if ((err as { code?: string }).code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH") this.#outOfStep(socket, `a message larger than ${this.#maxMessageBytes} bytes`);
    });
    socket.on("close", (code) => this.#onDropped(socket, `closed with code ${code}`));
  }

  /**
   * The node answered the handshake with another status than 101. A 401 or 403 refuses nodegate's credentials (see
   * REFUSED_MAX_DELAY_MS); a 429 or 503 with Retry-After asks for a pause, which the next attempt waits out and calls
   * are told of, as an HTTP node's is (found from outside: attempts went on once a second, and callers heard nothing
   * of the pause). The attempt then ends as ws ends it when nothing listens for this.
   */
  #onHandshakeAnswered(socket: WebSocket, response: IncomingMessage): void {
    response.resume();
    if (socket === this.#socket) {
      const status = response.statusCode ?? 0;
      this.#answeredAttempt = socket;
      this.#refused = status === 401 || status === 403;
      // Worded as an HTTP node's refusal is, with what to check (found from outside: the WebSocket words gave no hint).
      const hint = this.#refused ? ": the provider refused nodegate's credentials (check the key in the upstream URL)" : "";
      this.#lastError = `the node answered the WebSocket handshake with HTTP ${status}${hint}`;
      this.#askedPauseSeconds = status === 429 || status === 503 ? askedPauseSeconds(response.headers["retry-after"]) : undefined;
    }
    socket.terminate();
  }

  #onOpen(socket: WebSocket): void {
    if (socket !== this.#socket) return;
    const reconnected = this.#everOpened;
    this.#everOpened = true;
    this.#openedSocket = socket;
    this.#openedAt = performance.now();
    this.#lastError = undefined;
    this.#refused = false;
    this.#pausedUntil = 0;
    this.#attemptsAnnounced = false;
    this.#setState("open", reconnected);
    if (reconnected) this.#log?.[this.#droppedQuietly ? "debug" : "info"]("WebSocket upstream reconnected");
    // Keep-alive and reconnect timers never keep the process alive by themselves.
    this.#pingTimer = setInterval(() => this.#ping(socket), this.#pingIntervalMs).unref();
    for (const [id, pending] of this.#pending) {
      if (pending.sentOn === undefined) this.#send(socket, id, pending);
    }
  }

  #send(socket: WebSocket, id: number, pending: Pending): void {
    pending.sentOn = socket;
    if (socket.bufferedAmount === 0) this.#quietTurns = 0;
    socket.send(requestBody(id, pending.method, pending.paramsText), (err) => {
      if (err) this.#onDropped(socket, "send failed");
      else this.#quietTurns = 0;
    });
    if (socket.bufferedAmount > 0 && this.#unsentWatch === undefined) {
      this.#unsentWatch = setInterval(() => {
        if (socket === this.#socket && socket.bufferedAmount > 0) this.#quietTurns++;
        else this.#stopUnsentWatch();
      }, UNSENT_WATCH_MS).unref();
    }
  }

  #stopUnsentWatch(): void {
    clearInterval(this.#unsentWatch);
    this.#unsentWatch = undefined;
    this.#quietTurns = 0;
  }

  /**
   * Pings the node; no pong within pongTimeoutMs drops the connection,
   * unless bytes kept arriving meanwhile: a node's pong waits behind a large
   * answer it is sending, and a connection delivering 150 MB of logs slowly
   * is alive (found from outside: such a socket was dropped mid-answer, and
   * the calls on it lost).
   */
  #ping(socket: WebSocket): void {
    if (socket !== this.#socket || this.#pongDeadline !== undefined) return;
    const transport = this.#transport;
    let readAtPing = transport?.bytesRead ?? 0;
    const expire = (): void => {
      const read = transport?.bytesRead ?? 0;
      if (read > readAtPing && socket === this.#socket) {
        readAtPing = read;
        this.#pongDeadline = setTimeout(expire, this.#pongTimeoutMs).unref();
        return;
      }
      this.#onDropped(socket, `no pong within ${this.#pongTimeoutMs} ms`);
    };
    this.#pongDeadline = setTimeout(expire, this.#pongTimeoutMs).unref();
    socket.ping();
  }

  #stopKeepAlive(): void {
    this.#stopUnsentWatch();
    clearInterval(this.#pingTimer);
    clearTimeout(this.#pongDeadline);
    this.#pingTimer = undefined;
    this.#pongDeadline = undefined;
  }

  #onMessage(socket: WebSocket, data: Buffer): void {
    if (socket !== this.#socket) return;
    // A binary frame is read as text too: some gateways frame JSON-RPC that way.
    let idText: string | undefined;
    try {
      idText = peekReplyId(data);
    } catch (err) {
      this.#outOfStep(socket, "a message that is not a JSON object", (err as Error).message);
      return;
    }
    if (idText === undefined) {
      this.#onNotification(data);
      return;
    }
    // Replies only: a node whose calls hang may still push its subscriptions' notifications.
    this.lastHeardAt = performance.now();
    const id = /^[0-9]{1,10}$/.test(idText) ? Number(idText) : -1;
    const pending = this.#pending.get(id);
    if (pending === undefined || pending.sentOn !== socket) {
      // A late answer to a call that timed out or was cancelled, or one the node could not attribute (id null).
      this.#log?.debug({ id: idText }, "WebSocket upstream reply matches no waiting request");
      return;
    }
    if (data.length > this.#maxReplyBytes) {
      // Found from outside: the typed door took such a reply whole (its protobuf answer, half the JSON, fit the budget).
      this.#fail(id, replyTooLarge(`reply body larger than ${this.#maxReplyBytes} bytes`));
      return;
    }
    let result: UpstreamResult;
    try {
      result = readReply(data, id);
    } catch (err) {
      this.#fail(id, err instanceof GatewayError ? err : upstreamUnavailable("unreadable reply", err));
      return;
    }
    this.#pending.delete(id);
    pending.cleanup();
    pending.resolve(result);
  }

  #onNotification(data: Buffer): void {
    let notification: SubscriptionNotification | undefined;
    try {
      notification = readSubscriptionNotification(data);
    } catch (err) {
      this.#log?.warn({ err: (err as Error).message }, "WebSocket upstream sent an unreadable notification; ignored");
      return;
    }
    const listener = notification === undefined ? undefined : this.#subscriptions.get(notification.subscription);
    if (notification === undefined || listener === undefined) {
      this.#log?.debug("WebSocket upstream message without id matches no subscription");
      return;
    }
    try {
      listener(notification);
    } catch (err) {
      this.#log?.error({ err }, "subscription listener failed");
    }
  }

  #fail(id: number, error: GatewayError): void {
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#pending.delete(id);
    pending.cleanup();
    pending.reject(error);
  }

  /**
   * The node sent what no call can be matched to (not JSON, binary): one of
   * the answers in flight may be lost in it, so each call in flight on the
   * connection fails as an unreadable HTTP reply does (-32052) instead of
   * waiting to its deadline, and the connection is reset.
   */
  #outOfStep(socket: WebSocket, what: string, detail?: string): void {
    if (socket !== this.#socket) return;
    this.#log?.warn({ what, detail }, "WebSocket upstream sent what no call can be matched to; resetting the connection");
    for (const [id, pending] of this.#pending) {
      if (pending.sentOn === socket) this.#fail(id, upstreamBadResponse(`the node sent ${what} on the WebSocket; the connection was reset`));
    }
    this.#onDropped(socket, `sent ${what}`);
  }

  /** Forgets a dead connection, settles what was in flight on it, and schedules the next attempt. */
  #onDropped(socket: WebSocket, reason: string): void {
    if (socket !== this.#socket) return;
    this.#socket = undefined;
    this.#transport = undefined;
    this.#lastError ??= reason;
    this.#stopKeepAlive();
    socket.terminate();
    // A connection attempt that failed (refused, no answer to the handshake): calls waiting for a connection fail now,
    // with the reason, as they would against an HTTP node, instead of holding their callers to the deadline (and
    // keeping a partner's failover waiting). Calls made from now on wait for the next attempt, within a second.
    const attemptFailed = socket !== this.#openedSocket;
    const shortLived = !attemptFailed && performance.now() - this.#openedAt < SHORT_LIVED_MS;
    if (!attemptFailed && !shortLived) {
      this.#attempt = 0;
      this.#shortLivedDropTold = false;
    }
    // A drop is told once; the attempts that follow until the node is back (several a second at first) only at debug.
    // A series of failed attempts that no drop announced (a node that never accepted a connection) is told once too
    // (found from outside: a node refusing the handshake with 401 was retried for good with nothing at info level).
    if (attemptFailed && this.#attemptsAnnounced) this.#log?.debug({ reason: this.#lastError ?? reason }, "WebSocket upstream connection attempt failed");
    else if (attemptFailed) this.#log?.warn({ reason: this.#lastError ?? reason }, "WebSocket upstream connection attempt failed; retrying (further failures logged at debug until it connects)");
    else {
      this.#droppedQuietly = shortLived && this.#shortLivedDropTold;
      if (this.#droppedQuietly) this.#log?.debug({ reason }, "WebSocket upstream connection dropped again soon after opening");
      else this.#log?.warn({ reason }, "WebSocket upstream connection dropped");
    }
    if (shortLived) this.#shortLivedDropTold = true;
    this.#attemptsAnnounced = true;
    const backoff = backoffDelay(this.#attempt++, this.#refused ? { minDelayMs: this.#reconnect.maxDelayMs, maxDelayMs: REFUSED_MAX_DELAY_MS } : this.#reconnect);
    const delay = Math.max(backoff, (this.#askedPauseSeconds ?? 0) * 1000);
    if (this.#askedPauseSeconds !== undefined) this.#pausedUntil = performance.now() + delay;
    for (const [id, pending] of this.#pending) {
      if (attemptFailed && pending.sentOn === undefined) {
        this.#fail(id, this.#askedPauseSeconds === undefined ? upstreamUnavailable(`no connection to the node (${this.#lastError ?? reason})`) : this.#refusedError());
        continue;
      }
      if (pending.sentOn !== socket) continue;
      if (pending.idempotent && !pending.retried) {
        pending.retried = true;
        pending.sentOn = undefined;
      } else {
        this.#fail(id, upstreamConnectionLost(pending.method, pending.retried));
      }
    }
    if (this.#state === "closed") return;
    this.#setState("disconnected", false);
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      if (this.#state !== "closed") this.#connect();
    }, delay).unref();
  }
}
