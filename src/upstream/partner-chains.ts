/**
 * Which chain each upstream of a network serves, asked once: a partner on
 * another chain than its primary's (a mainnet URL among testnet ones, a copy
 * and paste slip) never takes a failed-over call. Found from outside: such a
 * partner answered eth_chainId "0x5" on a network that had answered "0x7a69"
 * a moment before, and its blocks were stored in the cache as final, served
 * to every key once the primary was back.
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

interface Known {
  /** The chain id as a number's hex digits (eth_chainId's quantity, starknet_chainId's felt); undefined until answered. */
  chainId: string | undefined;
  asking: Promise<string | undefined> | undefined;
  askedAt: number;
}

export class PartnerChains {
  readonly #upstreams: readonly Upstream[];
  readonly #method: string;
  readonly #network: string;
  readonly #log: Logger | undefined;
  readonly #known: Known[];
  /** Partners already reported as on another chain, or as unchecked: each is said once. */
  readonly #reported = new Set<string>();

  constructor(network: string, family: ChainFamily, upstreams: readonly Upstream[], log: Logger | undefined) {
    this.#network = network;
    this.#upstreams = upstreams;
    this.#method = CHAIN_ID_METHOD[family];
    this.#log = log;
    this.#known = upstreams.map(() => ({ chainId: undefined, asking: undefined, askedAt: Number.NEGATIVE_INFINITY }));
  }

  /** Asks every upstream its chain id, in the background (at start, so a primary that fails early is known). */
  learn(): void {
    if (this.#upstreams.length < 2) return;
    // Judged once all have answered (or not), so a partner answering before its primary is not reported unchecked.
    void Promise.all(this.#upstreams.map((_, i) => this.#chainIdOf(i))).then(() => {
      for (let i = 1; i < this.#upstreams.length; i++) this.#verdict(i);
    });
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
    const primary = this.#known[0] as Known;
    const unanswered = primary.askedAt > Number.NEGATIVE_INFINITY && performance.now() - primary.askedAt >= PRIMARY_ASK_AGAIN_AFTER_MS;
    if (primary.chainId === undefined && primary.asking === undefined && unanswered) {
      primary.askedAt = Number.NEGATIVE_INFINITY;
      void this.#chainIdOf(0);
    }
    if (this.#upstreams.length < 2 || this.#known.every((k) => k.chainId !== undefined || k.asking !== undefined)) return;
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

  #verdict(index: number): boolean {
    const primary = (this.#known[0] as Known).chainId;
    const partner = (this.#known[index] as Known).chainId;
    if (index === 0 || primary === undefined || partner === undefined || primary === partner) {
      if (index > 0 && (primary === undefined || partner === undefined)) {
        const hex = (id: string | undefined) => (id === undefined ? undefined : `0x${id}`);
        this.#once(`unchecked ${index}`, "info", index, { primaryChainId: hex(primary), partnerChainId: hex(partner) }, "a partner's chain could not be checked against the primary's (one of them has not answered its chain id); it takes failed-over calls unchecked");
      }
      return true;
    }
    this.#once(`other chain ${index}`, "error", index, { primaryChainId: `0x${primary}`, partnerChainId: `0x${partner}` }, `a partner serves another chain than the primary's (${this.#method}): it takes no failed-over calls; check its URL`);
    return false;
  }

  #once(what: string, level: "info" | "error", index: number, fields: Record<string, unknown>, message: string): void {
    if (this.#reported.has(what)) return;
    this.#reported.add(what);
    this.#log?.[level]({ network: this.#network, upstream: this.#upstreams[index]?.label, ...fields }, message);
  }

  #chainIdOf(index: number): Promise<string | undefined> {
    const known = this.#known[index] as Known;
    if (known.chainId !== undefined) return Promise.resolve(known.chainId);
    if (known.asking === undefined && performance.now() - known.askedAt < ASK_AGAIN_AFTER_MS) return Promise.resolve(undefined);
    known.askedAt = performance.now();
    known.asking ??= this.#ask(index).finally(() => {
      known.asking = undefined;
    });
    return known.asking;
  }

  async #ask(index: number): Promise<string | undefined> {
    const known = this.#known[index] as Known;
    try {
      const result = await (this.#upstreams[index] as Upstream).call(this.#method, "[]", { timeoutMs: ASK_TIMEOUT_MS, idempotent: true });
      const id = JSON.parse(resultText(result)) as unknown;
      if (typeof id === "string" && /^0x[0-9a-fA-F]+$/.test(id)) known.chainId = BigInt(id).toString(16);
    } catch {
      // Not known yet: asked again, once ASK_AGAIN_AFTER_MS has passed, at start of a failed-over call.
    }
    return known.chainId;
  }
}
