/**
 * Calls that would wait for a connection to the node go to it together: the
 * calls of one flow (API key) waiting in line are sent as one JSON-RPC batch
 * on the next connection that frees, and each takes its answer from the
 * batch's by id. Found from outside (h105): a client's batch of 1,000 against
 * a node 50 ms away took 0.85-0.91 s as 1,000 calls over 64 connections,
 * against 0.06 s sent to the node directly as one batch.
 *
 * Only calls safe to send twice wait so: whatever the node does with a batch
 * (refuses it, caps it, leaves a call out), each call may still be sent alone,
 * and is. A call that finds a connection free is sent alone at once, as ever.
 */
import type { Logger } from "pino";
import { cancelled, noConnectionInTime, notSentCircuitOpened, upstreamBadResponse, upstreamTimeout } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { isRateLimitRefusal } from "../errors/rate-limit-refusal.js";
import { RawJsonError, skipValue, skipWhitespace } from "../jsonrpc/raw-json.js";
import { BODY_TOO_LARGE, CIRCUIT_OPENED_UNSENT, Http1Error, type Http1Call, type Http1Reply, OVER_REPLY_BUDGET, QUEUED_PAST_DEADLINE } from "./http1-call.js";
import type { Http1Pool } from "./http1-pool.js";
import { peekReplyId, readReply, replyError, requestBody, type UpstreamResult } from "./reply.js";
import type { CallOptions } from "./upstream.js";

/** What WaitingBatches needs of the upstream that owns it. */
export interface BatchHost {
  readonly pool: Http1Pool;
  /** Sends one call by itself within `timeoutMs`: a call of a batch the node refused, or one whose answer it left out. */
  alone(method: string, paramsText: string, options: CallOptions, timeoutMs: number): Promise<UpstreamResult>;
  /** The error a reply other than 200 makes for every call it answers (429, 5xx, 401); undefined when each call is to be sent alone instead. */
  nodeWideFailure(reply: Http1Reply, providerError: GatewayError | undefined): GatewayError | undefined;
  /** What a failed exchange tells one of its calls. */
  transportError(err: unknown, method: string, options: CallOptions): GatewayError;
}

/** Most calls in one batch unless the configuration says otherwise: ethers' own batches are at most 100 calls. */
export const DEFAULT_BATCH_SIZE = 100;
/**
 * Largest batch body built, in characters: a front's limit on request bodies is often 1 MiB (nginx's default), and a
 * batch refused for its size costs a round trip before its calls go alone.
 */
const MAX_BODY_CHARS = 512 * 1024;
/** A call whose params are larger than this is sent alone: it would leave little room in a batch. */
const MAX_PARAMS_CHARS = 64 * 1024;
/** The envelope around a call's method and params in the batch body, in characters at most. */
const ENVELOPE_CHARS = 48;
/**
 * How long an exchange whose callers all left may read its reply to the end, as a call alone does (HttpUpstream's
 * CALLER_LEFT_FINISH_MS): the connection is then used again.
 */
const CALLER_LEFT_FINISH_MS = 2000;

/** Why nodegate cancelled a batch's exchange (compared by identity, never shown). */
const ALL_LEFT = new Error("every call of the batch left");

/** geth's answer to a batch member past its batch's reply size (BatchResponseMaxSize): the call alone would be answered. */
const RESPONSE_TOO_LARGE = -32003;

class Member {
  /** The id it has in the batch's body (set when the body is built). */
  id = 0;
  settled = false;
  /** When its time is up (performance.now()). */
  readonly deadlineAt: number;
  readonly joinedAt: number;
  waitedMs = 0;
  timer: NodeJS.Timeout | undefined;
  onAbort: (() => void) | undefined;
  resolve!: (result: UpstreamResult) => void;
  reject!: (err: unknown) => void;
  readonly promise: Promise<UpstreamResult>;

