/**
 * Calls that would wait for a connection to the node go to it together: the
 * calls of one flow (API key) waiting in line are shared out over requests in
 * the pool's line, one per connection at most, each sent as a JSON-RPC batch
 * of its share when a connection frees for it; each call takes its answer
 * from its batch's by id. Found from outside (h105): a client's batch of
 * 1,000 against a node 50 ms away took 0.85-0.91 s as 1,000 calls over 64
 * connections, against 0.06 s sent to the node directly as one batch.
 *
 * Only calls safe to send twice wait so: whatever the node does with a batch
 * (refuses it, caps it, loses it, leaves a call out), each call may still be
 * sent again, in halves of a refused batch or alone, and is. What the node's
 * refusals teach (it caps batches, or takes none) lowers the batches for a
 * while. A call that finds a connection free is sent alone at once, as ever,
 * unless it comes in a burst: past ALONE_PER_TURN calls sent alone in one
 * turn of the event loop, the turn's further calls are gathered and shared out
 * over the connections free at its end.
 */
import type { Logger } from "pino";
import { cancelled, noConnectionInTime, notSentCircuitOpened, upstreamBadResponse, upstreamTimeout } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { isRateLimitRefusal } from "../errors/rate-limit-refusal.js";
import { RawJsonError, skipWhitespace } from "../jsonrpc/raw-json.js";
import { type BatchAnswer, readBatchAnswer } from "./batch-answer.js";
import { BODY_TOO_LARGE, CIRCUIT_OPENED_UNSENT, Http1Error, type Http1Call, type Http1Reply, OVER_REPLY_BUDGET, QUEUED_PAST_DEADLINE } from "./http1-call.js";
import { type Http1Pool, MIN_TIME_LEFT_MS } from "./http1-pool.js";
import { peekReplyId, readReply, replyError, requestBody, type UpstreamResult } from "./reply.js";
import type { CallOptions } from "./upstream.js";

/** What WaitingBatches needs of the upstream that owns it. */
export interface BatchHost {
  readonly pool: Http1Pool;
  /** The pool's connections: waiting calls are spread over as many requests. */
  readonly connections: number;
  /** Sends one call by itself within `timeoutMs`: a call of a batch the node refused, or one whose answer it left out. */
  alone(method: string, paramsText: string, options: CallOptions, timeoutMs: number): Promise<UpstreamResult>;
  /**
   * A reply read as the answer to the call sent as itself with `id`, as a call alone's reply is read: its result, or its
   * error thrown; undefined when it may not be that call's answer (another request's id, a repeated id-null error).
   */
  readAlone(reply: Http1Reply, id: number, method: string): UpstreamResult | undefined;
  /** The error a reply other than 200 makes for every call it answers (429, 5xx, 401); undefined when each call is to be sent alone instead. */
  nodeWideFailure(reply: Http1Reply, providerError: GatewayError | undefined): GatewayError | undefined;
  /** What a failed exchange tells one of its calls. */
  transportError(err: unknown, method: string, options: CallOptions): GatewayError;
  /** Whether the upstream was closed (nodegate stops): a lost batch's calls are not sent again then. */
  isClosed(): boolean;
}

/**
 * Calls sent alone at once in one turn of the event loop, after which that turn's further calls (a client's batch, many
 * callers at once) are gathered and shared out when it ends (WaitingBatches.#shareOut): sent alone as they came, a
 * burst past the free connections took two round trips to the node, those past the connections waiting for the first
 * (measured: a client's batch of 100 against a node 50 ms away, 118-134 ms, and 67-82 ms gathered, against 53-58 ms direct). A few go at once, so a
 * call that comes alone, or with a few others, is never held for the turn's end.
 */
const ALONE_PER_TURN = 16;

/** Most calls in one batch unless the configuration says otherwise: ethers' own batches are at most 100 calls. */
export const DEFAULT_BATCH_SIZE = 100;
/**
 * Largest batch body built, in characters: a front's limit on request bodies is often 1 MiB (nginx's default), and a
 * batch refused for its size costs a round trip before its calls go alone.
 */
const MAX_BODY_CHARS = 512 * 1024;
/** A call whose params are larger than this is sent alone: it would leave little room in a batch. */
const MAX_PARAMS_CHARS = 64 * 1024;
/**
 * How long an exchange whose callers all left may read its reply to the end, as a call alone does (HttpUpstream's
 * CALLER_LEFT_FINISH_MS): the connection is then used again.
 */
