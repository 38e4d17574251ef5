/**
 * One socket to the node and the reader of the replies that come over it:
 * the status, the framing headers (the others on demand), and the body framed
 * by content-length, chunked encoding or the connection's end.
 */
import type net from "node:net";
import { bodyTooLarge, type Http1Call, Http1Error, type Http1Reply, KEPT_ALIVE_CLOSED, KEPT_ALIVE_CLOSED_RESTING, LARGE_REQUEST_UNANSWERED, NODE_CLOSED, OVER_REPLY_BUDGET } from "./http1-call.js";
import type { Http1Pool } from "./http1-pool.js";

/** Node's `onread` option: reads go into `buffer`, and `callback` gets how many bytes came (tls.connect takes it too, since Node 15.1). */
export type OnRead = net.OnReadOpts;

/** Requests at least this large (in characters) whose connection closes unanswered are taken as refused for their size. */
const LARGE_REQUEST_CHARS = 1024 * 1024;
/** A reply nobody waits for any more is read to its end only up to this size; a larger one closes its connection. */
const UNWANTED_REPLY_MAX_BYTES = 1024 * 1024;

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
/** Never in a head whose lines end in CRLF: a head whose lines end in a bare LF has ended. */
const LF_LF = Buffer.from("\n\n");

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
const CHUNK_SIZE = /^0*[0-9A-Fa-f]{1,15}(?:[ \t]*;.*)?[ \t]*$/;
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
  readonly #connection: Connection;
  /** The connection's exchange this reply ended (Connection.exchanges). */
  readonly #exchange: number;

  constructor(connection: Connection, statusCode: number, head: string, headersAt: number, chunks: Buffer[], length: number, framed: boolean) {
    this.#connection = connection;
    this.#exchange = connection.exchanges;
    this.statusCode = statusCode;
    this.#head = head;
    this.#headersAt = headersAt;
    this.chunks = chunks;
    this.length = length;
    this.framed = framed;
  }

  get followsIdNullError(): boolean {
    return this.#connection.idNullErrorAt === this.#exchange - 1;
  }

  markIdNullError(): void {
    this.#connection.idNullErrorAt = this.#exchange;
  }

  outOfStep(): void {
    this.#connection.outOfStep();
  }

  notReused(): void {
    if (this.#connection.exchanges === this.#exchange) this.#connection.destroy();
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
export class Connection {
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
  /** While the reply being read is one its caller left (finishUnwanted): closes the connection if it takes too long. */
  #unwantedTimer: NodeJS.Timeout | undefined;

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

  /** Exchanges started on this connection. */
  exchanges = 0;
  /** The exchange whose reply was an error with id null (Http1Reply.markIdNullError); -1 when none. */
  idNullErrorAt = -1;

  start(call: Http1Call): void {
    this.exchanges++;
    this.call = call;
    call.connection = this;
    if (call.compose !== undefined) {
      call.text = call.compose();
      call.compose = undefined;
    }
    if (!call.sent) {
      if (call.queuedAt !== undefined) call.waitedMs = performance.now() - call.queuedAt;
      call.sent = true;
      call.onSent?.();
    }
    this.#stage = Stage.Head;
    this.#head = undefined;
    this.#received = false;
    this.#chunks = [];
    this.#piece = undefined;
    this.#filled = 0;
    this.#length = 0;
    this.socket.write(call.text);
  }

  /**
   * The call on this connection was cancelled by its caller: read its reply to the end and discard it, so the
   * connection can carry the next call, unless the reply takes longer than `ms` or is larger than
   * UNWANTED_REPLY_MAX_BYTES, when the connection closes.
   */
  finishUnwanted(ms: number): void {
    if (this.#closed || this.call === undefined || this.#unwantedTimer !== undefined) return;
    this.#pool.unwanted++;
    this.#unwantedTimer = setTimeout(() => this.destroy(), ms).unref();
    // A reply whose head has come may be known to be over the limit already.
    if (this.#unwantedTooLarge()) this.destroy();
  }

  /** The reply nobody waits for is, or is said by its content-length to be, larger than UNWANTED_REPLY_MAX_BYTES. */
  #unwantedTooLarge(): boolean {
    if (this.#unwantedTimer === undefined) return false;
    const known = this.#stage === Stage.LengthBody ? this.#length + this.#remaining : this.#length;
    return known > UNWANTED_REPLY_MAX_BYTES;
  }

  /** The unwanted reply ended, or its connection did. */
  #settleUnwanted(): void {
    if (this.#unwantedTimer === undefined) return;
    clearTimeout(this.#unwantedTimer);
    this.#unwantedTimer = undefined;
    this.#pool.unwanted--;
  }

  /** When this connection was opened (performance.now()). */
  readonly openedAt = performance.now();

  /**
   * Made, not closed, and taken by the node's front: it was opened before `since` (nodegate's last own close, which
   * a front capping per client counts a while yet), or something came back on it. A new connection made but not yet
   * answered says nothing: the front may refuse it next (found from outside: a read's sibling new connection, about
   * to be refused by a node gone down, counted as another connection open, and the read was tried four times, ~750 ms).
   */
  heldSince(since: number): boolean {
    return this.#connected && !this.#closed && (this.#received || this.#used || this.openedAt < since);
  }

  destroy(): void {
    this.#settleUnwanted();
    this.#giveBack();
    this.call = undefined;
    this.#retire(undefined, true);
  }

  /**
   * Closes the socket, if not yet (`own`: for reasons of nodegate's own, not the node's), and gives the connection's
   * place in the pool to `again` (a call to send once more) on a new connection, else to the next waiting call
   * (found from outside: a call sent again as a waiting one, with every place taken, was handed a reused connection
   * the server was closing too, and failed).
   */
  #retire(again?: Http1Call, own = false): void {
    // nodegate's own close: the node's front may count this connection a while yet (see Http1Pool.takesBackRefused).
    if (own && this.#connected && !this.#closed) this.#pool.noteOwnClose();
    if (again !== undefined) {
      again.repeated = true;
      again.connection = undefined;
    }
    if (this.#closed) {
      // Never so: a closed connection carries no call (destroy let it go). Failed rather than left waiting, were it so.
      again?.fail(new Http1Error("ECONNRESET", "connection closed"));
      return;
    }
    this.#closed = true;
    this.socket.destroy();
    this.#pool.closed(this, again);
  }

  /** A reply read on this connection was not its request's: see Http1Reply.outOfStep. */
  outOfStep(): void {
    if (!this.#closed) this.#lost(new Http1Error("ECONNRESET", "the node's replies on this connection are out of step with its requests"), false);
  }

  /** The socket ended, failed or closed (`byServer`; else nodegate closes it): the call on it (if any) fails, or is sent again. */
  #lost(err: Error, byServer = true): void {
    this.#settleUnwanted();
    this.#giveBack();
    const call = this.call;
    this.call = undefined;
    // The server closed a kept-alive connection as the request went out: nothing was answered, and a call safe to
    // repeat is sent once more, on a new connection; not while the node's circuit rests (found from outside: sent
    // again during its provider's Retry-After pause, to a node that then held it, its caller waited out the deadline).
    const resend = call !== undefined && !call.settled && this.#used && !this.#received && call.repeatable && !call.repeated;
    const resting = resend && this.#pool.resting();
    const again = resend && !resting ? call : undefined;
    if (call !== undefined && again === undefined && this.#refusedByFront(call, err)) return;
    this.#retire(again, !byServer);
    if (call === undefined || call.settled || again !== undefined) return;
    // Said as what nodegate did (it did not send it again), whatever the call's size: a kept-alive close is not told
    // from a refusal of a large request before the call is sent again.
    if (resting) {
      call.fail(new Http1Error(KEPT_ALIVE_CLOSED_RESTING, `the node closed a kept-alive connection as the request went out (${err.message}), and its circuit is open`));
      return;
    }
    if (this.#connected && !this.#received && call.text.length >= LARGE_REQUEST_CHARS) {
      // A node closes on a request over its size limit (Anvil's is about 2 MiB) and its answer, if it sent one,
      // is often lost in the reset: the node is up, and a caller sending such requests must not open its circuit.
      call.fail(new Http1Error(LARGE_REQUEST_UNANSWERED, `the node closed the connection without answering a ${Buffer.byteLength(call.text)}-byte request`));
      return;
    }
    if (byServer && this.#used && !this.#received && !call.repeatable) {
      call.fail(new Http1Error(KEPT_ALIVE_CLOSED, `the node closed a kept-alive connection as the request went out (${err.message})`));
      return;
    }
    call.fail(err);
  }

  /**
   * A new connection that ended before any reply, right after nodegate closed one of its own: the node's front
   * refusing it (a cap per client that still counts the closed one). The call goes back in line (Http1Pool
   * requeueRefused) when it is safe to send again: it never left (the connection was never made), or it is
   * idempotent; never a large request (which a node closes on for its size), nor a connect timeout.
   */
  #refusedByFront(call: Http1Call, err: Error): boolean {
    if (call.settled || this.#used || this.#received || (err as { code?: string }).code === "ETIMEDOUT") return false;
    if (!(call.repeatable || !this.#connected) || call.text.length >= LARGE_REQUEST_CHARS || !this.#pool.takesBackRefused(call, this, !this.#connected && (err as { code?: string }).code === "ECONNREFUSED")) return false;
    this.#pool.requeueRefused(call);
    this.#retire();
    return true;
  }

  #ended(): void {
    if (this.call !== undefined && this.#stage === Stage.UntilClose) {
      this.#finish(false);
      return;
    }
    this.#lost(new Http1Error(NODE_CLOSED, this.#received ? "the connection closed before the reply ended" : "the connection closed before a reply"));
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
    if (this.#unwantedTooLarge()) throw bodyTooLarge(UNWANTED_REPLY_MAX_BYTES);
    const budget = this.#pool.budget;
    if (budget === undefined) return;
    if (!budget.take(n)) {
      throw new Http1Error(OVER_REPLY_BUDGET, `nodegate holds ${budget.held} bytes of node replies, its limit (limits.maxReplyBytesInFlight)`);
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
      // Said at once, rather than waiting out the deadline for a CRLF that will not come (found from outside).
      if (buffer.indexOf(LF_LF, from) >= 0) throw new Http1Error("HPE_LF_EXPECTED", "the reply's head ends its lines with a bare LF, not CRLF (RFC 9112, 2.2)");
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
    // An empty list of codings is no coding at all (RFC 9110, 5.6.1).
    if (transferEncoding !== undefined && transferEncoding.trim() === "") transferEncoding = undefined;
    if (statusCode === 204 || statusCode === 304) {
      this.#stage = Stage.LengthBody;
      this.#remaining = 0;
    } else if (transferEncoding !== undefined && /(?:^|,)\s*chunked\s*$/i.test(transferEncoding)) {
      this.#stage = Stage.ChunkSize;
      this.#line = "";
      // An HTTP/1.0 server cannot send chunked framing: the reply is read, but the connection is not trusted again (RFC 9112, 6.1).
      if (status[1] === "0") this.#keepAlive = false;
    } else if (transferEncoding !== undefined) {
      this.#stage = Stage.UntilClose;
      this.#keepAlive = false;
    } else if (contentLength !== undefined) {
      const length = decimal(contentLength);
      if (length < 0) throw new Http1Error("HPE_INVALID_CONTENT_LENGTH", "invalid content-length");
      if (length > this.#pool.maxBodyBytes) throw bodyTooLarge(this.#pool.maxBodyBytes);
      this.#stage = Stage.LengthBody;
      this.#remaining = length;
      if (this.#unwantedTooLarge()) throw bodyTooLarge(UNWANTED_REPLY_MAX_BYTES);
    } else {
      this.#stage = Stage.UntilClose;
      this.#keepAlive = false;
    }
  }

  /** Whether the reply's body (read so far) starts as JSON would: `{` or `[` after any white space. */
  #jsonBody(): boolean {
    const pieces = this.#piece === undefined ? this.#chunks : [...this.#chunks, this.#piece.subarray(0, this.#filled)];
    for (const piece of pieces) {
      for (const byte of piece) {
        if (byte === 0x7b || byte === 0x5b) return true;
        if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d) return false;
      }
    }
    return false;
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
    if (!this.#used) {
      // The front's own 429 or 503 (no JSON-RPC body: not the provider's answer) to a new connection, right after
      // nodegate closed one of its own: a cap per client refusing it (see #refusedByFront). An idempotent call goes
      // back in line; others are not sent again.
      const status = this.#statusCode;
      if ((status === 429 || status === 503) && call.repeatable && !call.settled && !this.#jsonBody() && this.#pool.takesBackRefused(call, this)) {
        this.#settleUnwanted();
        this.#giveBack();
        this.#chunks = [];
        this.#piece = undefined;
        this.#pool.requeueRefused(call);
        this.#retire();
        return;
      }
    }
    // A front refusing a spare connection (429/503, a cap per client) is not the node speaking (found from outside).
    if (!(call.spare && (this.#statusCode === 429 || this.#statusCode === 503))) this.#pool.lastReplyAt = performance.now();
    if (this.#piece !== undefined && this.#filled > 0) this.#chunks.push(this.#filled === this.#piece.length ? this.#piece : this.#piece.subarray(0, this.#filled));
    const reply: Http1Reply = new Reply(this, this.#statusCode, this.#headText, this.#headersAt, this.#chunks, this.#length, framed);
    this.#chunks = [];
    this.#piece = undefined;
    this.#settleUnwanted();
    this.#giveBack();
    if (this.#statusCode === 408 && this.#used && !call.repeated && !call.settled) {
      // A front closing a kept-alive connection answers the request it did not wait for with 408 (HAProxy does): the
      // request was never taken, and any call may be sent again (RFC 9110, 15.5.9), on a new connection (found from
      // outside: the 408 was read as the node's invalid answer and counted as an outage). Not while its circuit rests.
      if (this.#pool.resting()) {
        this.#retire();
        call.fail(new Http1Error(KEPT_ALIVE_CLOSED_RESTING, "the node's front closed a kept-alive connection as the request went out (HTTP 408), and its circuit is open"));
      } else {
        this.#retire(call);
      }
      return;
    }
    if (framed && this.#keepAlive) {
      this.#used = true;
      this.#pool.release(this);
    } else {
      // The node's close (`connection: close`, a body ended by the close), not nodegate's own: its front knows it.
      this.#retire();
    }
    call.succeed(reply);
  }
}