  constructor(
    readonly method: string,
    readonly paramsText: string,
    readonly options: CallOptions,
  ) {
    this.joinedAt = performance.now();
    this.deadlineAt = this.joinedAt + options.timeoutMs;
    this.promise = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}

class Batch {
  readonly members: Member[] = [];
  /** Members that have not left. */
  live = 0;
  chars = 2;
  /** Its body was built and written: no one joins it now. */
  sent = false;
  /** Members in the body, by the id text they were sent with. */
  readonly byId = new Map<string, Member>();
  call!: Http1Call;
  /** How the last member to leave left: its exchange ends as a single call's would. */
  finishMs = 0;

  constructor(readonly flow: string) {}
}

export class WaitingBatches {
  readonly #host: BatchHost;
  readonly #log: Logger | undefined;
  readonly #label: string;
  /** Most calls in one batch; the node's refusals lower it, and below 2 no batch is made. */
  #limit: number;
  /** The batch of each flow that calls may still join. */
  readonly #open = new Map<string, Batch>();
  /** Members of batches not yet sent, and those batches: how many calls wait, told to a call that waited in vain. */
  #waitingMembers = 0;
  #waitingBatches = 0;

  constructor(host: BatchHost, limit: number, label: string, log?: Logger) {
    this.#host = host;
    this.#limit = limit;
    this.#label = label;
    this.#log = log;
  }

  /** Most calls one batch holds now (the node's refusals lower it). */
  get limit(): number {
    return this.#limit;
  }

  /** Whether a call is to wait in a batch: safe to send twice, not nodegate's liveness question, and no connection free. */
  takes(paramsText: string, options: CallOptions): boolean {
    return this.#limit >= 2 && options.idempotent === true && options.spare !== true && options.finishAtDeadlineMs === undefined && paramsText.length <= MAX_PARAMS_CHARS && this.#host.pool.full;
  }

  join(method: string, paramsText: string, options: CallOptions): Promise<UpstreamResult> {
    if (options.signal?.aborted) return Promise.reject(cancelled());
    const member = new Member(method, paramsText, options);
    const chars = method.length + paramsText.length + ENVELOPE_CHARS;
    const flow = options.flow ?? "";
    let batch = this.#open.get(flow);
    const fresh = batch === undefined || batch.members.length >= this.#limit || batch.chars + chars > MAX_BODY_CHARS;
    if (fresh) {
      batch = new Batch(flow);
      this.#open.set(flow, batch);
    }
    const joined = batch as Batch;
    joined.members.push(member);
    joined.live++;
    joined.chars += chars;
    this.#waitingMembers++;
    member.timer = setTimeout(() => this.#leave(joined, member, false), options.timeoutMs).unref();
    if (options.signal !== undefined) {
      member.onAbort = () => this.#leave(joined, member, true);
      options.signal.addEventListener("abort", member.onAbort, { once: true });
    }
    if (fresh) {
      this.#waitingBatches++;
      joined.call = this.#host.pool.requestComposed(() => this.#compose(joined), flow);
      joined.call.reply.then(
        (reply) => this.#answer(joined, reply),
        (err: unknown) => this.#failed(joined, err),
      );
    }
    // The pool fails a call still in line at its deadline: the batch's is its last member's.
    if (!joined.sent) joined.call.deadlineAt = fresh ? member.deadlineAt : Math.max(joined.call.deadlineAt, member.deadlineAt);
    return member.promise;
  }

  /** The batch's body, as a connection takes it: its members that have not left, each under an id of its own. */
  #compose(batch: Batch): string {
    this.#close(batch);
    const now = performance.now();
    const base = 1 + Math.floor(Math.random() * 0x3fffffff);
    let body = "[";
    let n = 0;
    for (const member of batch.members) {
      if (member.settled) continue;
      member.id = base + n;
      member.waitedMs = now - member.joinedAt;
      batch.byId.set(String(member.id), member);
      body += `${n === 0 ? "" : ","}${requestBody(member.id, member.method, member.paramsText)}`;
      n++;
      member.options.onSent?.();
    }
    return `${body}]`;
  }

