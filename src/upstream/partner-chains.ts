/**
 * Which chain each upstream of a network serves: a partner on another chain
 * than its primary's (a mainnet URL among testnet ones, a copy and paste slip)
 * never takes a failed-over call. Found from outside: such a partner answered
 * eth_chainId "0x5" on a network that had answered "0x7a69" a moment before,
 * and its blocks were stored in the cache as final, served to every key once
 * the primary was back.
 *
 * Chain ids are not fixed for a process's life: a node behind the same URL
 * may restart on another chain (a dev node restarted with another chain id).
 * Found from outside: a primary restarted as chain 999 failed over to its
 * chain-31337 partner, whose blocks reached callers, and a partner judged on
 * another chain at start stayed refused after the primary came back on its
 * chain. So the primary's is asked again when the node's finality goes back
 * (forgetPrimary), and every answer is asked again once it is CHAIN_ID_MAX_AGE_MS
 * old, while the primary serves calls.
 */
import type { Logger } from "pino";
import type { ChainFamily } from "../methods/method-table.js";
import { resultText } from "./reply.js";
import type { Upstream } from "./upstream.js";

/** Each family's chain id method (readiness probes ask it too: health.ts). */
export const CHAIN_ID_METHOD = { eth: "eth_chainId", starknet: "starknet_chainId" } as const;

/** The longest a chain id question waits: it is asked at start, and before a partner's first failed-over call. */
const ASK_TIMEOUT_MS = 5000;
/** A chain id left unanswered is asked again no sooner than this: a partner that never says costs no wait per call. */
const ASK_AGAIN_AFTER_MS = 30_000;
/** The primary's, once it answers a call: it names the chain in the shared cache's keys. */
const PRIMARY_ASK_AGAIN_AFTER_MS = 1000;
/**
 * A chain id answered this long ago is asked again (in the background, the answer kept meanwhile) when the primary
 * answers a call: one question a minute per upstream, while calls flow.
 */
export const CHAIN_ID_MAX_AGE_MS = 60_000;

interface Known {
  /** The chain id as a number's hex digits (eth_chainId's quantity, starknet_chainId's felt); undefined until answered. */
  chainId: string | undefined;
  asking: Promise<string | undefined> | undefined;
  /** When it was last asked (answered or not): an answer is as old as its question. */
  askedAt: number;
  /** Bumped by forgetPrimary: an answer to a question asked before it is not used. */
  generation: number;
}

/** What a partner was last judged, so that each change is said once (and nothing while it stays). */
type Verdict = "same chain" | "other chain" | "unchecked";

export class PartnerChains {
  readonly #upstreams: readonly Upstream[];
  readonly #method: string;
  readonly #network: string;
  readonly #log: Logger | undefined;
  readonly #known: Known[];
  /** Each partner's last verdict (index 0, the primary, unused). */
  readonly #verdicts: (Verdict | undefined)[];
  readonly #maxAgeMs: number;

  constructor(network: string, family: ChainFamily, upstreams: readonly Upstream[], log: Logger | undefined, maxAgeMs = CHAIN_ID_MAX_AGE_MS) {
    this.#network = network;
    this.#upstreams = upstreams;
    this.#method = CHAIN_ID_METHOD[family];
    this.#log = log;
    this.#maxAgeMs = maxAgeMs;
    this.#known = upstreams.map(() => ({ chainId: undefined, asking: undefined, askedAt: Number.NEGATIVE_INFINITY, generation: 0 }));
    this.#verdicts = upstreams.map(() => undefined);
  }

