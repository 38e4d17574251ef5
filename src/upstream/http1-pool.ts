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

/**
 * The bytes that replies being read hold, over every pool that shares it,
 * and the most they may: a reply is taken whole or dropped, so the sum of
 * replies in progress stays bounded however many calls run at once.
 */
export class ReplyBudget {
  readonly maxBytes: number;
  #held = 0;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  get held(): number {
    return this.#held;
  }

  /** Takes `bytes` when they fit; false (and nothing taken) when they would pass the budget. */
  take(bytes: number): boolean {
    if (this.#held + bytes > this.maxBytes) return false;
    this.#held += bytes;
    return true;
  }

  give(bytes: number): void {
    this.#held -= bytes;
  }
}

export interface Http1Reply {
  readonly statusCode: number;
  /** Header names in lower case; repeated headers joined with ", ". */
  readonly headers: Record<string, string>;
  /** The body, in order: one piece when its content-length was given (up to MAX_PIECE), else pieces of growing size. */
  chunks: Buffer[];
  length: number;
  /** The body's end was marked (content-length or chunked encoding), not only the connection closing. */
  framed: boolean;
}

/** A reply nodegate cannot read as HTTP/1.1, or a connection that ended before its reply did. */
export class Http1Error extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = "Http1Error";
    this.code = code;
  }
}

function bodyTooLarge(max: number): Http1Error {
  return new Http1Error("HPE_BODY_TOO_LARGE", `reply body larger than ${max} bytes`);
}

/** A queued call with less time left than this is not sent: no node answers across a network that fast. */
const MIN_TIME_LEFT_MS = 10;

/** The code of the error a queued call fails with when its deadline came before a connection did: it was never sent. */
export const QUEUED_PAST_DEADLINE = "EQUEUEDEADLINE";

/** Requests at least this large (in characters) whose connection closes unanswered are taken as refused for their size. */
const LARGE_REQUEST_CHARS = 1024 * 1024;

/** The code of the error a large request fails with when the node took its connection and closed it before any reply. */
export const LARGE_REQUEST_UNANSWERED = "ELARGEUNANSWERED";

/** The code of the error a reply fails with when the shared ReplyBudget has no room for it. */
export const OVER_REPLY_BUDGET = "EREPLYBUDGET";

/** One request and its reply; `cancel` ends it at any point (queued, connecting, or mid-reply). */
export class Http1Call {
  readonly reply: Promise<Http1Reply>;
  /** The request's bytes: head and body, written at once. */
  readonly text: string;
  /** May be sent again when its reused connection turns out to be closed. */
  readonly repeatable: boolean;
  /** Whom the call is for (an API key): flows take turns when calls wait for a connection. */
  readonly flow: string;
  /** Written to a connection at least once; a call cancelled before never reached the node. */
  sent = false;
  /** When it began to wait for a connection (performance.now()), if it had to. */
  queuedAt: number | undefined;
  /** How long it waited for a connection before it was first sent, ms (0 when one was free). */
  waitedMs = 0;
  /** When its caller stops waiting (performance.now() time): a call still queued then is not sent. */
  deadlineAt = Number.POSITIVE_INFINITY;
  /** Called with the reply or the error, once. */
  #resolve!: (reply: Http1Reply) => void;
  #reject!: (err: unknown) => void;
  #pool: Http1Pool;
  connection: Connection | undefined;
  settled = false;
  repeated = false;

