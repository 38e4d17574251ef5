/**
 * A named network (ethereum, starknet, ...): its chain family and the
 * upstreams that serve it. The first upstream is the primary; partners take
 * idempotent calls during a primary outage when the failover policy allows
 * the method and the caller's plan. Each upstream has a circuit breaker.
 */
import { Code } from "@connectrpc/connect";
import type { Logger } from "pino";
import { CallCache, type CallCacheOptions } from "../cache/call-cache.js";
import { ChainIdentity } from "../cache/chain-identity.js";
import type { FailoverPolicy, Plan } from "../config/config.js";
import { isSpareRefused, ranOutWaitingForConnection, upstreamTimeout, upstreamUnavailable } from "../errors/catalogue.js";
import { grpcCodeForJsonRpc } from "../errors/code-map.js";
import { GatewayError } from "../errors/gateway-error.js";
import { isRateLimitRefusal } from "../errors/rate-limit-refusal.js";
import type { ChainFamily } from "../methods/method-table.js";
import type { Metrics } from "../observability/metrics.js";
import { AnswerPace } from "./answer-pace.js";
import { ChainHead } from "./chain-head.js";
import { CircuitBreaker, type CircuitBreakerOptions } from "./circuit-breaker.js";
import { OwnReadPace } from "./own-read-pace.js";
import { CHAIN_ID_METHOD, PartnerChains } from "./partner-chains.js";
import type { UpstreamResult } from "./reply.js";
import type { Upstream } from "./upstream.js";
import { CallCancellation, type CallSignal } from "../call-signal.js";

export interface NetworkOptions {
  name: string;
  family: ChainFamily;
  /** The first is the primary; the rest are partners. */
  upstreams: Upstream[];
  /** Per-request deadline for upstream calls. */
  timeoutMs: number;
  failover?: FailoverPolicy | undefined;
  breaker?: CircuitBreakerOptions;
  log?: Logger | undefined;
  metrics?: Metrics | undefined;
  /** Answer cache and coalescing for this network's calls; none when unset. */
  cache?: Omit<CallCacheOptions, "network" | "head"> | undefined;
  /** How old the finalized block number may get before it is asked again. */
  finalizedMaxAgeMs?: number | undefined;
}

export interface NetworkCallOptions {
  signal?: CallSignal | undefined;
  /**
   * The call's own deadline (a method's limit, such as eth_getLogs' query timeout), when shorter than the network's:
   * its expiry is the caller's limit, not an outage (ranOutOfOwnDeadline tells). A longer one does not extend the
   * network's, which is the deadline of every upstream call.
   */
  timeoutMs?: number | undefined;
  /** Safe to send again (to a partner). Default false. */
  idempotent?: boolean | undefined;
  /** The caller's plan, for the failover policy. */
  plan?: Plan | undefined;
  /** Whom the call is for (CallOptions.flow). */
  flow?: string | undefined;
  /** CallOptions.onSent, for whichever upstream the call goes to. */
  onSent?: (() => void) | undefined;
  /**
   * nodegate's own reading of the head that a caller's call waits for (a gas limit): any partner may answer it
   * during a primary outage, whatever the failover policy, since the caller's call itself still goes where the
   * policy says (found from outside: eth_call with gas and eth_estimateGas could not fail over under a policy
   * naming them, as the gas-limit reading they need could not).
   */
  headReading?: boolean | undefined;
  /**
   * nodegate's own read for its subscription feeds (a poll, a gap fill, a resume's history): paced while the node
   * refuses calls for its rate limit, so that callers' calls keep a share of what it serves (OwnReadPace).
   */
  ownRead?: boolean | undefined;
}

/** What a readiness probe heard; methodUnknownAt: the upstream that answered, but did not know the probe's method (a node of another family). */
export interface ProbeOutcome {
  answered: boolean;
  methodUnknownAt?: string;
}

const METHOD_NOT_FOUND = -32601;

/** Errors of calls whose own deadline (NetworkCallOptions.timeoutMs) ran out before the network's. */
const ownDeadlineExpiries = new WeakSet<GatewayError>();

/** Whether `err` says the call's own deadline ran out (not the network's, which would say the node is not answering). */
export function ranOutOfOwnDeadline(err: GatewayError): boolean {
  return ownDeadlineExpiries.has(err);
}

/** Failures that mean the upstream is down (not that it answered with an error). */
export function isOutage(err: unknown): boolean {
  return err instanceof GatewayError && err.outage;
}

/** nodegate's own limits (its connections to the node, its reply budget) ran out: that says nothing about the node. */
function isOwnCapacity(err: unknown): boolean {
  return err instanceof GatewayError && err.origin === "nodegate" && !err.outage && (err.grpcCode === Code.ResourceExhausted || err.grpcCode === Code.DeadlineExceeded);
}

