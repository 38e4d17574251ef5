/**
 * A small Redis client (RESP2 over one TCP or TLS connection) for the shared
 * stores: commands are pipelined (written as they come, answered in order),
 * the connection is re-opened with backoff when it drops, and nothing waits
 * on a Redis that is not there. While disconnected, a command fails at once
 * with RedisUnavailableError, so callers can fall back instead of queueing
 * requests behind an outage; a command left unanswered past its deadline
 * fails the same way and the connection is replaced, since a silent server
 * cannot be told apart from a dead one. Silent means next to nothing moved for
 * the deadline, judged after the socket has been read: a busy event loop, a
 * large value arriving ahead of the command's reply, or the command's own large
 * value still leaving, is no silence.
 */
import net from "node:net";
import tls from "node:tls";
import { type BackoffOptions, backoffDelay } from "../upstream/backoff.js";
import { parseRedisUrl, type RedisEndpoint } from "./redis-url.js";
import { encodeCommand, type RedisArgument, type RedisReply, RedisReplyError, RespParser } from "./resp.js";

export { parseRedisUrl, redactRedisUrl, type RedisEndpoint } from "./redis-url.js";
export { RedisReplyError, type RedisArgument, type RedisReply } from "./resp.js";

/**
 * What must move within a command's deadline for the command to wait another one: a large value ahead of its reply
 * arriving, or its own leaving, at 128 KiB/s or more (at the default 500 ms).
 */
const MIN_PROGRESS_BYTES = 64 * 1024;

/** A command larger than this is handed to the socket in slices of it (a net.Socket's default high-water mark). */
const OUTGOING_SLICE_BYTES = 16 * 1024;

/** Redis could not take or answer the command (down, connecting, timed out, closed). */
export class RedisUnavailableError extends Error {
  override name = "RedisUnavailableError";
}

export type RedisClientState = "connecting" | "ready" | "down" | "closed";

export interface RedisClientOptions {
  url: string;
  /** A command unanswered this long fails and the connection is replaced, in ms. Default 500. */
  commandTimeoutMs?: number;
  /** Longest wait for a connection (and its AUTH/SELECT), in ms. Default 2000. */
  connectTimeoutMs?: number;
  /** Delay between reconnect attempts. Default 100 ms doubling to 5 s. */
  reconnect?: BackoffOptions;
  /** Extra TLS settings for rediss:// (a private CA, for example). */
  tls?: tls.ConnectionOptions;
}

interface Pending {
  resolve(reply: RedisReply): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout | undefined;
  settled?: boolean;
  /** Where the command's bytes end in what the connection has written (see #progress). */
  sentEnd?: number;
  /** The command's progress when its last deadline was set (see #checkSilence). */
  progressMark?: number;
}

interface Waiting {
  payload: Buffer;
  pending: Pending;
}

type StateListener = (state: RedisClientState, error: Error | undefined) => void;

export class RedisClient {
  readonly endpoint: RedisEndpoint;
  readonly #commandTimeoutMs: number;
  readonly #connectTimeoutMs: number;
  readonly #reconnect: BackoffOptions;
  readonly #tls: tls.ConnectionOptions | undefined;
  readonly #parser = new RespParser();
  readonly #listeners = new Set<StateListener>();
  #state: RedisClientState = "connecting";
  #socket: net.Socket | undefined;
  /** Written to the current socket, answered in this order. */
  #inFlight: Pending[] = [];
  /** Sent while the connection was being opened; written once it is ready. */
  #waiting: Waiting[] = [];
  #attempt = 0;
  /** A command other than the handshake's was answered on this connection: the backoff starts over. */
  #proven = false;
  /** What the current connection has read, in bytes. */
  #readBytes = 0;
  /** What has been given to the current connection to write, in bytes (some may still wait in the outbox or its buffer). */
  #queuedBytes = 0;
  /** Commands not yet handed to the socket, oldest first; the first may be partly handed (up to #outboxOffset). */
  #outbox: Buffer[] = [];
  #outboxOffset = 0;
  #outboxBytes = 0;
  /** The socket has more than it takes at once; the outbox waits for its 'drain'. */
  #awaitingDrain = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #connectTimer: NodeJS.Timeout | undefined;
  #corked = false;
  #lastError: Error | undefined;