const CALLER_LEFT_FINISH_MS = 2000;

/** Why nodegate cancelled a batch's exchange (compared by identity, never shown). */
const ALL_LEFT = new Error("every call of the batch left");

/**
 * How long a node's refusals keep batches smaller (or off) before the configured size is tried again: a node's front
 * may have been changed meanwhile, or had a bad minute.
 */
const LOWERED_FOR_MS = 10 * 60_000;
/**
 * A refusal is taken as the node's cap on batches (or its not taking any) only when it took no batch as large within
 * this long: a node that took one refuses a batch for something else (a call it cannot read, a bad moment). Found from
 * outside (h108): a caller's call that Anvil refuses in an array but answers alone turned batching off for every key.
 */
const ACCEPTED_MEMORY_MS = 60_000;

/** geth's answer to a batch member past its batch's reply size (BatchResponseMaxSize): the call alone would be answered. */
const RESPONSE_TOO_LARGE = -32003;

/** A reply object's id as its text (undefined when it has none, or cannot be read). */
function idOf(body: Buffer): string | undefined {
  try {
    return peekReplyId(body);
  } catch {
    return undefined;
  }
}

/** A JSON-RPC id for a call in a batch, none of `taken`: random, so a node answering with shifted ids answers none. */
function freshId(taken: ReadonlySet<number>): number {
  for (;;) {
    const id = 1 + Math.floor(Math.random() * 0x3fffffff);
    if (!taken.has(id)) return id;
  }
}

class Member {
  /** The id it has in its batch's body (set when the body is built). */
  id = 0;
  settled = false;
  /** Sent by itself (WaitingBatches.#sendAlone): that call's own deadline and its caller's leaving end it. */
  alone = false;
  /** The batch it went in; undefined while it waits in its flow's line. */
  batch: Batch | undefined;
  /** When its time is up (performance.now()). */
  readonly deadlineAt: number;
  readonly joinedAt: number;
  waitedMs = 0;
  timer: NodeJS.Timeout | undefined;
  onAbort: (() => void) | undefined;
  resolve!: (result: UpstreamResult | Promise<UpstreamResult>) => void;
  reject!: (err: unknown) => void;
  readonly promise: Promise<UpstreamResult>;