/**
 * A failure that says nothing of the node either way: nodegate's UNAVAILABLE not counted as an outage (a kept-alive
 * connection the server closed as a write went out on it, keptAliveConnectionClosed).
 */
function saysNothingOfTheNode(err: unknown): boolean {
  return err instanceof GatewayError && err.origin === "nodegate" && !err.outage && err.grpcCode === Code.Unavailable;
}

/**
 * The primary's outage, saying what became of the partners: what the partner asked as well answered, so the caller
 * learns that both failed, and why (found from outside: a partner's timeout, after a call went to it, was told as the
 * primary's failure alone); or, none asked, that their circuits are open as well (found from outside: once every
 * circuit was open, the error no longer mentioned a partner).
 */
function withPartnerFailure(outage: unknown, partnerError: GatewayError | undefined, partnersPaused: number): unknown {
  if ((partnerError === undefined && partnersPaused === 0) || !(outage instanceof GatewayError)) return outage;
  return new GatewayError({
    code: outage.code,
    message:
      partnerError === undefined
        ? `${outage.message}; ${partnersPaused === 1 ? "the partner upstream is failing too (its circuit open)" : "every partner upstream is failing too (their circuits open)"}`
        : `${outage.message}; a partner upstream was asked too: ${partnerError.message}`,
    grpcCode: outage.grpcCode,
    httpStatus: outage.httpStatus,
    ...(outage.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: outage.retryAfterSeconds }),
    origin: outage.origin,
    outage: outage.outage,
  });
}

/** A node's error as its network's family reads the code (replies are read by Ethereum's table; a revert stays as read). */
function inFamily(err: unknown, family: ChainFamily): unknown {
  if (family === "eth" || !(err instanceof GatewayError) || err.origin !== "upstream") return err;
  const asEthereum = grpcCodeForJsonRpc(err.code);
  const grpcCode = grpcCodeForJsonRpc(err.code, family);
  if (grpcCode === asEthereum || err.grpcCode !== asEthereum) return err;
  return new GatewayError({
    code: err.code,
    message: err.message,
    ...(err.data === undefined ? {} : { data: err.data }),
    grpcCode,
    httpStatus: err.httpStatus,
    ...(err.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: err.retryAfterSeconds }),
    origin: "upstream",
  });
}

/** How upstreamUnavailable words begin: left off a last failure quoted inside another such error. */
const UNAVAILABLE_PREFIX = "upstream unavailable: ";

/** How long nodegate's own chain id question waits for its answer before the upstream is judged at least (see #askChainId). */
const SILENCE_CHECK_TIMEOUT_MS = 5000;
/** How long calls may be out to an upstream with nothing heard from it before it is asked its chain id (see #watchForSilence). */
const HANG_WATCH_MS = 2000;
/** How much each faster answer takes off the last chain id question's time (see #answered). */
const QUESTION_DECAY = 0.9;
/** The most chain id questions out to one upstream at once (one waiting past its verdict, and one a cooldown for 5 s): a hung node holds no more of its connections. */
const MAX_QUESTIONS_OUT = 6;

/**
 * The signal of a call on the primary that a partner may take: cancelled when its caller leaves, or when the
 * primary is found silent while the call is out (handedOver), so that the call goes to a partner.
 */
class HandOver extends CallCancellation {
  handedOver = false;
  readonly #caller: CallSignal | undefined;
  readonly #follow = (): void => this.abort();