  constructor(options: RedisClientOptions) {
    this.endpoint = parseRedisUrl(options.url);
    this.#commandTimeoutMs = options.commandTimeoutMs ?? 500;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? 2000;
    this.#reconnect = options.reconnect ?? { minDelayMs: 100, maxDelayMs: 5000 };
    this.#tls = options.tls;
    this.#open();
  }

  get state(): RedisClientState {
    return this.#state;
  }

  /** Why the connection last failed, if it did. */
  get lastError(): Error | undefined {
    return this.#lastError;
  }

  /** Called on every state change; returns a function that stops the calls. */
  onStateChange(listener: StateListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Resolves once the client is ready; rejects if the attempt under way fails. */
  ready(): Promise<void> {
    if (this.#state === "ready") return Promise.resolve();
    if (this.#state !== "connecting") return Promise.reject(this.#unavailable());
    return new Promise((resolve, reject) => {
      const stop = this.onStateChange((state) => {
        stop();
        if (state === "ready") resolve();
        else reject(this.#unavailable());
      });
    });
  }

  /**
   * Sends one command. Resolves with the reply; rejects with RedisReplyError
   * for an error reply and RedisUnavailableError when Redis cannot answer.
   */
  command(args: readonly RedisArgument[]): Promise<RedisReply> {
    if (this.#state === "down" || this.#state === "closed") return Promise.reject(this.#unavailable());
    const payload = encodeCommand(args);
    return new Promise<RedisReply>((resolve, reject) => {
      const pending: Pending = { resolve, reject, timer: undefined };
      if (this.#state === "connecting") this.#waiting.push({ payload, pending });
      else this.#write(payload, pending);
    });
  }

  /** Closes the connection; commands still waiting fail. Reconnecting stops. */
  async close(): Promise<void> {
    if (this.#state === "closed") return;
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#connectTimer);
    const socket = this.#socket;
    this.#fail(new RedisUnavailableError("redis client closed"));
    this.#setState("closed", undefined);
    if (socket !== undefined && !socket.destroyed) {
      await new Promise<void>((resolve) => {
        socket.once("close", () => resolve());
        socket.destroy();
      });
    }
  }

  #unavailable(): RedisUnavailableError {
    if (this.#state === "closed") return new RedisUnavailableError("redis client closed");
    const reason = this.#lastError ? `: ${this.#lastError.message}` : "";
    return new RedisUnavailableError(`redis at ${this.endpoint.host}:${this.endpoint.port} is unavailable${reason}`);
  }

  #setState(state: RedisClientState, error: Error | undefined): void {
    if (state === this.#state) return;
    this.#state = state;
    for (const listener of [...this.#listeners]) listener(state, error);
  }

  #open(): void {
    const { host, port } = this.endpoint;
    const socket = this.endpoint.tls
      ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host, ...this.#tls })
      : net.connect({ host, port });
    this.#socket = socket;
    this.#proven = false;
    this.#queuedBytes = 0;
    this.#outbox = [];
    this.#outboxOffset = 0;
    this.#outboxBytes = 0;
    this.#awaitingDrain = false;
    this.#parser.reset();
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 10_000);
    this.#connectTimer = setTimeout(() => socket.destroy(new Error(`no connection within ${this.#connectTimeoutMs} ms`)), this.#connectTimeoutMs);
    socket.once(this.endpoint.tls ? "secureConnect" : "connect", () => void this.#handshake(socket));
    socket.on("data", (chunk: Buffer) => this.#onData(socket, chunk));
    socket.on("error", (err) => {
      this.#lastError = err;
    });
    socket.once("close", () => this.#onClose(socket));
  }

  async #handshake(socket: net.Socket): Promise<void> {
    const { username, password, db } = this.endpoint;
    const steps: RedisArgument[][] = [];
    if (password !== undefined) steps.push(username !== undefined ? ["AUTH", username, password] : ["AUTH", password]);
    if (db !== 0) steps.push(["SELECT", db]);
    // Ready once Redis answers a command, not once TCP connects: a Redis that wants a password (NOAUTH) or has no
    // room for a client (max number of clients) takes the connection and refuses everything on it.
    steps.push(["PING"]);
    try {
      await Promise.all(steps.map((args) => new Promise<RedisReply>((resolve, reject) => this.#write(encodeCommand(args), { resolve, reject, timer: undefined }))));
    } catch (err) {
      socket.destroy(err as Error);
      return;
    }
    if (socket !== this.#socket || this.#state !== "connecting") return;
    clearTimeout(this.#connectTimer);
    this.#lastError = undefined;
    const waiting = this.#waiting;
    this.#waiting = [];
    this.#setState("ready", undefined);
    for (const w of waiting) this.#write(w.payload, w.pending);
    this.#proveWhenIdle(socket);
  }

  /**
   * A connection that stays up for two deadlines with no command waiting proves Redis well too: a connection that
   * carries few commands (the cache's, while callers ask only for `latest`) would otherwise keep the longest reconnect
   * delay after a few restarts (found from outside: back 4.6 s after a restart, the rate limits' in 0.7 s).
   */
  #proveWhenIdle(socket: net.Socket): void {
    const check = (): void => {
      if (socket !== this.#socket || this.#proven) return;
      if (this.#inFlight.length === 0) {
        this.#proven = true;
        this.#attempt = 0;
      } else {
        setTimeout(check, this.#commandTimeoutMs).unref();
      }
    };
    setTimeout(check, 2 * this.#commandTimeoutMs).unref();
  }

  #write(payload: Buffer, pending: Pending): void {
    const socket = this.#socket as net.Socket;
    this.#queuedBytes += payload.length;
    this.#outbox.push(payload);
    this.#outboxBytes += payload.length;
    pending.sentEnd = this.#queuedBytes;
    pending.progressMark = this.#progress(socket, pending);
    pending.timer = setTimeout(() => this.#checkSilence(socket, pending), this.#commandTimeoutMs);
    this.#inFlight.push(pending);
    // Commands issued in the same tick leave in one write (one TCP segment where they fit).
    if (!this.#corked) {
      this.#corked = true;
      socket.cork();
      process.nextTick(() => {
        this.#corked = false;
        socket.uncork();
      });
    }
    if (!this.#awaitingDrain) this.#sendOutbox(socket);
  }

  /**
   * Hands the outbox to the socket a slice at a time, the next once the socket has taken the last: a value written
   * whole is counted as waiting until its last byte has gone, so its progress could not be seen (see #progress).
   */
  #sendOutbox(socket: net.Socket): void {
    this.#awaitingDrain = false;
    // Small commands queued behind a large value leave together once it has gone, not one write each.
    socket.cork();
    try {
      this.#sendSlices(socket);
    } finally {
      socket.uncork();
    }
  }

  #sendSlices(socket: net.Socket): void {
    while (this.#outbox.length > 0 && socket === this.#socket) {
      const head = this.#outbox[0] as Buffer;
      const start = this.#outboxOffset;
      const end = Math.min(head.length, start + OUTGOING_SLICE_BYTES);
      const slice = start === 0 && end === head.length ? head : head.subarray(start, end);
      this.#outboxOffset = end;
      if (end === head.length) {
        this.#outbox.shift();
        this.#outboxOffset = 0;
      }
      this.#outboxBytes -= slice.length;
      if (!socket.write(slice)) {
        this.#awaitingDrain = true;
        socket.once("drain", () => this.#sendOutbox(socket));
        return;
      }
    }
  }

  /**
   * A command's deadline passed: the connection is replaced unless something moved for it (at least MIN_PROGRESS_BYTES
   * since the deadline was set), in which case it waits one more deadline. Judged once the socket has been read
   * (setImmediate runs after the loop's poll phase): timers run first after a long task, and a reply waiting unread
   * would be taken for silence (found from outside: a healthy Redis declared down, and shared rate limits turned
   * per-instance, whenever a busy instance's loop was held over 500 ms). A trickle is no progress (found from outside:
   * a Redis sending a byte every 400 ms held requests for minutes).
   */
  #checkSilence(socket: net.Socket, pending: Pending): void {
    setImmediate(() => {
      if (pending.settled === true || socket !== this.#socket) return;
      const progress = this.#progress(socket, pending);
      if (progress - (pending.progressMark ?? 0) < MIN_PROGRESS_BYTES) {
        socket.destroy(new Error(`no reply within ${this.#commandTimeoutMs} ms`));
        return;
      }
      pending.progressMark = progress;
      pending.timer = setTimeout(() => this.#checkSilence(socket, pending), this.#commandTimeoutMs);
    });
  }

  /**
   * What has moved for a command: bytes read (the replies ahead of its own, then its own), and bytes of it and of the
   * commands before it handed to the kernel, which happens only as fast as Redis reads them. A large SET is no reply
   * until Redis has all of it (found in CI: an 8 MiB SET through a loaded proxy failed at its 100 ms deadline, and a
   * cached answer of a few MiB would on a link slower than about 10 MB/s at 500 ms). Commands written after it are not
   * counted, so a Redis that reads but answers nothing (CLIENT PAUSE) is still found silent while others keep writing.
   */
  #progress(socket: net.Socket, pending: Pending): number {
    const handedOver = this.#queuedBytes - this.#outboxBytes - socket.writableLength;
    return this.#readBytes + Math.min(handedOver, pending.sentEnd ?? 0);
  }

  #onData(socket: net.Socket, chunk: Buffer): void {
    if (socket !== this.#socket) return;
    this.#readBytes += chunk.length;
    let replies: RedisReply[];
    try {
      replies = this.#parser.push(chunk);
    } catch (err) {
      socket.destroy(err as Error);
      return;
    }
    for (const reply of replies) {
      const pending = this.#inFlight.shift();
      if (pending === undefined) {
        socket.destroy(new Error("a reply arrived for no command"));
        return;
      }
      clearTimeout(pending.timer);
      pending.settled = true;
      // A Redis that answers the handshake's PING but holds every other command (CLIENT PAUSE during a failover) must
      // not have its reconnects start over at the shortest delay each time (found from outside: it flapped every
      // 600 ms, stalling every call in flight each time).
      if (!this.#proven && this.#state === "ready") {
        this.#proven = true;
        this.#attempt = 0;
      }
      if (reply instanceof RedisReplyError) pending.reject(reply);
      else pending.resolve(reply);
    }
  }

  #fail(err: Error): void {
    const inFlight = this.#inFlight;
    const waiting = this.#waiting;
    this.#inFlight = [];
    this.#waiting = [];
    for (const p of inFlight) {
      clearTimeout(p.timer);
      p.settled = true;
      p.reject(err);
    }
    for (const w of waiting) w.pending.reject(err);
  }

  #onClose(socket: net.Socket): void {
    if (socket !== this.#socket) return;
    clearTimeout(this.#connectTimer);
    this.#socket = undefined;
    if (this.#state === "closed") return;
    this.#lastError ??= new Error("connection closed");
    this.#setState("down", this.#lastError);
    this.#fail(this.#unavailable());
    const delay = backoffDelay(this.#attempt++, this.#reconnect);
    this.#retryTimer = setTimeout(() => {
      this.#setState("connecting", undefined);
      this.#open();
    }, delay);
  }
}
