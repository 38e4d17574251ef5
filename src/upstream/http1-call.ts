/** One HTTP/1.1 request to the node and its reply, as the pool hands them out; the errors a call ends with. */
import type { Connection } from "./http1-connection.js";
import type { Http1Pool } from "./http1-pool.js";

export interface Http1Reply {
  readonly statusCode: number;
  /** Header names in lower case; repeated headers joined with ", ". */
  readonly headers: Record<string, string>;
  /** The body, in order: one piece when its content-length was given (up to MAX_PIECE), else pieces of growing size. */
  chunks: Buffer[];
  length: number;
  /** The body's end was marked (content-length or chunked encoding), not only the connection closing. */
  framed: boolean;
  /**
   * The reply before this one on its connection was an error with id null (markedIdNull): a node that wrote that
   * one twice would have this be its copy, which its id cannot tell.
   */
  readonly followsIdNullError: boolean;
  /** Says this reply is an error with id null (see followsIdNullError). */
  markIdNullError(): void;
  /**
   * Says the body is another request's reply (its id): the node is out of
   * step on that connection, so it is not used again, and a call it carries
   * by now is sent again on another when it may be. Otherwise each later call
   * on it would read the one before's reply.
   */
  outOfStep(): void;
  /**
   * Says the body is no reply at all (the node is confused): the connection
   * is not used again. One already carrying the next call keeps it: that
   * call's reply is checked by its id, and closing it would fail a call the
   * node may have taken (found from outside: 503 pages from a node's front
   * closed connections under queued eth_sendRawTransaction calls).
   */
  notReused(): void;
}

/** A reply nodegate cannot read as HTTP/1.1, or a connection that ended before its reply did. */
export class Http1Error extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    // A reply's or a queue's outcome, handled where it is caught: no stack (see GatewayError).
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(message);
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
    this.name = "Http1Error";
    this.code = code;
  }
}

/** The code of the error a reply fails with when its body is larger than the pool reads. */
export const BODY_TOO_LARGE = "HPE_BODY_TOO_LARGE";

export function bodyTooLarge(max: number): Http1Error {
  return new Http1Error(BODY_TOO_LARGE, `reply body larger than ${max} bytes`);
}

/** The code of the error a queued call fails with when its deadline came before a connection did: it was never sent. */
export const QUEUED_PAST_DEADLINE = "EQUEUEDEADLINE";

/** The code of the error a queued call fails with when the node's circuit opened before a connection came free: never sent. */
export const CIRCUIT_OPENED_UNSENT = "ECIRCUITOPENUNSENT";

/** The code of the error a large request fails with when the node took its connection and closed it before any reply. */
export const LARGE_REQUEST_UNANSWERED = "ELARGEUNANSWERED";

/**
 * The code of the error a call not safe to repeat fails with when the server closed its kept-alive connection as
 * the request went out, before any reply: what a server does to a connection idle past its keep-alive, which
 * says nothing of the node, though whether the request was taken is unknown.
 */
export const KEPT_ALIVE_CLOSED = "EKEPTALIVECLOSED";

/**
 * The code of the error a call safe to repeat fails with when the server closed its kept-alive connection as the
 * request went out, before any reply, while the node's circuit rests (open, its provider's Retry-After or a
 * cooldown): it would be sent again otherwise, to a node that asked not to be called.
 */
export const KEPT_ALIVE_CLOSED_RESTING = "EKEPTALIVERESTING";

/**
 * The code of the error a call fails with when the node closed the connection (a clean close, not a reset) before its
 * reply ended, or before any of it: said as such, not as "connection reset" (found from outside: an operator looked
 * for resets that never happened).
 */
export const NODE_CLOSED = "ENODECLOSED";

/** The code of the error a reply fails with when the shared ReplyBudget has no room for it. */
export const OVER_REPLY_BUDGET = "EREPLYBUDGET";

/** One request and its reply; `cancel` ends it at any point (queued, connecting, or mid-reply). */
export class Http1Call {
  readonly reply: Promise<Http1Reply>;
  /** The request's bytes: head and body, written at once. */
  text: string;
  /**
   * Builds `text` as the call is first given a connection (Http1Pool.requestComposed): calls that wait for one may
   * join the request until then (WaitingBatch).
   */
  compose: (() => string) | undefined;
  /**
   * Asked as the call leaves the line of calls waiting for a connection: whether anyone it carries still waits with at
   * least `minLeftMs` of their time left. A call answering no is failed unsent (QUEUED_PAST_DEADLINE), as one past its deadlineAt.
   */
  wanted: ((minLeftMs: number) => boolean) | undefined;
  /** May be sent again when its reused connection turns out to be closed. */
  readonly repeatable: boolean;
  /** Whom the call is for (an API key): flows take turns when calls wait for a connection. */
  readonly flow: string;
  /** Written to a connection at least once; a call cancelled before never reached the node. */
  sent = false;
  /** Called when the call is first given a connection (CallOptions.onSent). */
  onSent: (() => void) | undefined;
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
  /** Sent on a connection opened past the pool's cap for a liveness question (Http1Pool.request's spare). */
  spare = false;
  /** Times a new connection carrying it was refused by the node's front and it went back in line (Http1Pool.requeueRefused). */
  refusals = 0;

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

  /**
   * Ends the call now. A connection with the request on the wire cannot carry another until the reply has come
   * (it would go to the next call): with `finishWithinMs`, the connection reads the reply to its end and is used
   * again if that takes no longer and the pool has room for it (Http1Pool.mayFinishUnwanted); else it closes.
   */
  cancel(reason: Error, finishWithinMs = 0): void {
    if (this.settled) return;
    const connection = this.connection;
    this.fail(reason);
    if (connection === undefined) this.#pool.unqueue(this);
    else if (finishWithinMs > 0 && this.#pool.mayFinishUnwanted()) connection.finishUnwanted(finishWithinMs);
    else connection.destroy();
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