  constructor(pool: Http1Pool, text: string, repeatable: boolean, flow: string) {
    this.#pool = pool;
    this.text = text;
    this.repeatable = repeatable;
    this.flow = flow;
    this.reply = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  cancel(reason: Error): void {
    if (this.settled) return;
    const connection = this.connection;
    this.fail(reason);
    // A connection with a request on the wire cannot be reused: its reply would come to the next call.
    if (connection !== undefined) connection.destroy();
    else this.#pool.unqueue(this);
  }

  succeed(reply: Http1Reply): void {
    if (this.settled) return;
    this.settled = true;
    this.connection = undefined;
    this.#resolve(reply);
  }

  fail(err: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.connection = undefined;
    this.#reject(err);
  }
}

/** Node's `onread` option: reads go into `buffer`, and `callback` gets how many bytes came (tls.connect takes it too, since Node 15.1). */
type OnRead = net.OnReadOpts;

const enum Stage {
  Head,
  LengthBody,
  ChunkSize,
  ChunkData,
  ChunkDataEnd,
  Trailers,
  UntilClose,
}

const CRLF_CRLF = Buffer.from("\r\n\r\n");

/**
 * Sockets read into buffers the pool gives them (Node's `onread`), not into a
 * fresh 64 KiB allocation per read: a 6.6 MiB reply arrived as about a
 * hundred buffers, each reported to V8 as external memory, and with a few such
 * replies in flight V8 spent 5-20 ms in marking steps every ten calls to free
 * them. A body whose length is known is read straight into its own piece
 * once its head has been read; anything else goes through this one buffer
 * (reads run one at a time on the loop, each consumed before the next) and
 * what is kept of it is copied out.
 */
const READ_BUFFER = Buffer.allocUnsafeSlow(128 * 1024);
/** The largest piece a body is read into; a larger body takes several. */
const MAX_PIECE = 16 * 1024 * 1024;
/** The first piece of a body of unknown length (chunked, or until the connection ends); each next one doubles. */
const MIN_PIECE = 16 * 1024;
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: |$)/;
const CHUNK_SIZE = /^[0-9A-Fa-f]{1,15}(?:[ \t]*;.*)?[ \t]*$/;
const MAX_LINE = 8 * 1024;

