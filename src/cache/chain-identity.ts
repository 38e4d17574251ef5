/**
 * What names a network's chain in a shared store's keys: the primary's chain
 * id and, on Ethereum networks, the first hex digits of its genesis block's
 * hash, asked once. Two dev chains under one chain id (two Anvils, both
 * 31337, sharing one Redis) differ in their genesis blocks; found from
 * outside, they served each other's blocks as final, as did an Anvil
 * restarted afresh and the process that had cached the one before.
 * Asked again when the node's finality went back (forget): a dev node
 * restarted afresh behind the same URL is another chain, whose answers a
 * process started after the restart names by its own genesis (found from
 * outside: the process that lived through the restart kept the old genesis in
 * its keys, so it never shared with one started after, on the same node).
 */
import { readResult, type UpstreamResult } from "../upstream/reply.js";

/** The longest the genesis question waits. */
const ASK_TIMEOUT_MS = 5000;
/** A genesis question that failed (the node unreachable) is asked again no sooner than this. */
const ASK_AGAIN_AFTER_MS = 1000;
/** Hex digits of the genesis hash kept in keys: enough to tell chains apart, short enough to keep keys small. */
const GENESIS_DIGITS = 16;

export type AskNode = (method: string, paramsText: string, options: { timeoutMs: number; idempotent: true }) => Promise<UpstreamResult>;

export class ChainIdentity {
  readonly #chainId: () => string | undefined;
  readonly #ask: AskNode | undefined;
  /** The genesis hash's first digits; "" when the node has none to give (no block 0); undefined until it answered. */
  #genesis: string | undefined;
  #asking = false;
  #askedAt = Number.NEGATIVE_INFINITY;
  /** Bumped by forget: an answer to a question asked before is not used. */
  #forgets = 0;

  /** `ask`: how to ask the primary for block 0 (Ethereum networks); undefined where the chain id alone names the chain. */
  constructor(chainId: () => string | undefined, ask: AskNode | undefined) {
    this.#chainId = chainId;
    this.#ask = ask;
  }

  /** The chain's name for keys; undefined until the node has said (asked for in the background meanwhile). */
  current(): string | undefined {
    const id = this.#chainId();
    if (this.#ask === undefined) return id;
    // Asked beside the chain id, not after it: the first cacheable calls pass the store until both are known.
    if (this.#genesis === undefined) this.#learn();
    if (id === undefined || this.#genesis === undefined) return undefined;
    return this.#genesis === "" ? id : `${id}:${this.#genesis}`;
  }

  /**
   * The node's finality went back (see ChainHead.onFinalityRewind): it may serve another chain now (a dev node
   * restarted afresh), so the genesis is asked again; the chain has no name until it answers (nothing is looked up or
   * stored meanwhile).
   */
  forget(): void {
    if (this.#ask === undefined) return;
    this.#forgets++;
    this.#genesis = undefined;
    this.#asking = false;
    this.#askedAt = Number.NEGATIVE_INFINITY;
  }

  #learn(): void {
    if (this.#asking || performance.now() - this.#askedAt < ASK_AGAIN_AFTER_MS || this.#ask === undefined) return;
    this.#asking = true;
    this.#askedAt = performance.now();
    const forgets = this.#forgets;
    this.#ask("eth_getBlockByNumber", '["0x0",false]', { timeoutMs: ASK_TIMEOUT_MS, idempotent: true })
      .then(
        (result) => {
          if (forgets !== this.#forgets) return;
          let hash: unknown;
          try {
            hash = (readResult(result, JSON.parse) as { hash?: unknown } | null)?.hash;
          } catch {
            hash = undefined;
          }
          this.#genesis = typeof hash === "string" && /^0x[0-9a-fA-F]{16,}$/.test(hash) ? hash.slice(2, 2 + GENESIS_DIGITS).toLowerCase() : "";
        },
        (err: unknown) => {
          // A node's error (no block 0 kept) is an answer: the chain id alone then. Unreachable: asked again later.
          if (forgets === this.#forgets && (err as { origin?: string }).origin === "upstream") this.#genesis = "";
        },
      )
      .finally(() => {
        if (forgets === this.#forgets) this.#asking = false;
      });
  }
}