  constructor(
    readonly line: Line,
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

/**
 * One flow's calls waiting for a connection, oldest first, and its requests in the pool's line that will carry them
 * (each takes its share of the calls waiting when a connection is given to it).
 */
class Line {
  readonly members: Member[] = [];
  /** Where the oldest member still to be taken is in `members`. */
  head = 0;
  /** Members waiting: not left, not yet in a batch. */
  live = 0;
  /** Its requests in the pool's line, not yet given a connection, oldest first. */
  readonly tickets: Http1Call[] = [];
  /** The latest deadline of the calls that joined it: the pool fails its requests still in line then (unsent). */
  deadlineAt = 0;
  /** Gathering the calls of this turn of the event loop: no request is put in line for them before it ends. */
  gathering = false;
  /** Requests still to be made for the calls gathered, given a connection at once (set while #shareOut makes them). */
  spread = 0;

  constructor(readonly flow: string) {}
}

/** The calls one request carried, by the id text each was sent with. */
class Batch {
  readonly byId = new Map<string, Member>();
  /** For a half of a refused batch (WaitingBatches.#refused): told whether the node took it (answered with an array). */
  verdict: ((accepted: boolean) => void) | undefined;
  /** Members that have not left. */
  live: number;
  /** Its one call sent as itself, not in an array (#compose): a provider counts an array of one as two requests. */
  plain = false;
  /** The request that carries it (set once the pool has handed it over: it may give it a connection at once). */
  call!: Http1Call;

  constructor(readonly members: Member[]) {
    this.live = members.length;
  }
}

export class WaitingBatches {
  readonly #host: BatchHost;
  readonly #log: Logger | undefined;
  readonly #label: string;
  /** Most calls in one batch, unless the node's refusals lowered it for a flow (below 2, none are made for it). */
  readonly #configured: number;
  /** What the node's refusals taught of one flow's batches: at most `limit` calls, until `until` (performance.now()). */
  readonly #lowered = new Map<string, { limit: number; until: number }>();
  /** The largest batch the node took lately, and when (see ACCEPTED_MEMORY_MS). */
  #acceptedSize = 0;
  #acceptedAt = Number.NEGATIVE_INFINITY;
  readonly #lines = new Map<string, Line>();
  /** Calls waiting in every flow's line, and the requests in the pool's line for them: how many calls wait, told to a call that waited in vain. */
  #waiting = 0;
  #tickets = 0;
  /** Calls sent alone at once in this turn of the event loop (see ALONE_PER_TURN). */
  #aloneThisTurn = 0;
  /** Lines gathering this turn's calls. */
  readonly #gathering: Line[] = [];

  constructor(host: BatchHost, limit: number, label: string, log?: Logger) {
    this.#host = host;
    this.#configured = limit;
    this.#label = label;
    this.#log = log;
  }

  /** The batch sizes the node's refusals set for flows now (1: calls alone), by flow. */
  get lowered(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const flow of this.#lowered.keys()) out[flow] = this.#limitFor(flow);
    return out;
  }

  /** Most calls one batch of `flow` holds now. */
  #limitFor(flow: string): number {
    const lowered = this.#lowered.get(flow);
    if (lowered === undefined) return this.#configured;
    if (performance.now() < lowered.until) return lowered.limit;
    this.#lowered.delete(flow);
    return this.#configured;
  }

  /**
   * Whether a call is to wait in a batch: safe to send twice, not nodegate's liveness question, and no connection free,
   * or more calls than ALONE_PER_TURN came before it in this turn of the event loop (it is gathered until the turn ends).
   */
  takes(paramsText: string, options: CallOptions): boolean {
    if (options.idempotent !== true || options.spare === true || options.finishAtDeadlineMs !== undefined || paramsText.length > MAX_PARAMS_CHARS) return false;
    if (!this.#host.pool.full) {
      if (this.#aloneThisTurn === 0) setImmediate(this.#endTurn);
      if (++this.#aloneThisTurn <= ALONE_PER_TURN) return false;
    }
    return this.#limitFor(options.flow ?? "") >= 2;
  }

  /** Ends `member`'s wait at its deadline or when its caller leaves. */
  #watch(member: Member): void {
    if (member.timer !== undefined) return;
    member.timer = setTimeout(() => this.#leave(member, false), member.deadlineAt - performance.now()).unref();
    const signal = member.options.signal;
    if (signal !== undefined) {
      member.onAbort = () => this.#leave(member, true);
      signal.addEventListener("abort", member.onAbort, { once: true });
    }
  }

  /** The turn of the event loop ended: the calls gathered in it go out. */
  readonly #endTurn = (): void => {
    this.#aloneThisTurn = 0;
    for (const line of this.#gathering.splice(0)) this.#shareOut(line);
  };

  /**
   * The calls `line` gathered in a turn of the event loop: each goes alone when as many connections are free; else they
   * are shared out over the connections free, at least two calls to a request (geth answers a batch's calls one after
   * another: spread so, they are answered side by side), and what the free connections cannot carry waits in line.
   */
  #shareOut(line: Line): void {
    line.gathering = false;
    // Its calls went alone meanwhile (#noBatches), or all left.
    if (this.#lines.get(line.flow) !== line) return;
    const free = this.#host.pool.free;
    if (line.live > free) {
      for (let i = line.head; i < line.members.length; i++) {
        const member = line.members[i] as Member;
        if (member.settled) continue;
        if (member.options.signal?.aborted) {
          this.#settle(member, undefined, cancelled());
          line.live--;
          this.#waiting--;
        } else this.#watch(member);
      }
      line.spread = Math.min(free, Math.floor(line.live / 2));
      this.#tidy(line);
      line.spread = 0;
      return;
    }
    const now = performance.now();
    for (let i = line.head; i < line.members.length; i++) {
      const member = line.members[i] as Member;
      if (member.settled) continue;
      line.live--;
      this.#waiting--;
      if (member.options.signal?.aborted) this.#settle(member, undefined, cancelled());
      else this.#settle(member, this.#host.alone(member.method, member.paramsText, member.options, Math.max(1, Math.round(member.deadlineAt - now))));
    }
    line.members.length = 0;
    line.head = 0;
    this.#tidy(line);
  }

  join(method: string, paramsText: string, options: CallOptions): Promise<UpstreamResult> {
    if (options.signal?.aborted) return Promise.reject(cancelled());
    const flow = options.flow ?? "";
    let line = this.#lines.get(flow);
    if (line === undefined) {
      line = new Line(flow);
      this.#lines.set(flow, line);
    }
    const member = new Member(line, method, paramsText, options);
    line.members.push(member);
    line.live++;
    this.#waiting++;
    if (member.deadlineAt > line.deadlineAt) {
      line.deadlineAt = member.deadlineAt;
      for (const ticket of line.tickets) ticket.deadlineAt = member.deadlineAt;
    }
    // With connections free, it came in a burst (see ALONE_PER_TURN): it waits for the turn's end, which comes before any
    // deadline or caller's leaving is to be heard (they are watched from then, #shareOut).
    if (!line.gathering && !this.#host.pool.full) {
      line.gathering = true;
      this.#gathering.push(line);
    }
    if (line.gathering) return member.promise;
    this.#watch(member);
    this.#replenish(line);
    return member.promise;
  }

  /**
   * Puts requests for `line` in the pool's line: one per waiting call up to the pool's connections (so the calls
   * spread over every connection that frees, and a node answering a batch's calls one after another, as geth does,
   * still answers them side by side), and enough to carry them all, a batch holding at most `limit`.
   */
  #replenish(line: Line): void {
    if (line.gathering) return;
    const { pool, connections } = this.#host;
    const most = Math.max(1, this.#limitFor(line.flow));
    while (line.tickets.length < Math.min(line.live, connections) || line.tickets.length * most < line.live) {
      let ticket: Http1Call | undefined;
      let batch: Batch | undefined;
      const call = pool.requestComposed(() => {
        const composed = this.#compose(line, ticket);
        batch = composed.batch;
        if (ticket !== undefined) batch.call = ticket;
        return composed.body;
      }, line.flow);
      if (batch !== undefined) (batch as Batch).call = call;
      call.reply.then(
        (reply) => (batch === undefined ? undefined : this.#answer(batch, reply)),
        (err: unknown) => (batch === undefined ? this.#ticketFailed(line, call, err) : this.#failed(batch, err)),
      );
      // Failed at once (nodegate stops): its failure fails what waits.
      if (call.settled) return;
      // Given a connection at once (one was opened for it), it carried its share; else it waits in line.
      if (!call.sent) {
        call.deadlineAt = line.deadlineAt;
        call.wanted = (minLeftMs) => this.#wanted(line, minLeftMs);
        ticket = call;
        line.tickets.push(call);
        this.#tickets++;
      }
    }
  }

  /**
   * The body of the request a connection was given for `line`: its share of the calls waiting (those waiting, over the
   * requests in line for them, this one included; at most `limit`), each under an id of its own.
   */
  #compose(line: Line, ticket: Http1Call | undefined): { body: string; batch: Batch } {
    // Shared out as a turn ends (#shareOut): over the requests still to be made, each given a connection at once.
    const shares = ticket === undefined && line.spread > 0 ? line.spread-- : 1 + line.tickets.length - (ticket === undefined ? 0 : 1);
    if (ticket !== undefined) {
      line.tickets.splice(line.tickets.indexOf(ticket), 1);
      this.#tickets--;
    }
    const limit = this.#limitFor(line.flow);
    const most = Math.max(1, Math.min(limit, Math.ceil(line.live / shares)));
    const now = performance.now();
    const ids = new Set<number>();
    const taken: Member[] = [];
    let body = "[";
    let chars = 2;
    while (taken.length < most && line.head < line.members.length) {
      const member = line.members[line.head] as Member;
      if (!member.settled) {
        const id = freshId(ids);
        const text = requestBody(id, member.method, member.paramsText);
        if (taken.length > 0 && chars + text.length > MAX_BODY_CHARS) break;
        ids.add(id);
        member.id = id;
        member.waitedMs = now - member.joinedAt;
        body += `${taken.length === 0 ? "" : ","}${text}`;
        chars += text.length + 1;
        taken.push(member);
      }
      line.head++;
    }
    line.live -= taken.length;
    this.#waiting -= taken.length;
    if (line.head === line.members.length) {
      line.members.length = 0;
      line.head = 0;
    } else if (line.head >= 1024) {
      line.members.splice(0, line.head);
      line.head = 0;
    }
    const batch = new Batch(taken);
    for (const member of taken) {
      member.batch = batch;
      batch.byId.set(String(member.id), member);
      member.options.onSent?.();
    }
    // Calls out of time, or a batch cut short by its size, may leave the requests in line out of step with the calls
    // waiting: set right once the pool is done giving this one its connection.
    if (line.tickets.length > line.live || line.tickets.length * Math.max(1, limit) < line.live) queueMicrotask(() => this.#tidy(line));
    // One call's share goes as itself (#answerPlain), not as an array of one: a provider counting a batch of N as N + 1
    // requests counts that as two, and a node taking no batches refuses it.
    batch.plain = taken.length === 1;
    return { body: batch.plain ? body.slice(1) : `${body}]`, batch };
  }

  /**
   * Whether a call waiting in `line` has `minLeftMs` of its time left, for the pool as it gives a connection to a request
   * of `line`: calls with less are failed now, unsent (no node answers across a network that fast), and when none is
   * left the request goes unsent rather than carry nothing.
   */
  #wanted(line: Line, minLeftMs: number): boolean {
    const now = performance.now();
    for (let i = line.head; i < line.members.length; i++) {
      const member = line.members[i] as Member;
      if (member.settled) continue;
      if (member.deadlineAt - now >= minLeftMs) return true;
      this.#settle(member, undefined, noConnectionInTime(member.options.timeoutMs, this.#waitingCalls()));
      line.live--;
      this.#waiting--;
    }
    return false;
  }

  /** A member's deadline came, or its caller left: it gets its error now, and the rest go on without it. */
  #leave(member: Member, callerLeft: boolean): void {
    if (member.settled || member.alone) return;
    const batch = member.batch;
    if (batch === undefined) {
      this.#settle(member, undefined, callerLeft ? cancelled() : noConnectionInTime(member.options.timeoutMs, this.#waitingCalls()));
      this.#leftLine(member.line);
      return;
    }
    this.#settle(member, undefined, callerLeft ? cancelled() : upstreamTimeout(member.options.timeoutMs, member.waitedMs > 0 ? member.waitedMs : undefined));
    batch.live--;
    if (batch.live > 0) return;
    // Nobody waits for the batch now: its connection reads the reply to its end when its last caller left (so it is
    // used again), and closes when the deadline came (the node is slow).
    batch.call.cancel(ALL_LEFT, callerLeft ? Math.min(CALLER_LEFT_FINISH_MS, member.deadlineAt - performance.now()) : 0);
  }

  /** Calls waiting for a connection: those in flows' lines, and the pool's own (a request of a line's counts for none). */
  #waitingCalls(): number {
    return Math.max(1, this.#waiting + this.#host.pool.waiting - this.#tickets);
  }

  /** A call waiting in `line` left it. */
  #leftLine(line: Line): void {
    line.live--;
    this.#waiting--;
    this.#tidy(line);
  }

  /** Sets the requests in line for `line` to the calls waiting: none past one per call, and enough to carry them all. */
  #tidy(line: Line): void {
    while (line.tickets.length > line.live) {
      const ticket = line.tickets.pop() as Http1Call;
      this.#tickets--;
      ticket.cancel(ALL_LEFT);
    }
    this.#replenish(line);
    if (line.live === 0 && line.tickets.length === 0) {
      line.members.length = 0;
      line.head = 0;
      if (this.#lines.get(line.flow) === line) this.#lines.delete(line.flow);
    }
  }

  /** A request of `line` failed before a connection took it: the circuit opened (Http1Pool.failQueued), or nodegate stops. */
  #ticketFailed(line: Line, call: Http1Call, err: unknown): void {
    const at = line.tickets.indexOf(call);
    if (at >= 0) {
      line.tickets.splice(at, 1);
      this.#tickets--;
    }
    if (err === ALL_LEFT) return;
    const now = performance.now();
    for (let i = line.head; i < line.members.length; i++) {
      const member = line.members[i] as Member;
      if (member.settled || member.batch !== undefined) continue;
      let error: GatewayError;
      if (err instanceof Http1Error && err.code === CIRCUIT_OPENED_UNSENT) error = notSentCircuitOpened(member.method);
      else if (err instanceof Http1Error && err.code === QUEUED_PAST_DEADLINE) {
        // Out of time in line: those out of time now (a call that joined since waits on, and a request is put in line for it).
        if (member.deadlineAt - now >= MIN_TIME_LEFT_MS) continue;
        error = noConnectionInTime(member.options.timeoutMs, this.#waitingCalls());
      } else error = this.#host.transportError(err, member.method, member.options);
      this.#settle(member, undefined, error);
      this.#leftLine(line);
    }
    this.#tidy(line);
  }

  #settle(member: Member, result: UpstreamResult | Promise<UpstreamResult> | undefined, err?: unknown): void {
    if (member.settled) return;
    member.settled = true;
    clearTimeout(member.timer);
    if (member.onAbort !== undefined) member.options.signal?.removeEventListener("abort", member.onAbort);
    if (result !== undefined) member.resolve(result);
    else member.reject(err);
  }

  /** Members that have not left: each is to get an answer or an error from here on. */
  #stillWaiting(batch: Batch): Member[] {
    const out: Member[] = [];
    for (const member of batch.members) if (!member.settled) out.push(member);
    return out;
  }

