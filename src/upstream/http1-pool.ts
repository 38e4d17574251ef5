/**
 * A small HTTP/1.1 keep-alive client for one origin, made for what nodegate
 * sends a node: a POST with a JSON body, one request per connection at a time.
 *
 * Why not undici: per small call, undici's general machinery (request and
 * handler objects, its wasm parser's callbacks, header validation, timers)
 * took about 22 us of self time in a CPU profile of a ~205 us proxied call.
 * Here a request is one write of a prebuilt head and the body, and a reply
 * is read by a parser that only knows what a JSON-RPC answer needs: the
 * status, the framing headers (the others on demand), and the body framed
 * by content-length, chunked encoding or the connection's end.
 *
 * Connections are kept open between calls (LIFO, so a few stay warm) and
 * closed once idle past the keep-alive time (or sooner, as the server's
 * `Keep-Alive: timeout=N` says). A call that finds its reused connection
 * closed before any byte of the reply is sent once more on a new connection
 * when it is safe to repeat.
 */
import net from "node:net";
import tls from "node:tls";
import { FairQueue } from "./fair-queue.js";
import { CIRCUIT_OPENED_UNSENT, Http1Call, Http1Error, QUEUED_PAST_DEADLINE } from "./http1-call.js";
import { Connection, type OnRead } from "./http1-connection.js";
import type { ReplyBudget } from "./reply-budget.js";

export interface Http1PoolOptions {
  /** The node's origin and path (credentials are not read here). */
  url: URL;
  /** Most connections open at once; further calls wait in order. */
  connections: number;
  /** Headers sent with every request (names as they are to be written). */
  headers: Record<string, string>;
  /** Idle connections are closed after this long (sooner when the server's keep-alive hint says so). */
  keepAliveMs: number;
  /** A connection not established (TLS handshake included) within this long fails with ETIMEDOUT. Default 10 s. */
  connectTimeoutMs?: number;
  /** Longest reply head accepted. Default 64 KiB. */
  maxHeadBytes?: number;
  /**
   * Longest reply body accepted, in bytes: a node that streams without end
   * must not take the process's memory with it. Default 256 MiB, as the
   * WebSocket upstream's largest message (providers cap eth_getLogs answers
   * near 150 MB).
   */
  maxBodyBytes?: number;
  /** Extra TLS options for https origins (a private CA, say). */
  tls?: tls.ConnectionOptions;
  /** Shared with the process's other pools: what their replies being read may hold together. */
  budget?: ReplyBudget;
}

/** A queued call with less time left than this is not sent: no node answers across a network that fast. */
const MIN_TIME_LEFT_MS = 10;
/** At most this share of a pool's connections may be reading replies nobody waits for (see Http1Call.cancel). */
const UNWANTED_SHARE = 0.25;

/** Connections a liveness question may open past the cap when every connection is busy (Network asks at most 6 at once). */
const MAX_SPARE = 8;

export class Http1Pool {
  readonly keepAliveMs: number;
  readonly connectTimeoutMs: number;
  readonly maxHeadBytes: number;
  readonly maxBodyBytes: number;
  readonly budget: ReplyBudget | undefined;
  readonly #connections: number;
  readonly #prefix: string;
  readonly #connect: (onread: OnRead) => net.Socket;
  readonly #secure: boolean;
  #tlsSession: Buffer | undefined;
  readonly #idle: Connection[] = [];
  readonly #open = new Set<Connection>();
  readonly #queue = new FairQueue<Http1Call>();
  #sweeper: NodeJS.Timeout | undefined;
  #closed = false;
  /** Connections reading a reply whose caller left (Connection.finishUnwanted). */
  unwanted = 0;
  /** When a reply last ended (performance.now()), wanted or not. */
  lastReplyAt: number | undefined;

