/**
 * The native JSON-RPC path over WebSocket: /ws/v3/<KEY> (and
 * /<network>/ws/v3/<KEY>) on the same port as everything else. The key and
 * network are checked before the upgrade is accepted; after that every text
 * message is answered exactly as the HTTP path answers a POST body.
 */
import type { IncomingMessage } from "node:http";
import { TLSSocket } from "node:tls";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";
import { shuttingDown } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import type { Gateway } from "../gateway.js";
import type { Network } from "../upstream/network.js";
import type { ApiKey } from "../auth/api-keys.js";
import { type AnswerContext, answerContext, answerJsonRpc, refusalAnswer } from "./answer.js";
import { logAnswer, logUnservedPath, REFUSED_METHOD } from "./answer-log.js";
import { REQUEST_ID_HEADER, requestIdFrom } from "../observability/request-log.js";
import { matchNativeRoute } from "./paths.js";
import { createWsSubscriptionSession } from "./ws-subscriptions.js";
import { CallCancellation } from "../call-signal.js";
import { closingAnswer } from "../http/closing-answer.js";

export interface WsHandlerOptions {
  /** Largest message accepted, in bytes; a larger one closes the connection with 1009. */
  maxMessageBytes: number;
  /** Every client is pinged this often; one that has neither answered nor sent anything (with none of its answers unread) since the previous round is closed. */
  pingIntervalMs: number;
  /** Answers a client has not read, in bytes; past this it is disconnected (it keeps asking but does not read). Default unlimited. */
  maxUnreadBytes?: number | undefined;
}

export interface JsonRpcWsHandler {
  /** Takes over an HTTP/1.1 WebSocket upgrade: refuses it with an HTTP status, or accepts it. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Number of open client connections. */
  readonly clientCount: number;
  /** Messages read and not yet answered, over every client. */
  readonly answering: number;
  /**
   * Graceful stop: answers every message a client sent until it falls quiet
   * (or for at most a second), then closes each connection (1012). Resolves
   * when all are closed.
   */
  drain(): Promise<void>;
  /** Closes every client connection (1012) now, cancelling what is in flight, and stops the keep-alive timer. */
  close(): void;
}

/** Answers from this size on go out as a frame per part (see sendParts); smaller ones as one frame. */
const FRAMED_FROM_BYTES = 1024 * 1024;

const INTERNAL_ERROR = '{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}';

/** Whether an upgrade request asks for WebSocket (and not, say, h2c). */
export function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? "").toLowerCase() === "websocket";
}

/** Answers an upgrade request with a plain HTTP response and drops the connection. */
function refuse(socket: Duplex, status: number, contentType: string, body: string, extraHeaders: string[] = []): void {
  socket.once("finish", () => socket.destroy());
  socket.end(closingAnswer(status, contentType, body, extraHeaders));
}

/**
 * Bytes written to the client's connection that the kernel has taken, so far: it grows only while the client reads.
 * What Node handed to libuv, less what libuv still queues (as Node's own socket.bufferSize reads it): the stream's
 * writableLength falls only when a whole batched write is done, which at a slow reader's pace takes minutes.
 * Undefined where that is not known: over TLS, the handle's queue size is not kept current.
 */
function bytesTaken(socket: Duplex): number | undefined {
  if (socket instanceof TLSSocket) return undefined;
  const { _bytesDispatched: dispatched, _handle: handle } = socket as unknown as { _bytesDispatched?: unknown; _handle?: { writeQueueSize?: unknown } | null };
  const queued = handle?.writeQueueSize;
  return typeof dispatched === "number" && typeof queued === "number" ? dispatched - queued : undefined;
}