  #failed(batch: Batch, err: unknown): void {
    // A batch may be back in the pool's line, unsent (a new connection the node's front refused): see Http1Pool.
    const sent = batch.call.sent;
    if (err === ALL_LEFT) return;
    batch.verdict?.(false);
    const waiting = this.#stillWaiting(batch);
    const unsent = !sent && err instanceof Http1Error && (err.code === QUEUED_PAST_DEADLINE || err.code === CIRCUIT_OPENED_UNSENT);
    // A reply larger than a reply may be, to one call: alone it would be as large.
    const tooLargeAlone = err instanceof Http1Error && (err.code === OVER_REPLY_BUDGET || err.code === BODY_TOO_LARGE) && batch.byId.size === 1;
    // Sent, and lost on the way (a reset, a cut reply, a reply larger than a reply may be): each call is asked once more
    // alone, as a call alone whose kept-alive connection closed would be; a node that is down fails them all again. Not
    // while the node's circuit rests (its provider's Retry-After, a cooldown): it asked not to be called.
    if (!unsent && !tooLargeAlone && !this.#host.isClosed() && !this.#host.pool.resting()) {
      for (const member of waiting) this.#sendAlone(member);
      return;
    }
    for (const member of waiting) {
      let error: GatewayError;
      if (err instanceof Http1Error && err.code === QUEUED_PAST_DEADLINE && !sent) error = noConnectionInTime(member.options.timeoutMs, this.#waitingCalls());
      else if (err instanceof Http1Error && err.code === CIRCUIT_OPENED_UNSENT && !sent) error = notSentCircuitOpened(member.method);
      else error = this.#host.transportError(err, member.method, member.options);
      this.#settle(member, undefined, error);
    }
  }

