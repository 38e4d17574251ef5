/**
 * JSON-RPC over HTTP(S) through a keep-alive pool (Http1Pool): one POST per
 * call, a per-request deadline, and cancellation when the caller goes away.
 * The reply is collected without an extra copy when it arrives in one chunk,
 * and a deadline or the caller's abort cancels the request directly (no
 * AbortSignal per call).
 */
import { networkErrorWords } from "./network-errors.js";
import type { ConnectionOptions } from "node:tls";
import type { Logger } from "pino";
import { Code } from "@connectrpc/connect";
import { cancelled, keptAliveClosedWhileResting, keptAliveConnectionClosed, noConnectionInTime, notSentCircuitOpened, capacityExceeded, spareRefused, replyTooLarge, requestTooLargeForNode, shuttingDown, upstreamBadResponse, upstreamRateLimited, upstreamTimeout, upstreamUnavailable } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { askedPauseSeconds, retryAfterSeconds } from "./retry-after.js";
import { ANOTHER_REQUESTS_REPLY, sentWithIdNull, readChunkedReply, readReply, requestBody, type UpstreamResult } from "./reply.js";
import { BODY_TOO_LARGE, CIRCUIT_OPENED_UNSENT, Http1Error, type Http1Reply, KEPT_ALIVE_CLOSED, KEPT_ALIVE_CLOSED_RESTING, LARGE_REQUEST_UNANSWERED, NODE_CLOSED, OVER_REPLY_BUDGET, QUEUED_PAST_DEADLINE } from "./http1-call.js";
import { Http1Pool } from "./http1-pool.js";
import type { ReplyBudget } from "./reply-budget.js";
import type { CallOptions, Upstream } from "./upstream.js";
import { DEFAULT_BATCH_SIZE, WaitingBatches } from "./waiting-batch.js";

export interface HttpUpstreamOptions {
  /** The node's URL, for example https://mainnet.example/v3/<KEY>. */
  url: string;
  /** Safe-to-log name. */
  label: string;
  /** Sockets kept open to the node. Default 64. */
  connections?: number;
  /** Extra TLS options for an https node (a private CA, say). */
  tls?: ConnectionOptions;
  /** What replies being read may hold at once, shared by the process's upstreams. */
  budget?: ReplyBudget;
  /** Most calls sent as one batch when calls wait for a connection (WaitingBatches); below 2, none are. Default 100. */
  batchSize?: number;
  /** Where a node's refusal of batches is told. */
  log?: Logger;
}

/**
 * A provider's JSON-RPC error that came with a non-200 status, passed on as
 * the provider sent it (code, message, data), with its HTTP status, and read
 * by that status for typed callers rather than by its code:
 * - 429, its own rate limit (-32005, or Alchemy's code 429, which the code
 *   table does not know): RESOURCE_EXHAUSTED, with its Retry-After (whole
 *   seconds), so callers back off as they would from the provider;
 * - 403, a refusal of this request under nodegate's key (Infura's -32002
 *   "rejected due to project ID settings"): PERMISSION_DENIED, which a retry
 *   will not change (by its code alone, -32002 would be UNAVAILABLE, which
 *   typed clients retry). Not an outage: another request may pass.
 */
function asProviderAnswer(err: GatewayError, status: 429 | 403, retryAfter?: string): GatewayError {
  const seconds = retryAfterSeconds(retryAfter);
  return new GatewayError({
    code: err.code,
    message: err.message,
    ...(err.data === undefined ? {} : { data: err.data }),
    grpcCode: status === 429 ? Code.ResourceExhausted : Code.PermissionDenied,
    httpStatus: status,
    ...(seconds === undefined ? {} : { retryAfterSeconds: seconds }),
    origin: "upstream",
  });
}

/** The provider refused nodegate's own key: every call would fail alike, so it counts as an outage and partners answer. */
function refusedCredentials(statusCode: number, providerError?: GatewayError): GatewayError {
  return upstreamBadResponse(`HTTP ${statusCode}: the provider refused nodegate's credentials (check the key in the upstream URL)${providerSaid(providerError)}`, providerError);
}