  constructor(caller: CallSignal | undefined) {
    super();
    this.#caller = caller;
    if (caller?.aborted === true) this.abort();
    else caller?.addEventListener("abort", this.#follow);
  }

  handOver(): void {
    if (this.aborted) return;
    this.handedOver = true;
    this.abort();
  }

  stop(): void {
    this.#caller?.removeEventListener("abort", this.#follow);
  }
}

interface Member {
  upstream: Upstream;
  breaker: CircuitBreaker;
  /** When the upstream last answered anything (performance.now()). */
  answeredAt: number;
  /** How long its answers to each method typically take. */
  pace: AnswerPace;
  /** When nodegate's own chain id question to this upstream was last asked (#askChainId); -Infinity before the first. */
  askedAt: number;
  /** How long the last answered chain id question took, ms (0 until one is answered). */
  questionMs: number;
  /** A question is out that waits for its answer up to upstreamTimeoutMs, past its verdict (see #askChainId). */
  listening: boolean;
  /** Callers' calls out to it now. */
  callsOut: number;
  /** Armed while calls are out: looks for a silence patient callers would otherwise wait out (see #watchForSilence). */
  watchdog: NodeJS.Timeout | undefined;
  /** Chain id questions out now. */
  questionsOut: number;
  /** When its circuit last opened (performance.now()); -Infinity before. */
  openedAt: number;
  /** What its last outage said, for the callers its open circuit turns away. */
  lastFailure: string | undefined;
}

export class Network {
  readonly name: string;
  readonly family: ChainFamily;
  readonly #members: Member[];
  readonly #timeoutMs: number;
  readonly #failover: FailoverPolicy | undefined;
  readonly #log: Logger | undefined;
  readonly #metrics: Metrics | undefined;
  /** A partner has answered since the primary last did: later failovers of this outage log at debug. */
  #failingOver = false;
  /** Count of calls answered by a partner, for metrics and tests. */
  failovers = 0;
  /** When an upstream of this network last answered (a result or a node error), by performance.now(); -Infinity = never. */
  lastAnswerAt = Number.NEGATIVE_INFINITY;
  /** When a call last got a result (not a node error): the node serving, as a refusal of one call cannot say. */
  lastResultAt = Number.NEGATIVE_INFINITY;
  /** When an upstream of this network was last seen down (a call with no answer at all, a WebSocket dropped), by performance.now(); -Infinity = never. */
  lastOutageAt = Number.NEGATIVE_INFINITY;
  readonly #outageListeners = new Set<() => void>();
  /** Calls out on the primary that a partner may take (see #handOverPrimaryCalls). */
  readonly #handOvers = new Set<HandOver>();
  readonly #chains: PartnerChains;
  /** The head's gas limits, cached (Ethereum networks). */
  readonly head: ChainHead;
  /** Final answers and in-flight calls, shared by both front doors. */
  readonly cache: CallCache | undefined;
  readonly #ownReads: OwnReadPace;
  #closed = false;