  /** No one joins `batch` from now on (it is being sent, or failed unsent). */
  #close(batch: Batch): void {
    if (batch.sent) return;
    batch.sent = true;
    if (this.#open.get(batch.flow) === batch) this.#open.delete(batch.flow);
    this.#waitingBatches--;
    this.#waitingMembers -= batch.live;
  }

  /** A member's deadline came, or its caller left: it gets its error now, and the batch goes on without it. */
  #leave(batch: Batch, member: Member, callerLeft: boolean): void {
    if (member.settled) return;
    let err: GatewayError;
    if (callerLeft) err = cancelled();
    else if (!batch.sent) err = noConnectionInTime(member.options.timeoutMs, Math.max(1, this.#waitingMembers + this.#host.pool.waiting - this.#waitingBatches));
    else err = upstreamTimeout(member.options.timeoutMs, member.waitedMs > 0 ? member.waitedMs : undefined);
    this.#settle(member, undefined, err);
    batch.live--;
    if (!batch.sent) this.#waitingMembers--;
    if (batch.live > 0) return;
    // Nobody waits for the batch now: unsent, it leaves the line; sent, its connection reads the reply to its end when
    // its last caller left (so it is used again), and closes when the deadline came (the node is slow).
    batch.finishMs = callerLeft ? Math.min(CALLER_LEFT_FINISH_MS, member.deadlineAt - performance.now()) : 0;
    this.#close(batch);
    batch.call.cancel(ALL_LEFT, batch.finishMs);
  }

  #settle(member: Member, result: UpstreamResult | undefined, err?: unknown): void {
    if (member.settled) return;
    member.settled = true;
    clearTimeout(member.timer);
    if (member.onAbort !== undefined) member.options.signal?.removeEventListener("abort", member.onAbort);
    if (result !== undefined) member.resolve(result);
    else member.reject(err);
  }

  /** Members that have not left: each is to get an answer or an error from here on. */
  #waiting(batch: Batch): Member[] {
    const out: Member[] = [];
    for (const member of batch.members) if (!member.settled) out.push(member);
    return out;
  }

  #failed(batch: Batch, err: unknown): void {
    const sent = batch.call.sent;
    this.#close(batch);
    if (err === ALL_LEFT) return;
    const waiting = this.#waiting(batch);
    // The reply was larger than a reply may be: each call's alone may not be.
    if (err instanceof Http1Error && (err.code === OVER_REPLY_BUDGET || err.code === BODY_TOO_LARGE) && waiting.length > 1) {
      for (const member of waiting) this.#sendAlone(member);
      return;
    }
    for (const member of waiting) {
      let error: GatewayError;
      if (err instanceof Http1Error && err.code === QUEUED_PAST_DEADLINE && !sent) error = noConnectionInTime(member.options.timeoutMs, Math.max(1, this.#host.pool.waiting));
      else if (err instanceof Http1Error && err.code === CIRCUIT_OPENED_UNSENT && !sent) error = notSentCircuitOpened(member.method);
      else error = this.#host.transportError(err, member.method, member.options);
      this.#settle(member, undefined, error);
    }
  }

  #answer(batch: Batch, reply: Http1Reply): void {
    const body = reply.chunks.length === 1 ? (reply.chunks[0] as Buffer) : Buffer.concat(reply.chunks, reply.length);
    const start = skipWhitespace(body, 0);
    const providerError = body[start] === 0x7b ? replyError(body) : undefined;
    if (reply.statusCode !== 200) {
      const failure = this.#host.nodeWideFailure(reply, providerError);
      if (failure !== undefined) this.#failAll(batch, failure);
      else this.#refused(batch, `HTTP ${reply.statusCode}${providerError === undefined ? "" : `: ${providerError.message}`}`);
      return;
    }
    if (body[start] === 0x5b) {
      this.#split(batch, reply, body, start);
      return;
    }
    // One answer to the whole batch: a rate limit speaks for every call in it; anything else refuses the batch (geth's
    // "batch too large" past its BatchRequestLimit, a node that takes no batches and answers an error, or anything).
    if (providerError !== undefined && isRateLimitRefusal(providerError, "")) {
      this.#failAll(batch, providerError);
      return;
    }
    if (body[start] !== 0x7b) reply.notReused();
    this.#refused(batch, providerError?.message ?? `an answer that is no array: ${JSON.stringify(body.toString("utf8", start, start + 80))}`);
  }