interface ClientState {
  alive: boolean;
  /** The client's connection, for how much of what was written to it the client has taken (bytesTaken). */
  socket: Duplex;
  /** bytesTaken at the previous keep-alive round; undefined where that is not known. */
  takenAtRound: number | undefined;
  /** At the previous keep-alive round, nodegate held answers the socket had not taken yet. */
  backlogAtRound: boolean;
  /** Aborted when the client goes away, so its upstream calls stop. */
  abort: CallCancellation;
  /** Messages read and not yet answered. */
  answering: number;
  /** Set by drain(): close once nothing is being answered. */
  draining: boolean;
  /** When the last message arrived (performance.now), while draining. */
  lastMessageAt: number;
  /** When drain() began (performance.now). */
  drainStartedAt: number;
  /** The pending check of whether a draining client can be closed. */
  closeCheck: NodeJS.Timeout | undefined;
  /** What drain() tells the client's subscriptions (see WsSubscriptionSession.drain). */
  drainSubscriptions: () => void;
  /** While its unread answers are over the limit: the watch of whether the client takes them (see holdBack). */
  unreadWatch: NodeJS.Timeout | undefined;
}

/**
 * The close a drain sends: 1012, "service restart" (IANA's registry), not 1001 "going away": the service goes on
 * elsewhere (another replica, this one restarted), and web3.js reconnects by itself only on a code other than
 * 1000 and 1001 (found from outside: through nodegate it stayed disconnected until the app's next call).
 */
const SERVICE_RESTART = 1012;
/** How often a client over its unread limit is looked at (to read from it again once it is under). */
const UNREAD_WATCH_MS = 25;
/** A client over its unread limit that takes none of its answers for this long is closed. */
const UNREAD_STALL_MS = 1000;
/** Unread answers past this many times the limit close the client at once, taking or not. */
const UNREAD_HARD_FACTOR = 4;
/**
 * A draining client is closed once it has been quiet this long with nothing
 * left to answer: messages it sent just before the signal may still be on
 * the wire or in the socket's buffer, and each deserves its answer.
 */
const DRAIN_QUIET_MS = 50;
/** ...but a client that keeps sending is closed after this long, once answered. */
const DRAIN_READ_MS = 1000;

