/**
 * A network's answer cache and in-flight coalescing, in front of its upstream
 * calls. Final answers (see finality-rule.ts) are served from the store;
 * identical concurrent calls share one upstream call. Keys are the network,
 * the method and the params text the node is sent (see invoke.ts), so calls
 * share an answer only when the node would see the same request; typed calls
 * and native calls spelled as the typed door encodes share across the doors.
 * Each caller's own id is written by its front door around the shared result.
 */
import { createHash } from "node:crypto";
import type { Message } from "@bufbuild/protobuf";
import { cancelled } from "../errors/catalogue.js";
import type { ChainHead } from "../upstream/chain-head.js";
import { resultAlone, type UpstreamResult } from "../upstream/reply.js";
import type { CacheStore } from "./store.js";
import { Coalescer } from "./coalescer.js";
import { SharedEpoch } from "./shared-epoch.js";
import type { FinalityRule, FinalityRules } from "./finality-rule.js";
import { type CallSignal, NEVER_CANCELLED } from "../call-signal.js";

export interface CallCacheOptions {
  network: string;
  /** Undefined: nothing is cached (coalescing may still apply). */
  store: CacheStore | undefined;
  /** Identical concurrent calls share one upstream call. */
  coalesce: boolean;
  /** ... if the one under way was sent less than this long ago (ms). */
  coalesceWindowMs?: number;
  rules: FinalityRules;
  head: ChainHead;
  /** The chain the network's primary serves (its chain id's hex digits), asked for when not known yet: undefined until it answers. */
  chainId?: (() => string | undefined) | undefined;
  /** How stale a shared store's rewind token may be (ms): ChainHead's finalizedMaxAgeMs. */
  epochMaxAgeMs?: number;
  /** Told when a shared store's recorded final block could not be checked against the node (see SharedEpoch). */
  onEpochUnchecked?: (err: unknown) => void;
}

export interface CallCacheStats {
  /** Answers served from the store. */
  hits: number;
  /** Cacheable calls the store could not answer. */
  misses: number;
  /** Answers put in the store. */
  stored: number;
  /** Calls that joined an identical call already under way. */
  joined: number;
  /** Times the whole store was set aside because finality went back (see ChainHead.onFinalityRewind). */
  dropped: number;
}

/** The most a call waits for a fresh finality reading after a long pause. */
const REFRESH_WAIT_MS = 200;

/** Params longer than this are keyed by their digest, so keys stay small. */
const LONG_PARAMS = 256;

/**
 * Calls whose params are longer than this (an eth_call with 64 KiB of
 * calldata) are neither cached nor shared: their key would cost a SHA-256
 * of the whole params on every call, for calls that seldom repeat.
 */
export const MAX_KEYED_PARAMS = 64 * 1024;

/** A call to the node; `onSent`, when given, is called once its request has left its flow's line (CallOptions.onSent). */
export type Fetch = (signal: CallSignal, onSent?: () => void) => Promise<UpstreamResult>;

/**
 * Answers at least this large (JSON bytes) that several calls get are
 * encoded (and compressed) once for all of them by the typed door
 * (UpstreamResult.encodings). A smaller one costs a few microseconds to
 * transcode, less than keeping its copy costs memory (about 190 bytes of
 * objects, more than a balance itself).
 */
const ENCODED_ONCE_BYTES = 1024;

/**
 * An answer that callers sharing one upstream call all get: the typed door
 * encodes it once for them (a block polled by many clients at once is
 * transcoded once, not once per caller).
 */
function shareable(result: UpstreamResult): UpstreamResult {
  if (result.end - result.start >= ENCODED_ONCE_BYTES) result.encodings ??= new Map();
  return result;
}

function isNull(result: UpstreamResult): boolean {
  return result.end - result.start === 4 && result.body.toString("latin1", result.start, result.end) === "null";
}

function isEmptyList(result: UpstreamResult): boolean {
  return result.end - result.start <= 64 && /^\[\s*\]$/.test(result.body.toString("latin1", result.start, result.end));
}