  /** Each call takes its answer from the array by id; a call left out, or refused for the batch's size, goes alone. */
  #split(batch: Batch, reply: Http1Reply, body: Buffer, start: number): void {
    const verify = !reply.framed;
    const answers: [Member, Buffer][] = [];
    let strays = 0;
    try {
      let at = skipWhitespace(body, start + 1);
      if (body[at] === 0x5d) at = skipWhitespace(body, at + 1);
      else {
        for (;;) {
          const end = skipValue(body, at);
          const element = body.subarray(at, end);
          const member = batch.byId.get(peekReplyId(element) ?? "");
          if (member === undefined) strays++;
          else answers.push([member, element]);
          at = skipWhitespace(body, end);
          if (body[at] === 0x2c) at = skipWhitespace(body, at + 1);
          else if (body[at] === 0x5d) {
            at = skipWhitespace(body, at + 1);
            break;
          } else throw new RawJsonError("expected ',' or ']' in the batch's answer");
        }
      }
      if (at !== body.length) throw new RawJsonError("text after the batch's answer");
    } catch (err) {
      reply.notReused();
      this.#failAll(batch, upstreamBadResponse(err instanceof RawJsonError ? `the answer to a batch: ${err.message}` : "an unreadable answer to a batch", err));
      return;
    }
    // Not one answer of this batch's, and some of other ids: the node is out of step on this connection.
    if (answers.length === 0 && strays > 0) reply.outOfStep();
    for (const [member, element] of answers) {
      if (member.settled) continue;
      try {
        this.#settle(member, readReply(element, member.id, { verify }));
      } catch (err) {
        if (err instanceof GatewayError && err.origin === "upstream" && err.code === RESPONSE_TOO_LARGE && /response too large/i.test(err.message)) this.#sendAlone(member);
        else this.#settle(member, undefined, err);
      }
    }
    // A call the node left out (a node capping its batches so, an error under id null) is asked alone: its own answer decides.
    for (const member of this.#waiting(batch)) this.#sendAlone(member);
  }

  #failAll(batch: Batch, err: GatewayError): void {
    for (const member of this.#waiting(batch)) this.#settle(member, undefined, err);
  }

  /**
   * The node refused the batch as a whole: its calls go alone, and later batches hold at most half as many calls
   * (none below 2), so a node capping its batches soon gets ones it takes, and one taking none gets calls alone.
   */
  #refused(batch: Batch, said: string): void {
    const size = batch.byId.size;
    const limit = Math.floor(size / 2);
    if (limit < this.#limit) {
      this.#limit = limit;
      this.#log?.warn(
        { upstream: this.#label, batchSize: size },
        limit >= 2
          ? `the node refused a batch of ${size} calls (${said.slice(0, 200)}); calls waiting for a connection now go in batches of at most ${limit}`
          : `the node refused a batch of ${size} calls (${said.slice(0, 200)}); calls waiting for a connection now go one by one`,
      );
    }
    for (const member of this.#waiting(batch)) this.#sendAlone(member);
  }

  #sendAlone(member: Member): void {
    const left = member.deadlineAt - performance.now();
    if (left < 1) {
      this.#settle(member, undefined, upstreamTimeout(member.options.timeoutMs, member.waitedMs > 0 ? member.waitedMs : undefined));
      return;
    }
    this.#host.alone(member.method, member.paramsText, member.options, Math.round(left)).then(
      (result) => this.#settle(member, result),
      (err: unknown) => this.#settle(member, undefined, err),
    );
  }
}