  #answer(batch: Batch, reply: Http1Reply): void {
    // Every call meant for it had left when it was sent: nothing to read.
    if (batch.members.length === 0) return;
    if (batch.plain) {
      this.#answerPlain(batch.members[0] as Member, reply);
      return;
    }
    const body = reply.chunks.length === 1 ? (reply.chunks[0] as Buffer) : Buffer.concat(reply.chunks, reply.length);
    const start = skipWhitespace(body, 0);
    const providerError = body[start] === 0x7b ? replyError(body) : undefined;
    if (reply.statusCode !== 200) {
      const failure = this.#host.nodeWideFailure(reply, providerError);
      if (failure === undefined) this.#refused(batch, `HTTP ${reply.statusCode}${providerError === undefined ? "" : `: ${providerError.message}`}`);
      else {
        batch.verdict?.(false);
        this.#failAll(batch, failure);
      }
      return;
    }
    if (body[start] === 0x5b) {
      this.#split(batch, reply, body, start);
      return;
    }
    const id = body[start] === 0x7b ? idOf(body) : undefined;
    // Another request's reply (an id none of the batch's, nor null): the node is out of step on this connection (it
    // wrote a reply twice), and the batch's own answer may come on it still. The calls go alone; nothing is concluded.
    if (id !== undefined && id !== "null" && !batch.byId.has(id)) {
      reply.outOfStep();
      batch.verdict?.(false);
      for (const member of this.#stillWaiting(batch)) this.#sendAlone(member);
      return;
    }
    // An error with id null for the array: a copy of it written twice would come as the next request's reply on this
    // connection, which reads it as such only when told (HttpUpstream.#answerOf; found from outside, h110: a waiting call
    // sent next, by itself, took "batch requests are not supported" meant for the array as its own answer).
    if (providerError !== undefined && id === "null") reply.markIdNullError();
    // One answer to the whole batch: a rate limit speaks for every call in it; anything else refuses the batch (geth's
    // "batch too large" past its BatchRequestLimit, Anvil's "Invalid request" for a call it cannot read, a node that
    // takes no batches).
    if (providerError !== undefined && isRateLimitRefusal(providerError, "")) {
      batch.verdict?.(false);
      this.#failAll(batch, providerError);
      return;
    }
    if (body[start] !== 0x7b) reply.notReused();
    this.#refused(batch, providerError?.message ?? `an answer that is no array: ${JSON.stringify(body.toString("utf8", start, start + 80))}`);
  }

