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
export const MIN_TIME_LEFT_MS = 10;
/** At most this share of a pool's connections may be reading replies nobody waits for (see Http1Call.cancel). */
const UNWANTED_SHARE = 0.25;

/** Connections a liveness question may open past the cap when every connection is busy (Network asks at most 6 at once). */
const MAX_SPARE = 8;

/**
 * A new connection the node's front refuses this soon after nodegate closed one of its own (a caller that left, an
 * idle one swept) is taken as the front still counting the closed one (a cap per client, which `connections` meets):
 * its call goes back in line rather than failing with the refusal (found from outside: a queued call failed with -32050
 * as callers left, and each refusal handed its place to the next queued call, refused in turn). Past it, a refusal is
 * the node's answer, passed on at once.
 */
const OWN_CLOSE_LAG_MS = 2000;
/** Times one call may be refused so before the refusal is its answer. */
const MAX_REFUSALS = 4;
/**
 * With no other connection to the node open, a refused call is tried again only while its next try comes within this
 * long of nodegate's last own close (its first refusal is always tried once more): a front counting connections
 * nodegate closed (the idle sweep closes them all at once) takes a new one within a few hundred ms, while a node
 * that went down just then must be reported about as soon (its callers told, calls a partner may take failed over).
 */
const ALONE_LAG_MS = 500;
/** After a call's first such refusal no new connection is opened for this long (doubling with each next one): waiting calls take connections that free meanwhile. */
const REFUSED_HOLD_FIRST_MS = 50;