/**
 * Whether a shared store's answer is about a block the process vouched for under the token (`upTo`, see
 * SharedEpoch.vouchedUpTo; undefined for a store of its own). A lookup by hash is judged on the answer: the same
 * transaction sits in other blocks on two chains that split.
 */
function vouchedFor(stored: Buffer, rule: FinalityRule, upTo: bigint | undefined): boolean {
  if (upTo === undefined || rule.kind === "block") return true;
  const block = rule.blockOf({ body: stored, start: 0, end: stored.length });
  return block !== undefined && block <= upTo;
}

export class CallCache {
  readonly #network: string;
  readonly #store: CacheStore | undefined;
  readonly #coalescer: Coalescer<UpstreamResult> | undefined;
  readonly #rules: FinalityRules;
  readonly #head: ChainHead;
  readonly #chainId: (() => string | undefined) | undefined;
  /** Bumped when finality goes back, so every earlier entry of this network becomes unreachable. */
  #generation = 0;
  /** What a shared store's keys carry instead, agreed on by every process that uses the store. */
  readonly #sharedEpoch: SharedEpoch | undefined;
  readonly #stats = { hits: 0, misses: 0, stored: 0, dropped: 0 };
  /** What the typed door made of each stored answer it served (UpstreamResult.encodings), kept as long as the answer. */
  readonly #encodings = new WeakMap<Buffer, Map<object, Buffer>>();

  constructor(options: CallCacheOptions) {
    this.#network = options.network;
    this.#store = options.store;
    this.#coalescer = options.coalesce ? new Coalescer<UpstreamResult>(cancelled, options.coalesceWindowMs) : undefined;
    this.#rules = options.rules;
    this.#head = options.head;
    this.#chainId = options.chainId;
    const epochs = options.store?.shared === true ? options.store.epochs : undefined;
    this.#sharedEpoch = epochs && new SharedEpoch(epochs, options.head, options.epochMaxAgeMs ?? 4_000, options.onEpochUnchecked);
    options.head.onFinalityRewind(() => {
      this.#generation++;
      this.#sharedEpoch?.rewound();
      this.#stats.dropped++;
    });
  }

  /** Whether answers are stored once final (a store, and finality rules for the network's family). */
  get storesFinalAnswers(): boolean {
    return this.#store !== undefined && this.#rules.size > 0;
  }