  /** Asks every upstream its chain id, in the background (at start, so a primary that fails early is known). */
  learn(): void {
    if (this.#upstreams.length < 2) return;
    // Judged once all have answered (or not), so a partner answering before its primary is not reported unchecked.
    void Promise.all(this.#upstreams.map((_, i) => this.#chainIdOf(i))).then(() => this.#judgeAll());
  }

  /**
   * The node's finality went back (see ChainHead.onFinalityRewind): the primary may serve another chain now (a node
   * restarted afresh, perhaps with another chain id), so its chain id is asked again at once, and partners are judged
   * by the answer. Until it comes, partners take failed-over calls unchecked, as at start.
   */
  forgetPrimary(): void {
    const primary = this.#known[0] as Known;
    primary.generation++;
    primary.chainId = undefined;
    primary.asking = undefined;
    primary.askedAt = Number.NEGATIVE_INFINITY;
    void this.#chainIdOf(0).then(() => this.#judgeAll());
  }

  /** The primary's chain id (hex digits), asked for in the background when not known yet (see #chainIdOf); undefined until answered. */
  primaryChainId(): string | undefined {
    const known = (this.#known[0] as Known).chainId;
    if (known === undefined) void this.#chainIdOf(0);
    return known;
  }

  /** The primary answered a call: every chain id still unknown is asked (in the background), so partners are known before an outage. */
  primaryAnswered(): void {
    // The primary's own, unanswered at start (the node was down), is asked again as soon as the node answers, not
    // ASK_AGAIN_AFTER_MS later: the shared cache waits for it (found from outside: off for 28 s after the node came up).
    // Only one asked before and unanswered: one nobody asked for yet is asked when wanted.
    const now = performance.now();
    const primary = this.#known[0] as Known;
    const unanswered = primary.askedAt > Number.NEGATIVE_INFINITY && now - primary.askedAt >= PRIMARY_ASK_AGAIN_AFTER_MS;
    if (primary.chainId === undefined && primary.asking === undefined && unanswered) {
      primary.askedAt = Number.NEGATIVE_INFINITY;
      void this.#chainIdOf(0);
    }
    let stale = false;
    for (let i = 0; i < this.#known.length; i++) {
      const known = this.#known[i] as Known;
      // Judged by the last question, answered or not: one that failed is not asked again on every call.
      if (known.chainId !== undefined && known.asking === undefined && now - known.askedAt >= this.#maxAgeMs) {
        // Asked again with the answer kept meanwhile (a partner down now has not changed its chain for that).
        void this.#ask(i, known).then(() => this.#judgeAll());
        stale = true;
      }
    }
    if (stale || this.#upstreams.length < 2 || this.#known.every((k) => k.chainId !== undefined || k.asking !== undefined)) return;
    for (let i = 0; i < this.#upstreams.length; i++) void this.#chainIdOf(i);
  }

  /**
   * Whether partner `index` may take a failed-over call (or answer a readiness probe): not when it is known to serve
   * another chain than the primary's. A partner whose chain is not known yet (the primary never answered since the
   * start, or the partner does not answer the question) is let through, as before this check, and said so once; a
   * call never waits for the question (found from outside: a partner that never answered it held every failed-over
   * call 5 s).
   */
  mayTakeCalls(index: number): boolean {
    if ((this.#known[0] as Known).chainId !== undefined && (this.#known[index] as Known).chainId === undefined) void this.#chainIdOf(index);
    return this.#verdict(index);
  }

  #judgeAll(): void {
    for (let i = 1; i < this.#upstreams.length; i++) this.#verdict(i);
  }

  #verdict(index: number): boolean {
    if (index === 0) return true;
    const primary = (this.#known[0] as Known).chainId;
    const partner = (this.#known[index] as Known).chainId;
    const verdict: Verdict = primary === undefined || partner === undefined ? "unchecked" : primary === partner ? "same chain" : "other chain";
    const before = this.#verdicts[index];
    if (verdict !== before) {
      this.#verdicts[index] = verdict;
      const hex = (id: string | undefined) => (id === undefined ? undefined : `0x${id}`);
      const fields = { primaryChainId: hex(primary), partnerChainId: hex(partner) };
      if (verdict === "other chain") {
        this.#say("error", index, fields, `a partner serves another chain than the primary's (${this.#method}): it takes no failed-over calls; check its URL`);
      } else if (verdict === "unchecked") {
        this.#say("info", index, fields, "a partner's chain could not be checked against the primary's (one of them has not answered its chain id); it takes failed-over calls unchecked");
      } else if (before === "other chain") {
        this.#say("info", index, fields, "a partner judged on another chain now serves the primary's: it takes failed-over calls again");
      }
    }
    return verdict !== "other chain";
  }

  #say(level: "info" | "error", index: number, fields: Record<string, unknown>, message: string): void {
    this.#log?.[level]({ network: this.#network, upstream: this.#upstreams[index]?.label, ...fields }, message);
  }

  #chainIdOf(index: number): Promise<string | undefined> {
    const known = this.#known[index] as Known;
    if (known.chainId !== undefined) return Promise.resolve(known.chainId);
    if (known.asking === undefined && performance.now() - known.askedAt < ASK_AGAIN_AFTER_MS) return Promise.resolve(undefined);
    return this.#ask(index, known);
  }

  /** Asks upstream `index` its chain id (one question at a time); an answer replaces the one known, a failure keeps it. */
  #ask(index: number, known: Known): Promise<string | undefined> {
    if (known.asking !== undefined) return known.asking;
    known.askedAt = performance.now();
    const generation = known.generation;
    const asking = (async () => {
      try {
        const result = await (this.#upstreams[index] as Upstream).call(this.#method, "[]", { timeoutMs: ASK_TIMEOUT_MS, idempotent: true });
        const id = JSON.parse(resultText(result)) as unknown;
        if (generation === known.generation && typeof id === "string" && /^0x[0-9a-fA-F]+$/.test(id)) known.chainId = BigInt(id).toString(16);
      } catch {
        // Not known yet (or kept): asked again, once ASK_AGAIN_AFTER_MS has passed, at start of a failed-over call.
      }
      return known.chainId;
    })();
    known.asking = asking;
    void asking.finally(() => {
      if (known.asking === asking) known.asking = undefined;
    });
    return asking;
  }
}