export function createJsonRpcWsHandler(gateway: Gateway, options: WsHandlerOptions): JsonRpcWsHandler {
  const wss = new WebSocketServer({ noServer: true, maxPayload: options.maxMessageBytes, perMessageDeflate: false });
  const clients = new Map<WebSocket, ClientState>();
  /** Each upgrade's request id: echoed on the 101 answer, and on the log line of every message the connection sends. */
  const upgradeIds = new WeakMap<object, string>();
  wss.on("headers", (headers, req) => {
    const id = upgradeIds.get(req);
    if (id !== undefined) headers.push(`${REQUEST_ID_HEADER}: ${id}`);
  });
  let keepAlive: NodeJS.Timeout | undefined;

  const sweep = (): void => {
    for (const [ws, state] of clients) {
      // A client reading a large backlog slowly answers the ping only once it reaches it, after the backlog: taking
      // bytes meanwhile shows it is there and reading (found from outside: one reading at 0.5 MB/s was cut off).
      // Only bytes taken while nodegate held more for the client say so: with the socket buffers not full, the kernel
      // takes what is written whether or not the client reads (found from outside: a subscriber that read nothing
      // and answered no ping stayed open, its events taken by the buffers, for minutes).
      const taken = bytesTaken(state.socket);
      const reading = state.backlogAtRound && taken !== undefined && state.takenAtRound !== undefined && taken > state.takenAtRound;
      state.takenAtRound = taken;
      state.backlogAtRound = ws.bufferedAmount > 0;
      if (!state.alive && !reading) {
        gateway.log.debug("closing a native WebSocket client that stopped answering pings");
        ws.terminate();
        continue;
      }
      state.alive = false;
      ws.ping();
    }
  };

  const closeUnread = (ws: WebSocket): void => {
    gateway.log.debug({ unreadBytes: ws.bufferedAmount }, "closing a native WebSocket client that does not read its answers");
    ws.terminate();
  };

  /**
   * A client whose unread answers pass the limit is not read from until it
   * has taken them below it, and is closed if it takes none for a second.
   * A client reading as fast as it can may still be over the limit for a
   * moment (found from outside: 60 pipelined 1.5 MB answers from the cache
   * were queued at once, and the client, reading at full speed, was cut off
   * after the second).
   */
  const holdBack = (ws: WebSocket, state: ClientState, limit: number): void => {
    if (state.unreadWatch !== undefined) return;
    ws.pause();
    let least = ws.bufferedAmount;
    let tookAt = performance.now();
    const watch = (): void => {
      state.unreadWatch = undefined;
      if (ws.readyState !== WebSocket.OPEN) return;
      const unread = ws.bufferedAmount;
      if (unread <= limit) {
        ws.resume();
        return;
      }
      const now = performance.now();
      if (unread < least) {
        least = unread;
        tookAt = now;
      } else if (now - tookAt >= UNREAD_STALL_MS) {
        closeUnread(ws);
        return;
      }
      state.unreadWatch = setTimeout(watch, UNREAD_WATCH_MS);
    };
    state.unreadWatch = setTimeout(watch, UNREAD_WATCH_MS);
  };

  /** Whether `ws` can take another message; a client that asks and does not read is closed. */
  const writable = (ws: WebSocket): boolean => {
    if (ws.readyState !== WebSocket.OPEN) return false;
    // A client that asks and does not read would have nodegate hold its answers without bound.
    const limit = options.maxUnreadBytes;
    if (limit !== undefined && ws.bufferedAmount > limit) {
      const state = clients.get(ws);
      if (state === undefined || ws.bufferedAmount > limit * UNREAD_HARD_FACTOR) {
        closeUnread(ws);
        return false;
      }
      holdBack(ws, state, limit);
    }
    return true;
  };

  // A Buffer would go out as a binary frame unless told otherwise; JSON-RPC clients expect text.
  const send = (ws: WebSocket, body: Buffer | string): void => {
    if (writable(ws)) ws.send(body, { binary: false });
  };

  /**
   * Sends an answer's parts as one message. A large one goes as one frame per
   * part (one message to the client) rather than joined into a copy first,
   * which doubled what a large answer held. Frames of one message cannot be
   * interleaved with another's: they are all queued here at once, in order.
   * `sent` is called once the message has left (or will never leave).
   */
  const sendParts = (ws: WebSocket, parts: readonly Buffer[], sent?: () => void): void => {
    if (!writable(ws)) return sent?.();
    let length = 0;
    for (const part of parts) length += part.length;
    const done = sent === undefined ? undefined : () => sent();
    if (parts.length === 1 || length < FRAMED_FROM_BYTES) {
      ws.send(parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, length), { binary: false }, done);
      return;
    }
    const last = parts.length - 1;
    for (let i = 0; i < last; i++) ws.send(parts[i] as Buffer, { binary: false, fin: false });
    ws.send(parts[last] as Buffer, { binary: false, fin: true }, done);
  };

  /**
   * Closes a draining client once every message it sent has been answered
   * and no more are coming (DRAIN_QUIET_MS of quiet, or DRAIN_READ_MS after
   * the drain began).
   */
  const closeWhenAnswered = (ws: WebSocket, state: ClientState): void => {
    if (state.closeCheck !== undefined) return;
    /** Quiet for DRAIN_QUIET_MS, or past the reading time. */
    const quietOrLate = (): boolean => {
      const now = performance.now();
      return now - state.lastMessageAt >= DRAIN_QUIET_MS || now - state.drainStartedAt >= DRAIN_READ_MS;
    };
    const check = (): void => {
      state.closeCheck = undefined;
      // An answer still going out calls again when it is done.
      if (state.answering > 0 || ws.readyState !== WebSocket.OPEN) return;
      if (!quietOrLate()) {
        state.closeCheck = setTimeout(check, Math.max(1, DRAIN_QUIET_MS - (performance.now() - state.lastMessageAt)));
        return;
      }
      // Timers run before the socket is read: after a busy stretch a message may wait unread in the socket, which
      // looks like quiet here. Close only after what has arrived was read (setImmediate runs after the poll).
      setImmediate(() => {
        if (state.closeCheck !== undefined || state.answering > 0 || ws.readyState !== WebSocket.OPEN) return;
        // Messages after the close are not read as requests (the socket is closing).
        if (quietOrLate()) ws.close(SERVICE_RESTART, "server shutting down");
        else closeWhenAnswered(ws, state);
      });
    };
    state.closeCheck = setTimeout(check, DRAIN_QUIET_MS);
  };

  const serve = (ws: WebSocket, socket: Duplex, network: Network, key: ApiKey, routeNetwork: string | undefined, requestId: string): void => {
    const subscriptions = createWsSubscriptionSession({
      ws,
      network,
      hub: () => gateway.subscriptions.hub(network),
      access: gateway.access,
      key,
      limits: gateway.limits,
      bufferSize: gateway.subscriptions.settings.clientBufferSize,
      log: gateway.log,
      quotas: gateway.quotas,
    });
    const state: ClientState = {
      alive: true,
      socket,
      takenAtRound: bytesTaken(socket),
      backlogAtRound: false,
      abort: new CallCancellation(),
      answering: 0,
      draining: false,
      lastMessageAt: 0,
      drainStartedAt: 0,
      closeCheck: undefined,
      drainSubscriptions: () => subscriptions.drain(),
      unreadWatch: undefined,
    };
    clients.set(ws, state);
    gateway.metrics.openWebSockets.inc();
    // The server keeps the process alive, not the keep-alive sweep.
    keepAlive ??= setInterval(sweep, options.pingIntervalMs).unref();
    const ctx: AnswerContext = { ...answerContext(gateway, key, network, state.abort.signal), reachNetwork: (home) => `connect to /${home}/ws/v3/<KEY>` };

    ws.on("pong", () => {
      state.alive = true;
    });
    // Binary messages are read as JSON text too, as geth and Anvil read them; answers go out as text.
    ws.on("message", (data) => {
      // A message says the client is there, not that it reads: with answers of its still unread, only a pong (which
      // comes after them) does (found from outside: clients that never read but sent a small call every 2 s stayed
      // open, holding the whole reply budget, and other keys' large answers were refused).
      // (Where how much it takes is not known, a message still counts.)
      if (ws.bufferedAmount === 0 || state.takenAtRound === undefined) state.alive = true;
      if (state.draining) state.lastMessageAt = performance.now();
      // Closing (drained, or the client left): a message now cannot be answered, so it is not started.
      if (ws.readyState !== WebSocket.OPEN) return;
      if (state.draining && performance.now() - state.drainStartedAt >= DRAIN_READ_MS) {
        // Past the drain's reading time a client that keeps sending would hold the drain to its deadline:
        // what it sends now is told to go elsewhere, and it is closed once what it sent before is answered.
        send(ws, Buffer.concat(refusalAnswer(data as Buffer, shuttingDown())));
        return;
      }
      // Each message is answered when its calls finish, so a slow call does not hold up the next message.
      const started = performance.now();
      state.answering++;
      // Subscriptions made by this message notify only after its answer has gone out.
      const created = {};
      const messageCtx: AnswerContext = { ...ctx, sharedConnection: true, connectionMethod: (call) => subscriptions.handle(call, created) };
      answerJsonRpc(data as Buffer, messageCtx)
        .then(
          (answer) => {
            logAnswer(gateway, "jsonrpc-ws", answer.calls, started, { status: answer.status, network: routeNetwork, requestId });
            if (answer.body !== undefined) sendParts(ws, answer.body, answer.release);
            subscriptions.release(created);
          },
          (err: unknown) => {
            gateway.log.error({ err }, "native WebSocket request failed");
            send(ws, INTERNAL_ERROR);
            subscriptions.release(created);
          },
        )
        .finally(() => {
          state.answering--;
          if (state.draining) closeWhenAnswered(ws, state);
        });
    });
    // ws reports protocol violations (oversized message, invalid UTF-8) here and then closes with the matching code.
    ws.on("error", (err) => gateway.log.debug({ err: err.message }, "native WebSocket client error"));
    ws.on("close", () => {
      clearTimeout(state.closeCheck);
      clearTimeout(state.unreadWatch);
      subscriptions.close();
      state.abort.abort();
      clients.delete(ws);
      gateway.metrics.openWebSockets.dec();
      if (clients.size === 0 && keepAlive !== undefined) {
        clearInterval(keepAlive);
        keepAlive = undefined;
      }
    });
  };

  return {
    handleUpgrade(req, socket, head) {
      socket.on("error", () => socket.destroy());
      const header = (name: string) => {
        const v = req.headers[name];
        return Array.isArray(v) ? v[0] : v;
      };
      const requestId = requestIdFrom(header(REQUEST_ID_HEADER));
      const idHeader = [`${REQUEST_ID_HEADER}: ${requestId}`];
      const route = matchNativeRoute(req.url ?? "/");
      if (route === undefined || route.transport !== "ws") {
        // The HTTP path is the likeliest wrong URL for a WebSocket client (found from outside: a bare "not found").
        // Only for a network nodegate serves: another is refused as unknown at its WebSocket path too.
        const served = route !== undefined && (route.network === undefined || gateway.hasNetwork(route.network));
        const hint = served ? `: WebSocket connections go to ${route.network === undefined ? "" : `/${route.network}`}/ws/v3/<KEY>` : "";
        refuse(socket, 404, "text/plain", `not found${hint}\n`, idHeader);
        logUnservedPath(gateway, req.url ?? "/", 404, requestId, performance.now(), "jsonrpc-ws");
        return;
      }
      let network: Network;
      let key: ApiKey;
      let release: () => void;
      try {
        key = gateway.access.authenticate({
          key: route.key,
          authorization: header("authorization"),
          origin: header("origin"),
          userAgent: header("user-agent"),
        });
        network = gateway.network(route.network);
        release = gateway.quotas.acquire(key, "connections");
      } catch (err) {
        if (!(err instanceof GatewayError)) throw err;
        // The same status and body as the HTTP path gives for the same failure.
        const retry = err.retryAfterSeconds === undefined ? [] : [`Retry-After: ${err.retryAfterSeconds}`];
        refuse(socket, err.httpStatus, "application/json", `{"jsonrpc":"2.0","id":null,"error":${err.toJson()}}`, [...retry, ...idHeader]);
        // Logged and counted as the HTTP path's refusals are.
        logAnswer(gateway, "jsonrpc-ws", [{ method: REFUSED_METHOD, outcome: String(err.code) }], performance.now(), { status: err.httpStatus, network: route.network, requestId });
        return;
      }
      // The connection is the key's until its socket closes, whether or not the upgrade completes.
      socket.once("close", release);
      upgradeIds.set(req, requestId);
      wss.handleUpgrade(req, socket, head, (ws) => serve(ws, socket, network, key, route.network, requestId));
    },
    get clientCount() {
      return clients.size;
    },
    get answering() {
      let n = 0;
      for (const state of clients.values()) n += state.answering;
      return n;
    },
    drain() {
      const closed = [...clients.keys()].map((ws) => new Promise<void>((resolve) => ws.once("close", () => resolve())));
      const now = performance.now();
      for (const [ws, state] of clients) {
        state.draining = true;
        state.drainStartedAt = now;
        state.lastMessageAt = now;
        // Subscriptions notify until the connection closes; their end at the drain deadline must not close it first.
        state.drainSubscriptions();
        closeWhenAnswered(ws, state);
      }
      return Promise.all(closed).then(() => undefined);
    },
    close() {
      if (keepAlive !== undefined) clearInterval(keepAlive);
      keepAlive = undefined;
      for (const [ws, state] of clients) {
        state.abort.abort();
        ws.close(SERVICE_RESTART, "server shutting down");
      }
    },
  };
}