  constructor(options: NetworkOptions) {
    if (options.upstreams.length === 0) throw new Error(`network ${options.name} has no upstream`);
    this.name = options.name;
    this.family = options.family;
    this.#members = options.upstreams.map((upstream) => ({ upstream, breaker: new CircuitBreaker(options.breaker), answeredAt: Number.NEGATIVE_INFINITY, pace: new AnswerPace(), askedAt: Number.NEGATIVE_INFINITY, questionMs: 0, listening: false, callsOut: 0, watchdog: undefined, questionsOut: 0, openedAt: Number.NEGATIVE_INFINITY, lastFailure: undefined }));
    for (const member of this.#members) member.upstream.restsWhile?.(() => member.breaker.resting());
    // A WebSocket node's dropped connection is an outage seen before any call fails: readiness probes from then on,
    // even with no traffic (found from outside: an idle instance reported a dead node SERVING for 30 s).
    for (const { upstream } of this.#members) {
      upstream.onOutage?.(() => this.#outage());
    }
    this.#timeoutMs = options.timeoutMs;
    this.#failover = options.failover;
    this.#log = options.log;
    this.#metrics = options.metrics;
    this.#ownReads = new OwnReadPace({
      started: (perSecond) =>
        this.#log?.warn({ network: this.name, perSecond }, "the node refuses calls for its rate limit: nodegate's own reads for subscriptions are paced (from half of what it served), so callers' calls keep a share"),
      ended: () => this.#log?.info({ network: this.name }, "no rate-limit refusal for 30 s: nodegate's own reads for subscriptions go unpaced again"),
    });
    options.metrics?.watchOwnReadsPace(this.name, () => this.#ownReads.perSecond);
    this.#chains = new PartnerChains(this.name, this.family, options.upstreams, options.log);
    this.head = new ChainHead(this, undefined, options.finalizedMaxAgeMs, (tag, gasLimit) =>
      this.#log?.warn({ network: this.name, block: tag, gasLimit }, "the node's block has no gas limit nodegate can read: eth_call's gas cap and eth_estimateGas's bound are skipped (said once)"),
    );
    // Said where operators look: the cache's hit rate falls to nothing at once (found from outside: nothing said why).
    this.head.onFinalityRewind((from, to) =>
      this.#log?.warn({ network: this.name, from: String(from), to: String(to) }, "the node's finalized block went back, or a block it called final left its chain: answers cached before are not served"),
    );
    const chains = this.#chains;
    const primary = (this.#members[0] as Member).upstream;
    const identity = new ChainIdentity(() => chains.primaryChainId(), this.family === "eth" ? (method, paramsText, options) => primary.call(method, paramsText, options) : undefined);
    // A rewind may be another chain behind the URL (a dev node restarted afresh): its genesis is asked again, so a
    // shared store's keys name the chain the node serves now (see ChainIdentity.forget).
    this.head.onFinalityRewind(() => identity.forget());
    // And it may be another chain id, which partners are judged by (see PartnerChains.forgetPrimary).
    this.head.onFinalityRewind(() => chains.forgetPrimary());
    const cache = options.cache
      ? new CallCache({
          ...options.cache,
          network: this.name,
          head: this.head,
          chainId: () => identity.current(),
          epochMaxAgeMs: options.finalizedMaxAgeMs,
          onEpochUnchecked: (err) =>
            this.#log?.warn({ network: this.name, err: err instanceof Error ? err.message : String(err) }, "the last final block recorded in the shared cache could not be checked on the node: the shared cache is not used until it can be"),
        })
      : undefined;
    this.cache = cache;
    if (cache !== undefined) options.metrics?.watchCache(this.name, () => cache.stats);
  }

  #outage(): void {
    this.lastOutageAt = performance.now();
    for (const listener of this.#outageListeners) listener();
  }

  /** Calls `listener` whenever an upstream of this network is seen down; returns the unsubscribe. */
  onOutage(listener: () => void): () => void {
    this.#outageListeners.add(listener);
    return () => this.#outageListeners.delete(listener);
  }

  get primary(): Upstream {
    return (this.#members[0] as Member).upstream;
  }

  /** Whether any upstream of this network answered, or sent anything, since `t` (performance.now()). */
  heardFromSince(t: number): boolean {
    return this.#members.some((member) => this.#heardAt(member) >= t);
  }

  /** The primary's circuit state (readiness and tests). */
  get primaryCircuit(): string {
    return (this.#members[0] as Member).breaker.state;
  }

  /**
   * Whether an idempotent call of `method` by a key of `plan` may go to a
   * partner during an outage: callers that differ in this alone may share
   * one upstream call (see CallCache).
   */
  mayFailOver(method: string, plan: Plan): boolean {
    const policy = this.#failover;
    return this.#members.length > 1 && policy !== undefined && policy.methods.includes(method) && policy.plans.includes(plan);
  }

  #mayFailOver(method: string, options: NetworkCallOptions): boolean {
    if (this.#members.length === 1 || options.idempotent !== true) return false;
    if (options.headReading === true) return true;
    return options.plan !== undefined && this.mayFailOver(method, options.plan);
  }

  /** `waitedMs`: how long the call waited on the primary's probe, taken from its deadline (which counts from its arrival). */
  async #try(member: Member, method: string, paramsText: string, options: NetworkCallOptions, waitedMs = 0): Promise<UpstreamResult> {
    const ownDeadline = options.timeoutMs !== undefined && options.timeoutMs < this.#timeoutMs;
    const started = performance.now();
    // Let through by the circuit as its probe (a readiness check's call): only then does its release end the probe.
    const probe = member.breaker.state !== "closed" ? member.breaker.probeSerial : undefined;
    member.callsOut++;
    if (member.watchdog === undefined) this.#watchForSilence(member);
    try {
      const result = await member.upstream.call(method, paramsText, {
        signal: options.signal,
        timeoutMs: Math.max(1, Math.round((ownDeadline ? (options.timeoutMs as number) : this.#timeoutMs) - waitedMs)),
        idempotent: options.idempotent,
        flow: options.flow,
        onSent: options.onSent,
      });
      this.#answered(member, started, method);
      const servedAt = performance.now();
      this.lastResultAt = servedAt;
      // Own reads go to the primary alone (they name no plan a failover policy could allow): its pace is theirs.
      if (member === this.#members[0]) this.#ownReads.served(servedAt);
      return result;
    } catch (err) {
      if (member === this.#members[0] && isRateLimitRefusal(err, method)) this.#ownReads.refused();
      const ownDeadlineRanOut = ownDeadline && err instanceof GatewayError && err.grpcCode === Code.DeadlineExceeded;
      if (ownDeadlineRanOut) ownDeadlineExpiries.add(err);
      // A caller that gave up (or the call's own deadline, eth_getLogs' query timeout) says nothing about the node:
      // a slow node answers later, and one client's impatient calls must not pause every key's (see docs).
      if (options.signal?.aborted || ownDeadlineRanOut || isOwnCapacity(err) || saysNothingOfTheNode(err)) {
        // Found from outside: a caller leaving a call sent while the circuit was closed woke the calls waiting on the
        // probe out now, and they were refused although the probe then found the node healed.
        if (probe !== undefined) member.breaker.release(probe);
        if (!isOwnCapacity(err)) this.#checkSilence(member, started);
      } else if (isOutage(err)) {
        if (!this.#answeredSince(member, started, err as GatewayError)) this.#failed(member, err as Error);
      } else {
        this.#answered(member, started, method); // a node error is an answer: the upstream is up
        this.#metrics?.upstreamErrors.inc({ network: this.name, upstream: member.upstream.label, kind: "node_error" });
        throw inFamily(err, this.family);
      }
      throw err;
    } finally {
      member.callsOut--;
      this.#metrics?.upstreamSeconds.observe([this.name, member.upstream.label], (performance.now() - started) / 1000);
    }
  }

  /**
   * While callers' calls are out to an upstream, looks every HANG_WATCH_MS (or three times its typical answer time
   * for its fastest method, when longer) whether anything was heard from it meanwhile; if not, it is asked its chain
   * id (#checkSilence), as when a caller gives up. Patient callers never give up, and a node that hung was only seen
   * down once their calls timed out, upstreamTimeoutMs later, then the circuit's threshold later again (found from
   * outside: with 60 s clients, everyone waited 30 s and failover began after 34 s). One timer per upstream, not per
   * call.
   */
  #watchForSilence(member: Member): void {
    if (this.#closed) return;
    const windowMs = Math.max(HANG_WATCH_MS, Math.round(3 * member.pace.fastestMs(performance.now())));
    member.watchdog = setTimeout(() => {
      member.watchdog = undefined;
      if (member.callsOut === 0) return;
      this.#checkSilence(member, performance.now() - windowMs);
      this.#watchForSilence(member);
    }, windowMs);
    member.watchdog.unref();
  }

  /** When the upstream was last heard from: an answer to a call, or a reply nodegate read for a caller who had left. */
  #heardAt(member: Member): number {
    return Math.max(member.answeredAt, member.upstream.lastHeardAt ?? Number.NEGATIVE_INFINITY);
  }

  /**
   * A call sent at `sentAt` ended unanswered because its caller left (or its own deadline ran out). That says
   * nothing of the node by itself: a slow node answers later, and one client's impatient calls must not pause every
   * key's. But typed clients always send a deadline, and with callers more impatient than upstreamTimeoutMs a node
   * that answers nothing at all was never seen down, never failed over (found from outside). So when the upstream
   * has not been heard from since that call was sent, it is asked its chain id (see #askChainId).
   */
  #checkSilence(member: Member, sentAt: number): void {
    // A circuit not closed is probed with the same question when its cooldown ends: no need to ask now.
    if (member.breaker.state !== "closed" || this.#heardAt(member) >= sentAt) return;
    this.#askChainId(member);
  }

  /**
   * Asks the upstream its chain id, nodegate's own question, at most once a cooldown, and takes the outcome as a
   * call's: an answer closes the circuit, an outage counts. Left unanswered for its verdict time (5 s, or three times
   * the longer of the upstream's typical answer time for its fastest method and its last question's, upstreamTimeoutMs
   * at most) while nothing else was heard from the upstream either, the upstream is down, and its circuit opens at
   * once. A node that is only slow, or slow on one heavy call, answers the question or something else meanwhile
   * (found from outside: counting abandoned calls as outages, or the question's own timeout while patient calls were
   * answered, took slow nodes for dead).
   *
   * One question at a time goes on waiting past its verdict, up to upstreamTimeoutMs: a node that turned slower than
   * the verdict time answers it late, which closes the circuit again and lengthens the next verdict (found from
   * outside: a node that went from fast to 5.5 s a call was taken for down, and stayed so, since every probe ran out
   * before its answer came and no caller's call was let through). The others end at their verdict, so a hung node
   * holds a few connections at most, and a healed one is heard within a cooldown.
   */
  #askChainId(member: Member): void {
    // At most one a cooldown, whether the last was answered or is still out: one out for a cooldown (on a node that
    // hung, then healed) does not hold back the next, as the circuit's probe is this question and a healed node would
    // wait for the stuck one's deadline (found from outside: 4-6 s, against "answers again within a second"); and
    // one answered does not let every failing call ask again (found from outside: 125 questions in half a second).
    const askedAt = performance.now();
    if (askedAt - member.askedAt < member.breaker.cooldownMs || member.questionsOut >= MAX_QUESTIONS_OUT) return;
    member.askedAt = askedAt;
    member.questionsOut++;
    // The circuit's probe, when it let this question through: only that probe's end without a verdict releases it.
    const probe = member.breaker.state !== "closed" ? member.breaker.probeSerial : undefined;
    const verdictMs = Math.min(this.#timeoutMs, Math.max(SILENCE_CHECK_TIMEOUT_MS, Math.round(3 * Math.max(member.pace.fastestMs(askedAt), member.questionMs))));
    const listens = !member.listening && verdictMs < this.#timeoutMs;
    let judged = false;
    const judge = (err: GatewayError): void => {
      judged = true;
      if (this.#heardAt(member) >= askedAt) return;
      this.#failed(member, err, true);
      if (member === this.#members[0]) this.#handOverPrimaryCalls();
      member.upstream.dropUnsent?.();
    };
    let verdict: NodeJS.Timeout | undefined;
    if (listens) {
      member.listening = true;
      verdict = setTimeout(() => judge(upstreamTimeout(verdictMs)), verdictMs);
      verdict.unref();
    }
    const ask = (spare: boolean, timeoutMs: number, finishAtDeadlineMs?: number) =>
      member.upstream.call(CHAIN_ID_METHOD[this.family], "[]", { timeoutMs, idempotent: true, spare, finishAtDeadlineMs });
    ask(true, listens ? this.#timeoutMs : verdictMs)
      .catch((err: unknown) => {
        if (!isSpareRefused(err)) throw err;
        // A front capping connections per client refused the spare connection: the question waits its turn among the
        // callers' calls (found from outside: dropped, a node that hung behind such a front was never judged), and the
        // verdict waits as long as their slowest typical answer too, so a node that is only busy with slow calls is
        // heard from first (found from outside: judged at 5 s, 12 s calls opened a healthy node's circuit).
        const longerMs = Math.min(this.#timeoutMs, Math.max(verdictMs, Math.round(1.5 * member.pace.slowestMs(performance.now()))));
        const leftMs = Math.max(1, Math.round(longerMs - (performance.now() - askedAt)));
        if (verdict !== undefined) {
          clearTimeout(verdict);
          verdict = setTimeout(() => judge(upstreamTimeout(longerMs)), leftMs);
          verdict.unref();
        }
        return ask(false, listens ? this.#timeoutMs : leftMs, this.#timeoutMs);
      })
      .then(
        () => {
          member.questionMs = performance.now() - askedAt;
          this.#answered(member, askedAt, CHAIN_ID_METHOD[this.family], true);
        },
        (err: unknown) => {
          // Unanswered, or never sent because every connection stayed busy (found from outside: with the pool full of
          // calls a hung node held, the question waited for a connection, and the node was never seen down).
          const unanswered = err instanceof GatewayError && ((err.outage && err.grpcCode === Code.DeadlineExceeded) || ranOutWaitingForConnection(err));
          if (unanswered) {
            if (judged) return; // the verdict was given at its time
            // Never sent, the question waited on calls the node held: the node's silence, not nodegate's limit, is what
            // the warn line must give (found from outside: it quoted "no connection to the node came free").
            judge(ranOutWaitingForConnection(err as GatewayError) ? upstreamTimeout(Math.round(performance.now() - askedAt)) : (err as GatewayError));
            if (this.#heardAt(member) >= askedAt && probe !== undefined) member.breaker.release(probe); // heard from meanwhile: no verdict
          } else if (isOutage(err)) {
            if (!this.#answeredSince(member, askedAt, err as GatewayError)) this.#failed(member, err as Error);
          } else if (isOwnCapacity(err) || saysNothingOfTheNode(err)) {
            // nodegate's own limits, or the question itself dropped unsent as the circuit opened (dropUnsent): no verdict
            if (probe !== undefined) member.breaker.release(probe);
          } else {
            this.#answered(member, askedAt, CHAIN_ID_METHOD[this.family], true); // a node error is an answer
          }
        },
      )
      .finally(() => {
        clearTimeout(verdict);
        member.questionsOut--;
        if (listens) member.listening = false;
      });
  }

  /**
   * The upstream answered other calls after the failed one was sent at `sentAt`: its failure is old news, and says
   * nothing of the node now (found from outside: calls held in a 2 s stall timed out 30 s later together, and opened
   * the circuit of a node that had answered every call for 28 s). A provider's Retry-After still counts: it asks
   * for a pause now.
   */
  #answeredSince(member: Member, sentAt: number, err: GatewayError): boolean {
    return member.answeredAt > sentAt && err.retryAfterSeconds === undefined;
  }

  /**
   * The upstream answered (a result or a node error): it is up. `sentAt`: when the call was sent, for its typical answer
   * time. `question`: the answer is to nodegate's own chain id question.
   */
  #answered(member: Member, sentAt: number, method: string, question = false): void {
    const now = performance.now();
    // A node that answers everything slowly must not be taken for silent by a question shorter than its pace (found
    // from outside: one answering every call in 7.5 s had its circuit opened by the 5 s question).
    const tookMs = now - sentAt;
    const held = sentAt < member.openedAt;
    // A question the hang held is the question time's to learn (below): as a held pace it would stay until it expired,
    // since questions are asked only when the node is silent.
    if (!(question && held)) member.pace.learn(method, tookMs, held, now);
    // A slow spell's question time fades as the node answers faster again: else every later hang would be judged by
    // it (found from outside: after 20 s of 11 s answers, then 30 s of fast ones, a hang was failed over after 30 s).
    if (tookMs < member.questionMs) member.questionMs = Math.max(tookMs, member.questionMs * QUESTION_DECAY);
    const wasClosed = member.breaker.state === "closed";
    member.breaker.success();
    if (!wasClosed && member.breaker.state === "closed") this.#log?.info({ network: this.name, upstream: member.upstream.label }, "upstream answering again: its circuit is closed");
    // Held open for the provider's Retry-After, the primary is not back yet: nothing is asked of it, and failover goes on.
    if (member === this.#members[0] && member.breaker.state === "closed") {
      this.#failingOver = false;
      this.#chains.primaryAnswered();
    }
    member.answeredAt = this.lastAnswerAt = now;
  }

  /** `silent`: the upstream left nodegate's chain id question unanswered, and nothing else was heard from it: its circuit opens at once. */
  #failed(member: Member, err: Error, silent = false): void {
    this.#outage();
    const wasClosed = member.breaker.state === "closed";
    const retryAfter = err instanceof GatewayError ? err.retryAfterSeconds : undefined;
    if (silent) member.breaker.trip();
    else member.breaker.failure(performance.now(), retryAfter === undefined ? undefined : retryAfter * 1000);
    const said = silent ? `${err.message} (its chain id question went unanswered, after calls did)` : err.message;
    member.lastFailure = said.startsWith(UNAVAILABLE_PREFIX) ? said.slice(UNAVAILABLE_PREFIX.length) : said;
    // Once per outage, at warn: with log.level warn an outage would otherwise leave no trace.
    if (wasClosed && member.breaker.state === "open") {
      member.openedAt = performance.now();
      this.#log?.warn({ network: this.name, upstream: member.upstream.label, err: said }, "upstream failing: its circuit is open, calls to it are paused");
      // Opened on its threshold (calls timing out on a hung primary): the calls still out on it that a partner may take
      // go there now, as when the chain id question finds it silent (found from outside: about 600 calls stayed
      // parked on the hung primary after its circuit opened, while the partner answered new ones in milliseconds).
      if (!silent && member === this.#members[0]) this.#handOverPrimaryCalls();
      // The rest still waiting for a connection to it fail unsent (see Http1Pool.failQueued); a silent one's, once
      // its calls are handed over (judge, in #askChainId).
      if (!silent) member.upstream.dropUnsent?.();
    }
    this.#metrics?.upstreamErrors.inc({ network: this.name, upstream: member.upstream.label, kind: "outage" });
  }

  /**
   * The primary was found silent: the calls out on it that a partner may take are cancelled there and go to a
   * partner now, rather than waiting out upstreamTimeoutMs on a node that answers nothing (found from outside: a
   * patient caller waited 30 s on a hung primary while impatient ones were already answered by the partner). Calls
   * no partner may take, writes among them, go on waiting: the node may still answer them.
   */
  #handOverPrimaryCalls(): void {
    if (this.#handOvers.size === 0) return;
    const partnerUp = this.#members.some((member, i) => i > 0 && member.breaker.state === "closed" && this.#chains.mayTakeCalls(i));
    if (!partnerUp) return;
    for (const handOver of this.#handOvers) handOver.handOver();
    this.#handOvers.clear();
  }

  /** Whether a partner whose circuit is closed may take this call if the primary cannot. */
  #partnerReady(method: string, options: NetworkCallOptions): boolean {
    return this.#mayFailOver(method, options) && this.#members.slice(1).some((partner) => partner.breaker.state === "closed");
  }

  async call(method: string, paramsText: string, options: NetworkCallOptions = {}): Promise<UpstreamResult> {
    if (options.ownRead === true) {
      const turn = this.#ownReads.turn(options.signal);
      if (turn !== undefined) await turn;
    }
    const primary = this.#members[0] as Member;
    const arrived = performance.now();
    let outage: unknown;
    let admitted = primary.breaker.state === "closed";
    let waitedMs = 0;
    if (!admitted) {
      // The primary is probed with nodegate's own question when its circuit lets one through, never with a caller's
      // call: a caller made the probe ran out its deadline on a hung primary, or upstreamTimeoutMs (found from
      // outside: with a partner, for 5 s of every 7; without one, a caller every cooldown waited 30 s).
      if (primary.breaker.allow()) this.#askChainId(primary);
      if (primary.breaker.probing && options.signal?.aborted !== true && !this.#partnerReady(method, options)) {
        // The probe's outcome decides for this call too (it waits a cooldown at most). A call a partner may answer
        // goes there instead of waiting (found from outside: such calls waited behind a silent primary).
        const waitFrom = performance.now();
        await primary.breaker.probeSettled();
        waitedMs = performance.now() - waitFrom;
        admitted = primary.breaker.state === "closed";
      }
    }
    if (admitted) {
      const handOver = this.#mayFailOver(method, options) ? new HandOver(options.signal) : undefined;
      if (handOver !== undefined) this.#handOvers.add(handOver);
      try {
        return await this.#try(primary, method, paramsText, handOver === undefined ? options : { ...options, signal: handOver }, waitedMs);
      } catch (err) {
        // Handed over (its own cancel's error), unless its own outage is what opened the circuit and handed the rest.
        if (handOver?.handedOver === true && !isOutage(err)) {
          outage = upstreamUnavailable("the primary upstream stopped answering (nodegate's chain id question went unanswered too); calls are paused while it recovers");
        } else {
          // The call's own deadline (eth_getLogs' query timeout) ran out on the primary: nothing is left for a partner,
          // and the primary is not in an outage.
          if (!isOutage(err) || options.signal?.aborted || (err instanceof GatewayError && ranOutOfOwnDeadline(err))) throw err;
          outage = err;
        }
      } finally {
        if (handOver !== undefined) {
          handOver.stop();
          this.#handOvers.delete(handOver);
        }
      }
    } else {
      // With what its last outage said: callers turned away by the circuit otherwise never learn why (found from
      // outside: a burst on a WebSocket node whose handshake hung heard only "calls are paused"; the cause was in the log).
      const why = primary.lastFailure === undefined ? "" : ` (its last failure: ${primary.lastFailure})`;
      outage = upstreamUnavailable(`the primary upstream is failing${why}; calls are paused while it recovers`, undefined, primary.breaker.retryAfterSeconds());
    }
    let partnerError: GatewayError | undefined;
    let partnersPaused = 0;
    if (this.#mayFailOver(method, options)) {
      for (const [i, partner] of this.#members.entries()) {
        if (i === 0 || !this.#chains.mayTakeCalls(i)) continue;
        if (partner.breaker.state !== "closed") {
          // A partner's circuit is probed with nodegate's own question too, never with a caller's call, which would
          // wait out its deadline on a partner still down.
          if (partner.breaker.allow()) this.#askChainId(partner);
          partnersPaused++;
          continue;
        }
        try {
          // The call's own deadline (eth_getLogs' query timeout) counts from its arrival, across upstreams; the
          // network's is each upstream call's.
          const spent = options.timeoutMs !== undefined && options.timeoutMs < this.#timeoutMs ? performance.now() - arrived : waitedMs;
          const result = await this.#try(partner, method, paramsText, options, spent);
          result.fromPartner = true;
          this.failovers++;
          this.#metrics?.failovers.inc({ network: this.name, upstream: partner.upstream.label });
          // At warn once per outage (until the primary answers again), then at debug: a busy failover would flood the log.
          const level = this.#failingOver ? "debug" : "warn";
          this.#failingOver = true;
          this.#log?.[level]({ network: this.name, method, upstream: partner.upstream.label }, "answered by a partner upstream during a primary outage (nodegate_upstream_failovers_total counts them)");
          return result;
        } catch (err) {
          if (!isOutage(err) || options.signal?.aborted || (err instanceof GatewayError && ranOutOfOwnDeadline(err))) throw err;
          partnerError = err as GatewayError;
        }
      }
    }
    throw withPartnerFailure(outage, partnerError, partnersPaused);
  }

  /** Asks each upstream which chain it serves, in the background (see PartnerChains). */
  learnChainIds(): void {
    this.#chains.learn();
  }

  /**
   * Whether some upstream of the network answers `method` (a node error is an
   * answer; "method not found" to the family's own chainId method is one too,
   * but says the node is of another family: methodUnknownAt names it when no
   * upstream answered better): the primary first, then each partner,
   * whatever the failover policy lets callers use. For readiness: a primary
   * outage is the same on every replica, so one that marked itself unready
   * while a partner answers would take every replica out of the load
   * balancer, failover and all.
   */
  async answersAny(method: string, timeoutMs: number): Promise<ProbeOutcome> {
    let unknownAt: string | undefined;
    for (const [i, member] of this.#members.entries()) {
      // A partner on another chain takes no calls: its answer says nothing of this network's readiness.
      if ((i > 0 && !this.#chains.mayTakeCalls(i)) || !member.breaker.allow()) continue;
      try {
        await this.#try(member, method, "[]", { timeoutMs, idempotent: true });
        return { answered: true };
      } catch (err) {
        if (err instanceof GatewayError && err.origin === "upstream" && err.code === METHOD_NOT_FOUND) unknownAt ??= member.upstream.label;
        else if (!isOutage(err)) return { answered: true };
      }
    }
    return unknownAt === undefined ? { answered: false } : { answered: true, methodUnknownAt: unknownAt };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#ownReads.close();
    for (const member of this.#members) clearTimeout(member.watchdog);
    await Promise.all(this.#members.map((m) => m.upstream.close()));
  }
}