  /**
   * The reply to a call sent as itself from its line: its answer, read as a call alone's (a 429 or 5xx is its error as
   * it would be alone); a reply that may not be its own and it is asked once more alone, as a call alone would be.
   */
  #answerPlain(member: Member, reply: Http1Reply): void {
    if (member.settled) return;
    let result: UpstreamResult | undefined;
    try {
      result = this.#host.readAlone(reply, member.id, member.method);
    } catch (err) {
      this.#settle(member, undefined, err);
      return;
    }
    if (result === undefined) this.#sendAlone(member);
    else this.#settle(member, result);
  }

  /** Each call takes its answer from the array by id; a call left out, or refused for the batch's size, goes alone. */
  #split(batch: Batch, reply: Http1Reply, body: Buffer, start: number): void {
    const verify = !reply.framed;
    let read: BatchAnswer<Member>;
    try {
      read = readBatchAnswer(body, start, batch.byId);
    } catch (err) {
      reply.notReused();
      batch.verdict?.(false);
      this.#failAll(batch, upstreamBadResponse(err instanceof RawJsonError ? `the answer to a batch: ${err.message}` : "an unreadable answer to a batch", err));
      return;
    }
    if (read.answers.length === 0) {
      // Not one answer of this batch's (an empty array, other ids, ids as strings): with some of other ids, the node is
      // out of step on this connection. The calls go alone; a node that answers them so takes no batches.
      if (read.strays > 0) reply.outOfStep();
      batch.verdict?.(false);
      const said = read.strays > 0 ? "an array answering none of its calls by id" : "an empty array";
      const flow = (batch.members[0] as Member).line.flow;
      for (const member of this.#stillWaiting(batch)) this.#sendAlone(member, (answered) => answered && this.#noBatches(flow, batch.byId.size, said));
      return;
    }
    batch.verdict?.(true);
    this.#accepted(batch.byId.size);
    for (const [member, element] of read.answers) {
      if (member.settled) continue;
      try {
        this.#settle(member, readReply(element, member.id, { verify }));
      } catch (err) {
        if (err instanceof GatewayError && err.origin === "upstream" && err.code === RESPONSE_TOO_LARGE && /response too large/i.test(err.message)) this.#sendAlone(member);
        else this.#settle(member, undefined, err);
      }
    }
    // A call the node left out (a node capping its batches so, an error under id null, an element it garbled) is asked
    // alone: its own answer decides.
    for (const member of this.#stillWaiting(batch)) this.#sendAlone(member);
  }

  #failAll(batch: Batch, err: GatewayError): void {
    for (const member of this.#stillWaiting(batch)) this.#settle(member, undefined, err);
  }

  /**
   * The node refused the batch as a whole. Its calls go again as two batches of half as many, each refused one halved
   * in turn, down to calls alone: a call the node cannot read (which makes Anvil refuse its whole batch) is found in a few
   * round trips, the others answered in their halves. Only a node that takes both halves of the batch it refused caps its
   * batches: later batches hold at most a half's calls. One that refuses a single call in an array and answers it alone
   * takes no batches: calls then go one by one. Either lasts LOWERED_FOR_MS.
   */
  #refused(batch: Batch, said: string): void {
    batch.verdict?.(false);
    const waiting = this.#stillWaiting(batch);
    if (waiting.length === 0) return;
    const flow = (waiting[0] as Member).line.flow;
    // Batches of this flow stopped meanwhile (another of its batches taught so): its calls go alone.
    if (this.#limitFor(flow) < 2) {
      for (const member of waiting) this.#sendAlone(member);
      return;
    }
    if (waiting.length === 1) {
      const lone = batch.byId.size === 1;
      this.#sendAlone(waiting[0] as Member, (answered) => answered && lone && this.#noBatches(flow, 1, said));
      return;
    }
    const half = Math.ceil(waiting.length / 2);
    let taken = 0;
    const verdict = (accepted: boolean): void => {
      if (!accepted) taken = Number.NEGATIVE_INFINITY;
      else if (++taken === 2) this.#lower(flow, half, batch.byId.size, said);
    };
    this.#sendFixed(waiting.slice(0, half), verdict);
    this.#sendFixed(waiting.slice(half), verdict);
  }

  /** Sends `members` (a half of a refused batch) as a batch of their own, out of their line's turn: they were sent once. */
  #sendFixed(members: Member[], verdict: (accepted: boolean) => void): void {
    const batch = new Batch(members);
    batch.verdict = verdict;
    const ids = new Set<number>();
    let body = "[";
    let deadlineAt = 0;
    members.forEach((member, i) => {
      member.id = freshId(ids);
      ids.add(member.id);
      member.batch = batch;
      batch.byId.set(String(member.id), member);
      body += `${i === 0 ? "" : ","}${requestBody(member.id, member.method, member.paramsText)}`;
      deadlineAt = Math.max(deadlineAt, member.deadlineAt);
    });
    batch.call = this.#host.pool.request(`${body}]`, true, (members[0] as Member).line.flow);
    if (!batch.call.sent) batch.call.deadlineAt = deadlineAt;
    batch.call.reply.then(
      (reply) => this.#answer(batch, reply),
      (err: unknown) => this.#failed(batch, err),
    );
  }

  /** The node took a batch of `size` calls (answered it with an array). */
  #accepted(size: number): void {
    const now = performance.now();
    if (size >= this.#acceptedSize || now - this.#acceptedAt >= ACCEPTED_MEMORY_MS) {
      this.#acceptedSize = size;
      this.#acceptedAt = now;
    }
  }

  /** The largest batch the node took within ACCEPTED_MEMORY_MS (0: none). */
  #recentlyAccepted(): number {
    return performance.now() - this.#acceptedAt < ACCEPTED_MEMORY_MS ? this.#acceptedSize : 0;
  }

  /**
   * The node took batches of `half` calls but refused one of `size`: later batches of `flow` hold at most `half` (or the
   * largest it took lately, when more), unless it took one of `size` or more lately (then something else was refused).
   */
  #lower(flow: string, half: number, size: number, said: string): void {
    const recent = this.#recentlyAccepted();
    if (recent >= size) return;
    const limit = Math.max(half, recent);
    if (limit >= this.#limitFor(flow)) return;
    if (limit < 2) {
      this.#noBatches(flow, size, said);
      return;
    }
    this.#lowered.set(flow, { limit, until: performance.now() + LOWERED_FOR_MS });
    this.#log?.warn({ upstream: this.#label, flow, batchSize: size }, `the node refused a batch of ${size} calls (${said.slice(0, 200)}) and took its halves: calls of ${flow || "nodegate's own"} waiting for a connection now go in batches of at most ${limit} for ${LOWERED_FOR_MS / 60_000} minutes`);
  }

  /**
   * The node takes no batches (it refused one of `size`, and answered its calls alone): calls of `flow` waiting now go
   * alone, and those that would wait go alone too, for LOWERED_FOR_MS; unless the node took a batch lately.
   */
  #noBatches(flow: string, size: number, said: string): void {
    if (this.#recentlyAccepted() > 0 || this.#limitFor(flow) < 2) return;
    this.#lowered.set(flow, { limit: 1, until: performance.now() + LOWERED_FOR_MS });
    this.#log?.warn({ upstream: this.#label, flow, batchSize: size }, `the node refused a batch of ${size} calls (${said.slice(0, 200)}) and answered them alone: calls of ${flow || "nodegate's own"} waiting for a connection now go one by one for ${LOWERED_FOR_MS / 60_000} minutes`);
    const line = this.#lines.get(flow);
    if (line !== undefined) {
      for (const ticket of line.tickets.splice(0)) {
        this.#tickets--;
        ticket.cancel(ALL_LEFT);
      }
      for (let i = line.head; i < line.members.length; i++) {
        const member = line.members[i] as Member;
        if (member.settled || member.batch !== undefined) continue;
        line.live--;
        this.#waiting--;
        this.#sendAlone(member);
      }
      line.members.length = 0;
      line.head = 0;
      this.#lines.delete(flow);
    }
  }

  /** `member` by itself, within its time left; `answered` is told whether the node answered it with a result. */
  #sendAlone(member: Member, answered?: (result: boolean) => void): void {
    const left = member.deadlineAt - performance.now();
    if (left < 1) {
      this.#settle(member, undefined, upstreamTimeout(member.options.timeoutMs, member.waitedMs > 0 ? member.waitedMs : undefined));
      return;
    }
    member.alone = true;
    this.#host.alone(member.method, member.paramsText, member.options, Math.round(left)).then(
      (result) => {
        this.#settle(member, result);
        answered?.(true);
      },
      (err: unknown) => {
        this.#settle(member, undefined, err);
        answered?.(false);
      },
    );
  }
}