  constructor(options: Http1PoolOptions) {
    const { url } = options;
    this.keepAliveMs = options.keepAliveMs;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    this.maxHeadBytes = options.maxHeadBytes ?? 64 * 1024;
    // A reply larger than the whole budget could never be taken: it fails as too large, not as "try again".
    this.maxBodyBytes = Math.min(options.maxBodyBytes ?? 256 * 1024 * 1024, options.budget?.maxBytes ?? Number.POSITIVE_INFINITY);
    this.budget = options.budget;
    this.#connections = Math.max(1, options.connections);
    const path = `${url.pathname}${url.search}` || "/";
    let head = `POST ${path} HTTP/1.1\r\nhost: ${url.host}\r\n`;
    for (const [name, value] of Object.entries(options.headers)) head += `${name}: ${value}\r\n`;
    this.#prefix = `${head}content-length: `;
    const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
    const secure = url.protocol === "https:";
    this.#secure = secure;
    const port = Number(url.port) || (secure ? 443 : 80);
    this.#connect = secure
      ? (onread) => {
          // A new connection resumes the last TLS session the node gave: no full handshake on a reconnect.
          const socket = tls.connect({ host, port, ...(net.isIP(host) ? {} : { servername: host }), ALPNProtocols: ["http/1.1"], session: this.#tlsSession, ...options.tls, onread } as tls.ConnectionOptions);
          socket.on("session", (session: Buffer) => {
            this.#tlsSession = session;
          });
          return socket;
        }
      : (onread) => net.connect({ host, port, onread });
  }

  /** Calls waiting for a connection. */
  get waiting(): number {
    return this.#queue.size;
  }

  /** Sends `body` (JSON text) as a POST; `repeatable` when the call is safe to send twice; `flow` says whom it is for. */
  request(body: string, repeatable: boolean, flow = "", spare = false): Http1Call {
    const call = new Http1Call(this, `${this.#prefix}${Buffer.byteLength(body)}\r\n\r\n${body}`, repeatable, flow);
    if (this.#closed) call.fail(new Http1Error("ECONNREFUSED", "client closed"));
    else if (spare && this.#idle.length === 0 && this.#open.size >= this.#connections && this.#open.size < this.#connections + MAX_SPARE) {
      call.spare = true;
      this.#openFor(call);
    }
    else this.#send(call);
    return call;
  }

  #send(call: Http1Call): void {
    const now = performance.now();
    let connection;
    while ((connection = this.#idle.pop()) !== undefined) {
      if (now - connection.idleSince < connection.idleLimitMs) {
        connection.start(call);
        return;
      }
      connection.destroy();
    }
    if (this.#open.size < this.#connections) {
      this.#openFor(call);
      return;
    }
    call.queuedAt ??= now;
    this.#queue.push(call);
  }

  #openFor(call: Http1Call): void {
    const connection = new Connection(this, this.#connect, this.#secure);
    this.#open.add(connection);
    connection.start(call);
  }

  /**
   * The next waiting call whose caller still waits. Calls whose deadline has
   * passed (or is about to) are failed unsent: when in-flight calls time out together, the
   * connections they free would otherwise carry queued calls whose own
   * deadlines fire in the same moment, to a node nobody waits for.
   */
  #nextLive(): Http1Call | undefined {
    let now: number | undefined;
    for (let call = this.#queue.shift(); call !== undefined; call = this.#queue.shift()) {
      if (call.deadlineAt === Number.POSITIVE_INFINITY || call.deadlineAt - (now ??= performance.now()) >= MIN_TIME_LEFT_MS) return call;
      call.fail(new Http1Error(QUEUED_PAST_DEADLINE, "no connection came free before the call's deadline"));
    }
    return undefined;
  }

  /**
   * Whether a connection whose caller left may read the reply to its end rather than close: reconnecting (a
   * TCP and often a TLS handshake to a remote node) costs more than reading a small reply, but connections busy
   * with unwanted replies are not free for other calls, so only a share of them may be.
   */
  mayFinishUnwanted(): boolean {
    return !this.#closed && this.unwanted < Math.max(1, Math.floor(this.#connections * UNWANTED_SHARE));
  }

  /**
   * Fails every call still waiting for a connection, unsent: the node's circuit opened, and they would go to it as
   * connections came free, writes among them, long after (found from outside: writes sent to a hung node 17 s after
   * its circuit opened, their callers told "timeout" with no way to know whether they took effect).
   */
  failQueued(): void {
    for (const call of this.#queue.drain()) call.fail(new Http1Error(CIRCUIT_OPENED_UNSENT, "the node's circuit opened before a connection came free"));
  }

  unqueue(call: Http1Call): void {
    this.#queue.remove(call);
  }

  /** A connection finished its exchange and may carry the next. */
  release(connection: Connection): void {
    // A spare connection (a liveness question's, past the cap) ends with its exchange: callers keep to the cap.
    if (this.#open.size > this.#connections) {
      connection.destroy();
      return;
    }
    const next = this.#nextLive();
    if (next !== undefined) {
      connection.start(next);
      return;
    }
    connection.idleSince = performance.now();
    this.#idle.push(connection);
    this.#sweeper ??= setInterval(() => this.#sweep(), 1000).unref();
  }

  /** A connection is gone: its place goes to `again` (a call it carried, sent once more on a new connection), else to a waiting call. */
  closed(connection: Connection, again?: Http1Call): void {
    this.#open.delete(connection);
    const i = this.#idle.indexOf(connection);
    if (i >= 0) this.#idle.splice(i, 1);
    if (this.#closed) {
      again?.fail(new Http1Error("ECONNRESET", "client closed"));
      return;
    }
    const next = again ?? (this.#open.size < this.#connections ? this.#nextLive() : undefined);
    if (next !== undefined) this.#openFor(next);
  }

  /** Closes connections idle past their limit, so none is reused just as the server drops it. */
  #sweep(): void {
    const now = performance.now();
    for (const connection of [...this.#idle]) if (now - connection.idleSince >= connection.idleLimitMs) connection.destroy();
    if (this.#idle.length === 0 && this.#sweeper !== undefined) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
    }
  }

  /** Ends every connection; calls still waiting or in flight fail. */
  close(): void {
    this.#closed = true;
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    this.#sweeper = undefined;
    for (const call of this.#queue.drain()) call.fail(new Http1Error("ECONNRESET", "client closed"));
    for (const connection of [...this.#open]) {
      const call = connection.call;
      connection.destroy();
      call?.fail(new Http1Error("ECONNRESET", "client closed"));
    }
  }
}