const NEVER_RESTING = (): boolean => false;

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
  /** When nodegate last closed one of its connections to the node, for reasons of its own (noteOwnClose). */
  ownCloseAt = Number.NEGATIVE_INFINITY;
  /** When nodegate closed its connections of the last OWN_CLOSE_LAG_MS, oldest first: the front may count them yet. */
  readonly #ownCloses: number[] = [];
  /** No new connection is opened before this (performance.now()) after the front refused one (requeueRefused). */
  #holdUntil = 0;
  #holdTimer: NodeJS.Timeout | undefined;
  /** Ends the wait of calls kept off new connections (see #keepsOffNew). */
  #lagTimer: NodeJS.Timeout | undefined;
  /** Whether the node's circuit rests now (set by its owner): a call its kept-alive connection dropped is not sent again then. */
  resting: () => boolean = NEVER_RESTING;

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

  /**
   * Whether a call made now would wait for a connection: none is idle, and no new one may be opened (the cap, or a
   * hold after the front refused one), or calls already wait (they go first).
   */
  get full(): boolean {
    return this.#idle.length === 0 && (this.#open.size >= this.#connections || performance.now() < this.#holdUntil || this.#queue.size > 0);
  }

  /** How many requests made now would be given a connection at once (idle, or opened for them): 0 while calls wait. */
  get free(): number {
    if (this.#closed || this.#queue.size > 0) return 0;
    const openable = performance.now() < this.#holdUntil ? 0 : Math.max(0, this.#connections - this.#open.size);
    return this.#idle.length + openable;
  }

  /** Sends `body` (JSON text) as a POST; `repeatable` when the call is safe to send twice; `flow` says whom it is for. */
  request(body: string, repeatable: boolean, flow = "", spare = false): Http1Call {
    return this.#start(new Http1Call(this, this.#frame(body), repeatable, flow), spare);
  }

  /** Like `request`, with the body made by `body()` only when the call is given a connection (safe to send twice). */
  requestComposed(body: () => string, flow = ""): Http1Call {
    const call = new Http1Call(this, "", true, flow);
    call.compose = () => this.#frame(body());
    return this.#start(call, false);
  }

  #frame(body: string): string {
    return `${this.#prefix}${Buffer.byteLength(body)}\r\n\r\n${body}`;
  }

  #start(call: Http1Call, spare: boolean): Http1Call {
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
    if (this.#open.size < this.#connections && now >= this.#holdUntil && !this.#keepsOffNew(call)) {
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
  #nextLive(fresh = false): Http1Call | undefined {
    let now: number | undefined;
    let skipped: Http1Call[] | undefined;
    let next: Http1Call | undefined;
    for (let call = this.#queue.shift(); call !== undefined; call = this.#queue.shift()) {
      const live = call.deadlineAt === Number.POSITIVE_INFINITY || call.deadlineAt - (now ??= performance.now()) >= MIN_TIME_LEFT_MS;
      if (live && (call.wanted === undefined || call.wanted(MIN_TIME_LEFT_MS))) {
        if (fresh && this.#keepsOffNew(call)) {
          (skipped ??= []).push(call);
          continue;
        }
        next = call;
        break;
      }
      call.fail(new Http1Error(QUEUED_PAST_DEADLINE, "no connection came free before the call's deadline"));
    }
    if (skipped !== undefined) for (let i = skipped.length - 1; i >= 0; i--) this.#queue.pushFirst(skipped[i] as Http1Call);
    return next;
  }

  /**
   * Whether `call`, not safe to send twice, is to wait for a connection already open rather than take a new one
   * (`fresh`): with the connections nodegate closed just before, which the node's front may still count, a new one
   * would pass `connections` there, and a refusal of it after it was made would fail the call, which is not sent
   * again. It waits for an open connection to free, or (none freeing, or none open) until the front's count has
   * caught up, OWN_CLOSE_LAG_MS after the last own close.
   */
  #keepsOffNew(call: Http1Call): boolean {
    if (call.repeatable) return false;
    const now = performance.now();
    if (this.#open.size + this.#recentOwnCloses(now) < this.#connections) return false;
    const left = this.ownCloseAt + OWN_CLOSE_LAG_MS - now;
    // Once that time is over, it may take a new connection after all, if none has freed by then.
    this.#lagTimer ??= setTimeout(() => {
      this.#lagTimer = undefined;
      if (performance.now() >= this.#holdUntil) this.#fill();
    }, Math.ceil(left)).unref();
    return true;
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

  /** A connection closed for reasons of nodegate's own (a caller that left, an idle one): see OWN_CLOSE_LAG_MS. */
  noteOwnClose(): void {
    const now = performance.now();
    this.ownCloseAt = now;
    this.#ownCloses.push(now);
    if (this.#ownCloses.length > this.#connections + MAX_SPARE) this.#ownCloses.shift();
  }

  /** Connections nodegate closed in the last OWN_CLOSE_LAG_MS. */
  #recentOwnCloses(now: number): number {
    while (this.#ownCloses.length > 0 && now - (this.#ownCloses[0] as number) >= OWN_CLOSE_LAG_MS) this.#ownCloses.shift();
    return this.#ownCloses.length;
  }

  /**
   * Whether `call`, whose new connection the node's front refused before any reply (a reset, or its own 429 or 503),
   * is to go back in line: nodegate closed a connection of its own just before, which the front may still count
   * (see OWN_CLOSE_LAG_MS), so that with the connections open (the refused one among them) they pass `connections`,
   * where such a front caps them, and the call was refused fewer than MAX_REFUSALS times. The caller (Connection)
   * sees to it that the call is safe to send again: it never reached the node, or it is idempotent.
   */
  takesBackRefused(call: Http1Call, by?: Connection, connectRefused = false): boolean {
    const now = performance.now();
    if (this.#closed || call.spare || call.settled || now - this.ownCloseAt >= OWN_CLOSE_LAG_MS) return false;
    // Below the cap, a front capping at `connections` would have taken it: the refusal is the node's (found on review:
    // a node resetting connections on a request was retried, and its callers never saw UNAVAILABLE).
    if (this.#open.size + this.#recentOwnCloses(now) <= this.#connections) return false;
    // With no other connection to the node open, the refusal may as well be a node gone down just after nodegate's own
    // close (killed, restarted): one try more only (found from outside: its callers were told 1-2 s late, and calls a
    // partner may take waited ~2 s for failover).
    let otherLive = false;
    for (const c of this.#open) {
      if (c !== by && c.heldSince(this.ownCloseAt)) {
        otherLive = true;
        break;
      }
    }
    if (otherLive) return call.refusals < MAX_REFUSALS;
    // Alone, the connection itself refused (ECONNREFUSED: nothing listens there): a front capping per client takes the
    // connection and then refuses it (a reset, its 429 or 503); a port nothing listens on is a node (or front) down.
    if (connectRefused) return false;
    if (call.refusals === 0) return true;
    // Alone: tried again while the next try (after the hold requeueRefused sets) comes within ALONE_LAG_MS of the last
    // own close. Found from outside: a read right after the idle sweep closed every connection, refused by a front
    // still counting them (for more than 50 ms), had one more try 50 ms later and failed, though the node was fine.
    return call.refusals < MAX_REFUSALS && now + REFUSED_HOLD_FIRST_MS * 2 ** call.refusals - this.ownCloseAt <= ALONE_LAG_MS;
  }

  /**
   * Puts `call` first in line again, unsent, after the front refused its new connection (takesBackRefused), and opens
   * no new connection for a while (doubling with each refusal): connections that free meanwhile carry the waiting
   * calls, and then new ones are opened for those still waiting.
   */
  requeueRefused(call: Http1Call): void {
    const now = performance.now();
    call.refusals++;
    call.sent = false;
    call.connection = undefined;
    call.queuedAt ??= now;
    this.#queue.pushFirst(call);
    // 50, 100, 200, 400 ms: a call is refused at most MAX_REFUSALS times, so its refusal comes within 750 ms at most.
    const holdUntil = now + REFUSED_HOLD_FIRST_MS * 2 ** (call.refusals - 1);
    if (holdUntil <= this.#holdUntil) return;
    this.#holdUntil = holdUntil;
    if (this.#holdTimer !== undefined) clearTimeout(this.#holdTimer);
    this.#holdTimer = setTimeout(() => this.#fill(), holdUntil - now).unref();
  }

  /** The hold on new connections ended: waiting calls get new connections, up to the cap. */
  #fill(): void {
    this.#holdTimer = undefined;
    // Timers may fire a little before performance.now() says their time has come: the hold ends here, whatever it says.
    this.#holdUntil = 0;
    while (!this.#closed && this.#open.size < this.#connections) {
      const next = this.#nextLive(true);
      if (next === undefined) return;
      this.#openFor(next);
    }
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
    const next = again ?? (this.#open.size < this.#connections && performance.now() >= this.#holdUntil ? this.#nextLive(true) : undefined);
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
    if (this.#holdTimer !== undefined) clearTimeout(this.#holdTimer);
    this.#holdTimer = undefined;
    if (this.#lagTimer !== undefined) clearTimeout(this.#lagTimer);
    this.#lagTimer = undefined;
    for (const call of this.#queue.drain()) call.fail(new Http1Error("ECONNRESET", "client closed"));
    for (const connection of [...this.#open]) {
      const call = connection.call;
      connection.destroy();
      call?.fail(new Http1Error("ECONNRESET", "client closed"));
    }
  }
}