/** The value of a run of 1 to 15 decimal digits, or -1 for anything else. */
function decimal(text: string): number {
  if (text.length === 0 || text.length > 15) return -1;
  let value = 0;
  for (let i = 0; i < text.length; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

const isSpace = (c: number) => c === 32 || c === 9;

/** Whether the header name at head[at, at + length) is `lower` (given in lower case), in any case. */
function named(head: string, at: number, length: number, lower: string): boolean {
  if (length !== lower.length) return false;
  for (let i = 0; i < length; i++) {
    const c = head.charCodeAt(at + i);
    const l = lower.charCodeAt(i);
    // Letters match in either case; anything else only as itself.
    if (c !== l && !(l >= 0x61 && l <= 0x7a && (c | 0x20) === l)) return false;
  }
  return true;
}

/** Repeated headers read as one, their values joined with ", " (RFC 9110, 5.3). */
const joined = (before: string | undefined, value: string) => (before === undefined ? value : `${before}, ${value}`);

/** A reply; its header lines become an object on first use (most replies only need their framing headers, read as the head arrives). */
class Reply implements Http1Reply {
  readonly statusCode: number;
  readonly chunks: Buffer[];
  readonly length: number;
  readonly framed: boolean;
  /** The head's text, and where its header lines start. */
  readonly #head: string;
  readonly #headersAt: number;
  #headers: Record<string, string> | undefined;

  constructor(statusCode: number, head: string, headersAt: number, chunks: Buffer[], length: number, framed: boolean) {
    this.statusCode = statusCode;
    this.#head = head;
    this.#headersAt = headersAt;
    this.chunks = chunks;
    this.length = length;
    this.framed = framed;
  }

  get headers(): Record<string, string> {
    if (this.#headers !== undefined) return this.#headers;
    const headers: Record<string, string> = {};
    const head = this.#head;
    let at = this.#headersAt;
    while (at < head.length) {
      let end = head.indexOf("\r\n", at);
      if (end < 0) end = head.length;
      const colon = head.indexOf(":", at);
      const name = head.slice(at, colon).trim().toLowerCase();
      headers[name] = joined(headers[name], head.slice(colon + 1, end).trim());
      at = end + 2;
    }
    this.#headers = headers;
    return headers;
  }
}

/** One socket to the node and the reader of the replies that come over it. */
class Connection {
  readonly #pool: Http1Pool;
  readonly socket: net.Socket;
  call: Http1Call | undefined;
  /** This connection has carried a complete exchange (so the server may close it under a new request). */
  #used = false;
  idleSince = 0;
  /** How long this connection may stay idle (the pool's keep-alive, or the server's hint). */
  idleLimitMs: number;
  #closed = false;
  /** The connection (and TLS handshake) was made: the node took it. */
  #connected = false;

  // The reply being read.
  #stage = Stage.Head;
  #head: Buffer | undefined;
  #received = false;
  #statusCode = 0;
  /** The reply's head text and where its header lines start (Reply reads them on demand). */
  #headText = "";
  #headersAt = 0;
  #chunks: Buffer[] = [];
  /** The piece being filled, and how much of it is. */
  #piece: Buffer | undefined;
  #filled = 0;
  #length = 0;
  /** What this reply holds of the pool's ReplyBudget. */
  #taken = 0;
  #remaining = 0;
  #line = "";
  #keepAlive = true;
  /** The last Keep-Alive header seen on this connection. */
  #hint: string | undefined;

  constructor(pool: Http1Pool, connect: (onread: OnRead) => net.Socket, secure: boolean) {
    this.#pool = pool;
    this.idleLimitMs = pool.keepAliveMs;
    this.socket = connect({
      buffer: () => this.#nextReadInto(),
      callback: (n, into) => this.#read(n, into),
    });
    this.socket.setNoDelay(true);
    this.socket.setKeepAlive(true, 60_000);
    // A node that takes the connection but never completes it would hold the call until its deadline.
    this.socket.setTimeout(pool.connectTimeoutMs, () => this.#lost(new Http1Error("ETIMEDOUT", "connect timeout")));
    this.socket.once(secure ? "secureConnect" : "connect", () => {
      this.#connected = true;
      this.socket.setTimeout(0);
    });
    this.socket.on("end", () => this.#ended());
    this.socket.on("error", (err: Error) => this.#lost(err));
    this.socket.on("close", () => this.#lost(new Http1Error("ECONNRESET", "connection closed")));
  }

  start(call: Http1Call): void {
    this.call = call;
    call.connection = this;
    if (!call.sent && call.queuedAt !== undefined) call.waitedMs = performance.now() - call.queuedAt;
    call.sent = true;
    this.#stage = Stage.Head;
    this.#head = undefined;
    this.#received = false;
    this.#chunks = [];
    this.#piece = undefined;
    this.#filled = 0;
    this.#length = 0;
    this.socket.write(call.text);
  }

  destroy(): void {
    this.#giveBack();
    if (this.#closed) return;
    this.#closed = true;
    this.call = undefined;
    this.socket.destroy();
    this.#pool.closed(this);
  }

  /** The socket ended, failed or closed: the call on it (if any) fails, or is sent again. */
  #lost(err: Error): void {
    this.#giveBack();
    const call = this.call;
    this.call = undefined;
    if (!this.#closed) {
      this.#closed = true;
      this.socket.destroy();
      this.#pool.closed(this);
    }
    if (call === undefined || call.settled) return;
    if (this.#used && !this.#received && call.repeatable && !call.repeated) {
      // The server closed a kept-alive connection as the request went out: nothing was answered.
      call.repeated = true;
      call.connection = undefined;
      this.#pool.resend(call);
      return;
    }
    if (this.#connected && !this.#received && call.text.length >= LARGE_REQUEST_CHARS) {
      // A node closes on a request over its size limit (Anvil's is about 2 MiB) and its answer, if it sent one,
      // is often lost in the reset: the node is up, and a caller sending such requests must not open its circuit.
      call.fail(new Http1Error(LARGE_REQUEST_UNANSWERED, `the node closed the connection without answering a ${Buffer.byteLength(call.text)}-byte request`));
      return;
    }
    call.fail(err);
  }

  #ended(): void {
    if (this.call !== undefined && this.#stage === Stage.UntilClose) {
      this.#finish(false);
      return;
    }
    const what = this.#received ? "the connection closed before the reply ended" : "the connection closed before a reply";
    this.#lost(new Http1Error("ECONNRESET", what));
  }

  /**
   * Where the socket's next read goes: the rest of the piece but its last byte while a body of known length fills
   * it, else READ_BUFFER. The body's last byte is read through READ_BUFFER, so bytes the node sent after the body
   * come in that same read and are seen (the connection is then not reused): read straight into a piece cut to the
   * body, they would wait in the socket for the next call on this connection.
   */
  #nextReadInto(): Buffer {
    const piece = this.#piece;
    if (piece === undefined || this.#stage !== Stage.LengthBody || this.call === undefined || this.#filled >= piece.length - 1) return READ_BUFFER;
    return piece.subarray(this.#filled, piece.length - 1);
  }

  /** The socket read `n` bytes into `into` (READ_BUFFER, or the rest of the body's piece); true keeps it reading. */
  #read(n: number, into: Uint8Array): true {
    if (this.call === undefined) {
      // Bytes nobody asked for: this connection cannot be trusted with the next request.
      this.destroy();
      return true;
    }
    this.#received = true;
    try {
      if (into === READ_BUFFER) this.#parse(READ_BUFFER.subarray(0, n));
      else this.#filledDirectly(n);
    } catch (err) {
      const call = this.call;
      this.destroy();
      call?.fail(err);
    }
    return true;
  }

  /** `n` bytes of the body were read straight into the piece (never its last byte: see #nextReadInto). */
  #filledDirectly(n: number): void {
    this.#account(n);
    this.#filled += n;
    this.#remaining -= n;
    if (this.#remaining === 0) this.#finish(true);
  }

  #parse(data: Buffer): void {
    let at = 0;
    while (at < data.length && this.call !== undefined) {
      switch (this.#stage) {
        case Stage.Head: {
          at = this.#readHead(data, at);
          break;
        }
        case Stage.LengthBody: {
          const take = Math.min(this.#remaining, data.length - at);
          this.#push(at === 0 && take === data.length ? data : data.subarray(at, at + take));
          at += take;
          this.#remaining -= take;
          if (this.#remaining === 0) at = this.#finishAt(data, at);
          break;
        }
        case Stage.UntilClose: {
          this.#push(at === 0 ? data : data.subarray(at));
          at = data.length;
          break;
        }
        case Stage.ChunkData: {
          const take = Math.min(this.#remaining, data.length - at);
          this.#push(data.subarray(at, at + take));
          at += take;
          this.#remaining -= take;
          if (this.#remaining === 0) {
            this.#stage = Stage.ChunkDataEnd;
            this.#line = "";
          }
          break;
        }
        case Stage.ChunkSize:
        case Stage.ChunkDataEnd:
        case Stage.Trailers: {
          const end = data.indexOf(10, at);
          const piece = data.toString("latin1", at, end < 0 ? data.length : end + 1);
          at = end < 0 ? data.length : end + 1;
          this.#line += piece;
          if (this.#line.length > MAX_LINE) throw new Http1Error("HPE_CHUNK", "chunk framing line too long");
          if (end >= 0) {
            const line = this.#line.endsWith("\r\n") ? this.#line.slice(0, -2) : this.#line.slice(0, -1);
            this.#line = "";
            if (this.#chunkLine(line)) at = this.#finishAt(data, at);
          }
          break;
        }
      }
    }
  }

  /** A line of chunked framing; true when the body (and its trailers) ended. */
  #chunkLine(line: string): boolean {
    if (this.#stage === Stage.ChunkDataEnd) {
      if (line !== "") throw new Http1Error("HPE_CHUNK", "chunk data longer than its size");
      this.#stage = Stage.ChunkSize;
      return false;
    }
    if (this.#stage === Stage.Trailers) return line === "";
    if (!CHUNK_SIZE.test(line)) throw new Http1Error("HPE_CHUNK", "invalid chunk size");
    const size = Number.parseInt(line, 16);
    if (size === 0) {
      this.#stage = Stage.Trailers;
      return false;
    }
    this.#remaining = size;
    this.#stage = Stage.ChunkData;
    return false;
  }

  /** Copies body bytes out of the read buffer into the reply's pieces. */
  #push(chunk: Buffer): void {
    const before = this.#length;
    this.#account(chunk.length);
    let at = 0;
    while (at < chunk.length) {
      let piece = this.#piece;
      if (piece === undefined || this.#filled === piece.length) {
        if (piece !== undefined) this.#chunks.push(piece);
        // Sized to what the framing says is still to come (content-length, or the chunk; #remaining still counts
        // this chunk, of which `at` bytes went into the piece before), else doubling.
        const left = this.#remaining - at;
        const expected = this.#stage === Stage.LengthBody ? left : Math.max(before, this.#stage === Stage.ChunkData ? left : 0, MIN_PIECE);
        piece = Buffer.allocUnsafe(Math.min(expected, MAX_PIECE));
        this.#piece = piece;
        this.#filled = 0;
      }
      const n = chunk.copy(piece, this.#filled, at);
      this.#filled += n;
      at += n;
    }
  }

  /** Counts `n` more bytes of body against the longest body and the shared budget. */
  #account(n: number): void {
    this.#length += n;
    if (this.#length > this.#pool.maxBodyBytes) throw bodyTooLarge(this.#pool.maxBodyBytes);
    const budget = this.#pool.budget;
    if (budget === undefined) return;
    if (!budget.take(n)) {
      throw new Http1Error(OVER_REPLY_BUDGET, `nodegate is reading ${budget.held} bytes of node replies, its limit (limits.maxReplyBytesInFlight)`);
    }
    this.#taken += n;
  }

  /** The reply arrived whole, or will not: what it held of the budget is free again. */
  #giveBack(): void {
    if (this.#taken === 0) return;
    this.#pool.budget?.give(this.#taken);
    this.#taken = 0;
  }

  /** Reads (part of) a reply head from `data` at `at`; returns where the rest of `data` starts. */
  #readHead(data: Buffer, at: number): number {
    const max = this.#pool.maxHeadBytes;
    const earlier = this.#head;
    // A head split across reads is joined with what came before it.
    const buffer = earlier === undefined ? data : Buffer.concat([earlier, data.subarray(at)]);
    const from = earlier === undefined ? at : 0;
    const end = buffer.indexOf(CRLF_CRLF, earlier === undefined ? at : Math.max(0, earlier.length - 3));
    if (end < 0) {
      if (buffer.length - from > max) throw new Http1Error("HPE_HEADER_OVERFLOW", "reply head too large");
      this.#head = earlier === undefined ? Buffer.from(data.subarray(at)) : buffer;
      return data.length;
    }
    if (end - from > max) throw new Http1Error("HPE_HEADER_OVERFLOW", "reply head too large");
    this.#head = undefined;
    this.#startBody(buffer.toString("latin1", from, end));
    // buffer is earlier + data[at..], so its offset end + 4 is data's offset at + (end + 4 - earlier.length).
    const next = earlier === undefined ? end + 4 : at + end + 4 - earlier.length;
    if (this.#stage === Stage.LengthBody && this.#remaining === 0) return this.#finishAt(data, next);
    return next;
  }

  #startBody(head: string): void {
    const statusEnd = head.indexOf("\r\n");
    const status = STATUS_LINE.exec(statusEnd < 0 ? head : head.slice(0, statusEnd));
    if (status === null) throw new Http1Error("HPE_INVALID_CONSTANT", "not an HTTP/1.x reply");
    const statusCode = Number(status[2]);
    // Only the headers that frame the reply are read here; the rest when someone asks (Reply.headers).
    let connection: string | undefined;
    let hint: string | undefined;
    let contentLength: string | undefined;
    let transferEncoding: string | undefined;
    const headersAt = statusEnd < 0 ? head.length : statusEnd + 2;
    let at = headersAt;
    while (at < head.length) {
      let end = head.indexOf("\r\n", at);
      if (end < 0) end = head.length;
      const colon = head.indexOf(":", at);
      if (colon <= at || colon > end) throw new Http1Error("HPE_INVALID_HEADER_TOKEN", "invalid reply header line");
      let nameEnd = colon;
      while (nameEnd > at && isSpace(head.charCodeAt(nameEnd - 1))) nameEnd--;
      const length = nameEnd - at;
      if (length === 10 || length === 14 || length === 17) {
        const value = head.slice(colon + 1, end).trim();
        if (named(head, at, length, "connection")) connection = joined(connection, value);
        else if (named(head, at, length, "keep-alive")) hint = joined(hint, value);
        else if (named(head, at, length, "content-length")) contentLength = joined(contentLength, value);
        else if (named(head, at, length, "transfer-encoding")) transferEncoding = joined(transferEncoding, value);
      }
      at = end + 2;
    }
    if (statusCode >= 100 && statusCode < 200) return; // 100 Continue and the like: the reply proper comes next
    this.#statusCode = statusCode;
    this.#headText = head;
    this.#headersAt = headersAt;
    if (status[1] === "1") this.#keepAlive = connection === undefined || !/close/i.test(connection);
    else this.#keepAlive = connection !== undefined && /keep-alive/i.test(connection);
    if (hint !== undefined && hint !== this.#hint) {
      // The same hint comes with every reply: it is read once per connection.
      this.#hint = hint;
      const seconds = /timeout=(\d+)/i.exec(hint);
      if (seconds) this.idleLimitMs = Math.min(this.#pool.keepAliveMs, Math.max(Number(seconds[1]) * 1000 - 1000, 500));
    }
    if (statusCode === 204 || statusCode === 304) {
      this.#stage = Stage.LengthBody;
      this.#remaining = 0;
    } else if (transferEncoding !== undefined && /(?:^|,)\s*chunked\s*$/i.test(transferEncoding)) {
      this.#stage = Stage.ChunkSize;
      this.#line = "";
    } else if (transferEncoding !== undefined) {
      this.#stage = Stage.UntilClose;
      this.#keepAlive = false;
    } else if (contentLength !== undefined) {
      const length = decimal(contentLength);
      if (length < 0) throw new Http1Error("HPE_INVALID_CONTENT_LENGTH", "invalid content-length");
      if (length > this.#pool.maxBodyBytes) throw bodyTooLarge(this.#pool.maxBodyBytes);
      this.#stage = Stage.LengthBody;
      this.#remaining = length;
    } else {
      this.#stage = Stage.UntilClose;
      this.#keepAlive = false;
    }
  }

  /** The reply ended at `at` of `data`; returns data.length (nothing more is read from this data). */
  #finishAt(data: Buffer, at: number): number {
    // Bytes after the reply: the server is out of step, so the connection is not reused.
    if (at < data.length) this.#keepAlive = false;
    this.#finish(true);
    return data.length;
  }

  #finish(framed: boolean): void {
    const call = this.call as Http1Call;
    this.call = undefined;
    if (this.#piece !== undefined && this.#filled > 0) this.#chunks.push(this.#filled === this.#piece.length ? this.#piece : this.#piece.subarray(0, this.#filled));
    const reply: Http1Reply = new Reply(this.#statusCode, this.#headText, this.#headersAt, this.#chunks, this.#length, framed);
    this.#chunks = [];
    this.#piece = undefined;
    this.#giveBack();
    if (framed && this.#keepAlive) {
      this.#used = true;
      this.#pool.release(this);
    } else {
      this.destroy();
    }
    call.succeed(reply);
  }
}

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
  request(body: string, repeatable: boolean, flow = ""): Http1Call {
    const call = new Http1Call(this, `${this.#prefix}${Buffer.byteLength(body)}\r\n\r\n${body}`, repeatable, flow);
    if (this.#closed) call.fail(new Http1Error("ECONNREFUSED", "client closed"));
    else this.#send(call, false);
    return call;
  }

  #send(call: Http1Call, fresh: boolean): void {
    if (!fresh) {
      const now = Date.now();
      let connection;
      while ((connection = this.#idle.pop()) !== undefined) {
        if (now - connection.idleSince < connection.idleLimitMs) {
          connection.start(call);
          return;
        }
        connection.destroy();
      }
    }
    if (this.#open.size < this.#connections) {
      this.#openFor(call);
      return;
    }
    call.queuedAt ??= performance.now();
    if (fresh) this.#queue.pushFirst(call);
    else this.#queue.push(call);
  }

  #openFor(call: Http1Call): void {
    const connection = new Connection(this, this.#connect, this.#secure);
    this.#open.add(connection);
    connection.start(call);
  }

  /** Sends a call again, on a new connection (its reused one was closed under it). */
  resend(call: Http1Call): void {
    if (this.#closed) call.fail(new Http1Error("ECONNRESET", "client closed"));
    else this.#send(call, true);
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

  unqueue(call: Http1Call): void {
    this.#queue.remove(call);
  }

  /** A connection finished its exchange and may carry the next. */
  release(connection: Connection): void {
    const next = this.#nextLive();
    if (next !== undefined) {
      connection.start(next);
      return;
    }
    connection.idleSince = Date.now();
    this.#idle.push(connection);
    this.#sweeper ??= setInterval(() => this.#sweep(), 1000).unref();
  }

  /** A connection is gone: its place may go to a waiting call. */
  closed(connection: Connection): void {
    this.#open.delete(connection);
    const i = this.#idle.indexOf(connection);
    if (i >= 0) this.#idle.splice(i, 1);
    if (this.#closed) return;
    const next = this.#nextLive();
    if (next !== undefined) this.#openFor(next);
  }

  /** Closes connections idle past their limit, so none is reused just as the server drops it. */
  #sweep(): void {
    const now = Date.now();
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