/** The provider's own words for a failure it answered with a JSON-RPC error, quoted after nodegate's (at most 200 characters). */
function providerSaid(providerError: GatewayError | undefined): string {
  return providerError === undefined ? "" : `; the provider said: ${JSON.stringify(providerError.message.slice(0, 200))}`;
}

/** Statuses a node's front answers a request too large for it with: body (413), URI (414), headers (431). */
const REQUEST_TOO_LARGE_STATUSES = new Set([413, 414, 431]);

/** Why nodegate cancelled a call (compared by identity, never shown). */
const DEADLINE = new Error("deadline");
const CALLER_LEFT = new Error("caller left");
/**
 * How long a connection whose caller left may go on reading the reply (when small) to be used again: a node
 * answers most calls well within this, and a new connection to a remote node costs a TCP and a TLS handshake.
 * (A caller's own deadline, grpc-timeout or connect-timeout-ms, ends the call through its signal too.) A call
 * cut by nodegate's own limit for the node closes its connection at once: that node is slow.
 */
const CALLER_LEFT_FINISH_MS = 2000;

/**
 * What a call's caller leaving does to its exchange. Made here rather than as a named arrow function in the call:
 * tsx (esbuild's keepNames) names each such function with Object.defineProperty as it is made, once per call.
 */
function callerLeft(exchange: { cancel(reason: Error, finishMs: number): void }, timeoutMs: number, startedAt: number): () => void {
  return () => exchange.cancel(CALLER_LEFT, Math.min(CALLER_LEFT_FINISH_MS, timeoutMs - (performance.now() - startedAt)));
}

/** Replies at least this large stay in the pieces the pool read them into (see ChunkedResult): a chunked one, or one past 16 MiB. */
const KEEP_CHUNKS_FROM = 16 * 1024;

/**
 * The error of a 200 reply that is no JSON-RPC reply, saying so when the node compressed it: nodegate asks for no
 * content-encoding, and a gzip body reads as "not a JSON object".
 */
function withEncodingHint(err: unknown, reply: Http1Reply): unknown {
  const encoding = reply.headers["content-encoding"];
  if (encoding === undefined || /^\s*identity\s*$/i.test(encoding)) return err;
  return upstreamBadResponse(`the node sent its reply with content-encoding "${encoding.slice(0, 40)}", which nodegate does not ask for or read`, err);
}

/** A reply that was another request's (its id): the error it makes, if the call is not asked again. */
class OutOfStep {
  constructor(readonly error: unknown) {}
}

const SPARE_REFUSED = "the node's front refused a connection past nodegate's connections to it";

export class HttpUpstream implements Upstream {
  readonly label: string;
  readonly #pool: Http1Pool;
  readonly #batches: WaitingBatches | undefined;
  #closed = false;