  get stats(): CallCacheStats {
    return { ...this.#stats, joined: this.#coalescer?.joined ?? 0 };
  }

  /** The finality rule of a typed request, when its answer can become final. */
  rule(method: string, request: Message): FinalityRule | undefined {
    return this.#store === undefined ? undefined : this.#rules.get(method)?.(request);
  }

  /**
   * Answers a call: from the store when final and stored, else by `fetch`
   * (shared with identical calls under way), storing the answer when final.
   * `mayFailOver` separates callers whose failover rights differ (their plans, only where the network's failover
   * policy tells them apart: found from outside, keys of plans with the same rights did not share calls);
   * `flow` says whose line a call waits in (see Coalescer).
   */
  call(method: string, params: string, rule: FinalityRule | undefined, mayFailOver: boolean, fetch: Fetch, signal: CallSignal | undefined, flow = ""): Promise<UpstreamResult> {
    if (params.length > MAX_KEYED_PARAMS) return fetch(signal ?? NEVER_CANCELLED);
    const digest = params.length > LONG_PARAMS ? createHash("sha256").update(params).digest("base64") : params;
    // An answer that cannot be final (a call at "latest") is only shared: straight to the coalescer, without the
    // store's async path (its promise, and the turns taken to hand over the coalescer's).
    const store = this.#store;
    if (rule === undefined || store === undefined) {
      if (this.#coalescer === undefined) return fetch(signal ?? NEVER_CANCELLED);
      return this.#share(method, mayFailOver, digest, fetch, signal, flow);
    }
    return this.#callFinal(store, method, digest, rule, mayFailOver, fetch, signal, flow);
  }

  #share(method: string, mayFailOver: boolean, digest: string, answer: Fetch, signal: CallSignal | undefined, flow: string): Promise<UpstreamResult> {
    return (this.#coalescer as Coalescer<UpstreamResult>).run(`${this.#network}\n${method}\n${mayFailOver ? "failover" : ""}\n${digest}`, (s, onSent) => answer(s, onSent).then(shareable), signal, flow);
  }

  /** A call whose answer may be final: looked up, and stored once final (see call). */
  async #callFinal(store: CacheStore, method: string, digest: string, rule: FinalityRule, mayFailOver: boolean, fetch: Fetch, signal: CallSignal | undefined, flow: string): Promise<UpstreamResult> {
    let storeKey: string | undefined;
    let lookUpShared = false;
    /** A shared store's highest block this process vouched for under the token (see SharedEpoch.vouchedUpTo). */
    let upTo: bigint | undefined;
    let stance = this.#stance(rule);
    if (stance === "wait") {
      // After a long pause: what is stored may predate a rewind, so the fresh reading comes first (one small call;
      // not waited for longer than an answer would wait to be stored, in case the primary is failing). The wait
      // counts from the reading's start, not each call's: on a hung primary, the reading waits out its deadline,
      // and every call meanwhile waited 200 ms more (found from outside: for 28 s after a 2 s stall).
      const waitMs = REFRESH_WAIT_MS - this.#head.refreshOutForMs;
      if (waitMs > 0) await Promise.race([this.#head.finalized(), new Promise<void>((resolve) => setTimeout(resolve, waitMs).unref())]);
      stance = this.#stance(rule);
      if (stance === "wait") stance = "store later";
    }
    // A shared store may hold other deployments' answers under the same network name: its keys name the chain, and
    // nothing is looked up or stored there before the chain is known (found from outside: two deployments on one
    // Redis with the default prefix, one on chain 31337 and one on chain 5, served each other's blocks as final).
    const chain = store.shared === true ? this.#chainId?.() : "";
    // A shared store's answers carry the token every process agrees on (see SharedEpoch), not this process's count
    // of the rewinds it saw: nothing is looked up or stored there until it is known.
    let generation = chain === undefined ? undefined : this.#sharedEpoch === undefined ? this.#generation : this.#sharedEpoch.token(`${this.#network}:${chain}`);
    const firstReading = generation === undefined && chain !== undefined ? this.#sharedEpoch?.firstReading : undefined;
    if (firstReading !== undefined && stance !== "pass") {
      // Not waited for longer than a first finality reading is (the store or the node may be slow to say).
      await Promise.race([firstReading, new Promise<void>((resolve) => setTimeout(resolve, REFRESH_WAIT_MS).unref())]);
      generation = this.#sharedEpoch?.token(`${this.#network}:${chain}`);
    }
    if (generation === undefined) stance = "pass";
    if (this.#sharedEpoch !== undefined) {
      upTo = this.#sharedEpoch.vouchedUpTo;
      // Nothing vouched for yet: no stored answer could be used, and none is stored (a lookup by hash is judged on the answer).
      if (rule.kind === "block" ? rule.number > upTo : upTo < 0n) stance = "pass";
    }
    if (stance !== "pass") {
      storeKey = `${generation}\n${this.#network}\n${chain}\n${method}\n${digest}`;
      if (stance === "look up") {
        // A shared store is asked once for identical calls under way, with the node call it may save (found from
        // outside: 32 identical reads of a 1.3 MB block made 32 Redis GETs, 41 MiB out of Redis, each transcoded).
        if (store.shared === true && this.#coalescer !== undefined) lookUpShared = true;
        else {
          const stored = await store.get(storeKey);
          if (stored !== undefined && vouchedFor(stored, rule, upTo)) return this.#hit(stored);
          this.#stats.misses++;
        }
      }
    }
    const key = storeKey;
    const fetchAndStore: Fetch =
      key === undefined
        ? fetch
        : async (s, onSent) => {
            // Finality as known when the request goes: an answer about a block that becomes final only while the node
            // answers (a reorg moved it, and finality passed the new chain) must not be stored as final.
            const finalizedWhenSent = this.#head.lastFinalized;
            const result = await fetch(s, onSent);
            // Stored (in a shared store: sent) before the answer goes, so the next identical call finds it.
            await this.#storeIfFinal(key, rule, result, finalizedWhenSent, upTo);
            return result;
          };
    if (this.#coalescer === undefined) return fetchAndStore(signal ?? NEVER_CANCELLED);
    const answer: Fetch =
      lookUpShared && key !== undefined
        ? async (s, onSent) => {
            const stored = await store.get(key);
            if (stored !== undefined && vouchedFor(stored, rule, upTo)) return this.#hit(stored);
            this.#stats.misses++;
            return fetchAndStore(s, onSent);
          }
        : fetchAndStore;
    return this.#share(method, mayFailOver, digest, answer, signal, flow);
  }

  /** A stored answer, served. */
  #hit(stored: Buffer): UpstreamResult {
    this.#stats.hits++;
    // Checked to be JSON before it was stored (#storeIfFinal): not checked again before it is spliced among other answers.
    if (stored.length < ENCODED_ONCE_BYTES) return { body: stored, start: 0, end: stored.length, jsonChecked: true };
    return { body: stored, start: 0, end: stored.length, encodings: this.#encodingsOf(stored), jsonChecked: true };
  }

  /**
   * What the cache does for a call, decided without waiting (but after a
   * long pause, "wait" for a fresh finality reading first): look its answer
   * up (and store it once final: a lookup by hash is judged on the answer);
   * or nothing, for a block known not to be final, a node that names no
   * finalized block, finality still being learnt (an answer asked for
   * before the first reading came back is never stored: see #storeIfFinal)
   * or a last reading that failed (a rewind would go unseen).
   * Asking for finality also starts learning it.
   */
  #stance(rule: FinalityRule): "look up" | "store later" | "pass" | "wait" {
    const finalized = this.#head.finalized();
    if (this.#head.refreshingAfterPause) return "wait";
    if (typeof finalized !== "bigint") return "pass";
    return rule.kind === "result" || rule.number <= finalized ? "look up" : "pass";
  }

  #encodingsOf(stored: Buffer): Map<object, Buffer> {
    let encodings = this.#encodings.get(stored);
    if (encodings === undefined) {
      encodings = new Map();
      this.#encodings.set(stored, encodings);
    }
    return encodings;
  }

  /**
   * Stores `result` when the block it is about was final when its request
   * was sent (`finalizedWhenSent`, a reading that had come back by then). An
   * answer asked for before any reading came back is not stored: a reading
   * taken later cannot vouch for it (found from outside: a first reading slow
   * to come back was taken after a reorg had replaced the block and finality
   * had passed it, and the block as it was before was stored as final).
   */
  async #storeIfFinal(key: string, rule: FinalityRule, result: UpstreamResult, finalizedWhenSent: bigint | undefined, upTo: bigint | undefined): Promise<void> {
    try {
      const block = rule.kind === "result" ? rule.blockOf(result) : rule.number;
      const finalized = finalizedWhenSent;
      if (block === undefined || finalized === undefined || block > finalized || result.fromPartner === true) return;
      if (upTo !== undefined && block > upTo) return;
      // A null or an empty list may come from a lagging node (a final block it does not have yet, a log range past its
      // head): never kept, whatever the rule.
      if (isNull(result) || isEmptyList(result)) return;
      const alone = resultAlone(result);
      if (alone === undefined) return;
      const stored = this.#store?.set(key, alone.body.subarray(alone.start, alone.end));
      // A shared store's write is not waited for: the answer would wait on Redis again, after its lookup (found from
      // outside: up to three times stores.timeoutMs on a silent Redis). Sent on the connection the lookups use, it is
      // still found by the next identical call of this process. Counted once stored (a skipped write is no store).
      if (stored instanceof Promise) void stored.then((ok) => ok && this.#stats.stored++);
      else if (stored === true) this.#stats.stored++;
    } catch {
      // An answer that cannot be stored costs a future miss, never this call.
    }
  }
}