  constructor(options: HttpUpstreamOptions) {
    const url = new URL(options.url);
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new Error(`upstream ${options.label}: want an http(s) URL`);
    }
    this.label = options.label;
    // Identity said outright: with no accept-encoding a server may use any coding (RFC 9110, 12.5.3), and nodegate reads none.
    const headers: Record<string, string> = { "content-type": "application/json", "accept-encoding": "identity", "user-agent": "nodegate" };
    if (url.username || url.password) {
      const user = decodeURIComponent(url.username);
      const secret = decodeURIComponent(url.password);
      headers.authorization = `Basic ${Buffer.from(`${user}:${secret}`).toString("base64")}`;
    }
    this.#pool = new Http1Pool({
      url,
      connections: options.connections ?? 64,
      headers,
      keepAliveMs: 30_000,
      ...(options.tls === undefined ? {} : { tls: options.tls }),
      ...(options.budget === undefined ? {} : { budget: options.budget }),
    });
    const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
    const pool = this.#pool;
    this.#batches =
      batchSize < 2
        ? undefined
        : new WaitingBatches(
            {
              pool,
              connections: options.connections ?? 64,
              alone: (method, paramsText, callOptions, timeoutMs) => this.#alone(method, paramsText, callOptions, timeoutMs),
              readAlone: (reply, id, method) => {
                try {
                  return this.#answerOf(reply, id, method, true);
                } catch (err) {
                  if (err instanceof OutOfStep) return undefined;
                  throw err;
                }
              },
              nodeWideFailure: (reply, providerError) => (reply.statusCode === 429 || reply.statusCode >= 500 || reply.statusCode === 401 ? this.#statusFailure(reply, providerError) : undefined),
              transportError: (err, method, callOptions) => this.#transportError(err, method, callOptions),
              isClosed: () => this.#closed,
            },
            batchSize,
            options.label,
            options.log,
          );
  }

  /** The batch sizes the node's refusals set for flows now (1: calls alone), by flow. */
  get loweredBatchSizes(): Record<string, number> {
    return this.#batches?.lowered ?? {};
  }

  get lastHeardAt(): number | undefined {
    return this.#pool.lastReplyAt;
  }

  /** Calls waiting for one of the pool's connections. */
  get waiting(): number {
    return this.#pool.waiting;
  }

  call(method: string, paramsText: string, options: CallOptions): Promise<UpstreamResult> {
    if (this.#batches?.takes(paramsText, options)) return this.#batches.join(method, paramsText, options);
    return this.#alone(method, paramsText, options, options.timeoutMs);
  }

  /** The call in a request of its own, within `timeoutMs`. */
  async #alone(method: string, paramsText: string, options: CallOptions, timeoutMs: number): Promise<UpstreamResult> {
    const startedAt = performance.now();
    try {
      return await this.#attempt(method, paramsText, options, timeoutMs);
    } catch (err) {
      if (!(err instanceof OutOfStep)) throw err;
      // The reply read was not this request's (its connection is closed now): an idempotent call is asked once
      // more, on another connection, within the time it has left; the node's stray reply is nobody's answer.
      const left = timeoutMs - (performance.now() - startedAt);
      if (!options.idempotent || left <= 0) throw err.error;
      try {
        return await this.#attempt(method, paramsText, options, left);
      } catch (again) {
        throw again instanceof OutOfStep ? again.error : again;
      }
    }
  }

  /** One request for the call and its reply; throws OutOfStep when the reply read was not this request's. */
  async #attempt(method: string, paramsText: string, options: CallOptions, timeoutMs: number): Promise<UpstreamResult> {
    // Not a sequence: a stray reply on a connection (a node writing one answer twice) cannot carry the id of the
    // request sent next on it, so it is seen as out of step rather than taken for that request's answer.
    const id = 1 + Math.floor(Math.random() * 0x3fffffff);
    if (options.signal?.aborted) throw cancelled();
    const exchange = this.#pool.request(requestBody(id, method, paramsText), options.idempotent === true, options.flow, options.spare === true);
    // Calls waiting when this one joined them, itself included: at its deadline, those of the same deadline have left.
    let waiting = 0;
    // Also for a call sent at once: the pool may put it back in line (a new connection the node's front refused).
    exchange.deadlineAt = performance.now() + timeoutMs;
    if (!exchange.sent) {
      waiting = this.#pool.waiting;
      exchange.onSent = options.onSent;
    } else {
      options.onSent?.();
    }
    // Not AbortSignal.any: on Node 20 it leaves an entry on the caller's signal per call, and a native
    // WebSocket connection's signal lives as long as the connection (one entry per call it makes).
    const startedAt = performance.now();
    const deadline = setTimeout(() => exchange.cancel(DEADLINE, options.finishAtDeadlineMs ?? 0), timeoutMs).unref();
    const onAbort = callerLeft(exchange, timeoutMs, startedAt);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    let reply;
    try {
      reply = await exchange.reply;
    } catch (err) {
      // A call that waited for a connection (all busy) is not the node's silence: no outage. Never sent, it is -32005.
      if ((err === DEADLINE || (err instanceof Http1Error && err.code === QUEUED_PAST_DEADLINE)) && !exchange.sent) {
        throw noConnectionInTime(options.timeoutMs, Math.max(waiting, this.#pool.waiting + 1));
      }
      if (err === DEADLINE && exchange.waitedMs > 0) throw upstreamTimeout(options.timeoutMs, exchange.waitedMs);
      if (err instanceof Http1Error && err.code === CIRCUIT_OPENED_UNSENT && !exchange.sent) throw notSentCircuitOpened(method);
      // A connection past the cap refused (a front that caps connections per client): says nothing of the node.
      if (exchange.spare && err !== DEADLINE && err !== CALLER_LEFT && networkErrorWords(err) !== undefined) throw spareRefused(SPARE_REFUSED);
      throw this.#transportError(err, method, options);
    } finally {
      clearTimeout(deadline);
      options.signal?.removeEventListener("abort", onAbort);
    }
    const { statusCode } = reply;
    if (exchange.spare && (statusCode === 429 || statusCode === 503)) throw spareRefused(`${SPARE_REFUSED} (HTTP ${statusCode})`);
    return this.#answerOf(reply, id, method, options.idempotent === true);
  }

  /**
   * `reply` read as the answer to the call sent alone with `id`: its result, or its error thrown; OutOfStep when the
   * reply may not be its answer and an idempotent call is to be asked once more.
   */
  #answerOf(reply: Http1Reply, id: number, method: string, idempotent: boolean): UpstreamResult {
    const { statusCode } = reply;
    try {
      return this.#read(reply, id);
    } catch (err) {
      if (err instanceof GatewayError && err.origin === "upstream") {
        if (statusCode === 200) {
          // With id null, nothing says which request an error answers: right after another id-null error on the same
          // connection, it may be a stray copy of that one (a node writing a reply twice), and this request's own
          // answer comes next (found from outside: a call got the previous call's id-null error, and its own answer was
          // lost). The connection is not used again, and an idempotent call is asked once more: its own error, if it
          // is one, comes again. (Any id-null error after any reply would re-ask every call a node cannot parse.)
          if (sentWithIdNull(err) && !reply.followsIdNullError) reply.markIdNullError();
          else if (sentWithIdNull(err)) {
            // Marked too: a third copy, after this one, is as suspect (found from outside, h110: a node writing each
            // batch refusal twice handed a call alone the copy after the copy a call before it had been asked again for).
            reply.markIdNullError();
            reply.notReused();
            if (idempotent) throw new OutOfStep(err);
            // Not to be asked again: the node's error goes on, saying it may not be this call's.
            throw new GatewayError({
              code: err.code,
              message: `${err.message} (this error came with id null right after another on the same connection: it may be that one again, and whether ${method} took effect is unknown)`,
              ...(err.data === undefined ? {} : { data: err.data }),
              grpcCode: err.grpcCode,
              httpStatus: err.httpStatus,
              origin: "upstream",
            });
          }
          throw err;
        }
        throw this.#statusFailure(reply, err);
      }
      // Another request's id: the node is out of step on this connection, and would hand each later call the one
      // before's reply. A 200 that is no reply at all: the node is confused, and its connection is not used again.
      // A status page (a front's 503 or 429 in HTML) is framed and in step: its connection stays (found from outside:
      // closing it failed the queued call already sent on it, an eth_sendRawTransaction the node had taken).
      const stray = err instanceof GatewayError && err.cause === ANOTHER_REQUESTS_REPLY;
      if (stray) reply.outOfStep();
      else if (statusCode === 200) reply.notReused();
      if (statusCode === 200) throw stray ? new OutOfStep(err) : withEncodingHint(err, reply);
    }
    throw this.#statusFailure(reply, undefined);
  }

  /** The error a reply with a status other than 200 makes; `providerError`: the JSON-RPC error its body held, if any. */
  #statusFailure(reply: Http1Reply, providerError: GatewayError | undefined): GatewayError {
    const { statusCode } = reply;
    // Header lines become an object only here, on the rare failed reply.
    if (providerError !== undefined) {
      // Some providers answer errors (rate limits) with a JSON-RPC body and a non-200 status.
      if (statusCode === 429) return asProviderAnswer(providerError, 429, reply.headers["retry-after"]);
      // A provider's front (Alchemy, a load balancer) words its own failures as JSON-RPC errors too: a 5xx is still
      // an outage, and a 401 still a refused key, whatever the body says; passed on as the node's answer, they
      // misled callers and kept the circuit closed and partners unasked.
      if (statusCode >= 500) return upstreamUnavailable(`HTTP ${statusCode}${providerSaid(providerError)}`, providerError, statusCode === 503 ? askedPauseSeconds(reply.headers["retry-after"]) : undefined);
      if (statusCode === 401) return refusedCredentials(statusCode, providerError);
      if (statusCode === 403) return asProviderAnswer(providerError, 403);
      return providerError;
    }
    // The provider's back-off hint (429, or 503 with Retry-After: maintenance) goes on to callers, and pauses the
    // circuit that long: nodegate cannot answer sooner either.
    if (statusCode === 429) return upstreamRateLimited(askedPauseSeconds(reply.headers["retry-after"]));
    if (statusCode >= 500) return upstreamUnavailable(`HTTP ${statusCode}`, undefined, statusCode === 503 ? askedPauseSeconds(reply.headers["retry-after"]) : undefined);
    if (statusCode === 401 || statusCode === 403) return refusedCredentials(statusCode);
    // The node's front refused this request for its size (nginx answers 413 past 1 MiB): the caller's, not an outage.
    if (REQUEST_TOO_LARGE_STATUSES.has(statusCode)) return requestTooLargeForNode(`HTTP ${statusCode}`);
    return upstreamBadResponse(`HTTP ${statusCode}`);
  }

  /** The reply's body read as the answer to request `id`. */
  #read(reply: Http1Reply, id: number): UpstreamResult {
    const { statusCode, chunks, framed } = reply;
    // A body framed by content-length or chunked encoding arrives whole or fails; a body that
    // simply ends when the connection closes has no such check, so it is read whole and verified.
    if (statusCode === 200 && framed && chunks.length > 1 && reply.length >= KEEP_CHUNKS_FROM) return readChunkedReply(chunks, id);
    const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, reply.length);
    return readReply(body, id, { verify: !framed });
  }

  #transportError(err: unknown, method: string, options: CallOptions): GatewayError {
    if (err === CALLER_LEFT || options.signal?.aborted) return cancelled();
    if (err === DEADLINE) return upstreamTimeout(options.timeoutMs);
    // Closed when nodegate stops: what still waits for the node is told so (at the drain deadline, calls get an answer).
    if (this.#closed) return shuttingDown();
    if (err instanceof Http1Error && err.code === OVER_REPLY_BUDGET) return capacityExceeded(err.message);
    if (err instanceof Http1Error && err.code === LARGE_REQUEST_UNANSWERED) return requestTooLargeForNode(err.message);
    if (err instanceof Http1Error && err.code === KEPT_ALIVE_CLOSED) return keptAliveConnectionClosed(method);
    if (err instanceof Http1Error && err.code === KEPT_ALIVE_CLOSED_RESTING) return keptAliveClosedWhileResting(method);
    if (err instanceof Http1Error && err.code === BODY_TOO_LARGE) return replyTooLarge(err.message);
    if (err instanceof Http1Error && err.code === NODE_CLOSED) return upstreamUnavailable(err.message, err);
    const words = networkErrorWords(err);
    if (words !== undefined) return upstreamUnavailable(words, err);
    if (err instanceof Http1Error) return upstreamBadResponse(`invalid HTTP reply: ${err.message}`, err);
    return upstreamUnavailable("request failed", err);
  }

  dropUnsent(): void {
    this.#pool.failQueued();
  }

  restsWhile(resting: () => boolean): void {
    this.#pool.resting = resting;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#pool.close();
  }
}
