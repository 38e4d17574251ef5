/**
 * What nodegate knows about a network's head without a round trip per call:
 * the latest and pending blocks' gas limits, refreshed at most once per
 * `maxAgeMs` and fetched by one call however many callers ask at once.
 */
import type { Network } from "./network.js";
import { resultText } from "./reply.js";

interface Cached {
  value: bigint;
  at: number;
}

export class ChainHead {
  readonly #network: Network;
  readonly #maxAgeMs: number;
  readonly #cache = new Map<string, Cached>();
  readonly #inflight = new Map<string, Promise<bigint>>();

  constructor(network: Network, maxAgeMs = 12_000) {
    this.#network = network;
    this.#maxAgeMs = maxAgeMs;
  }

  /** The gas limit of the latest (or pending) block. */
  gasLimit(tag: "latest" | "pending"): Promise<bigint> {
    const cached = this.#cache.get(tag);
    if (cached !== undefined && Date.now() - cached.at < this.#maxAgeMs) return Promise.resolve(cached.value);
    let pending = this.#inflight.get(tag);
    if (pending === undefined) {
      pending = this.#fetch(tag).finally(() => this.#inflight.delete(tag));
      this.#inflight.set(tag, pending);
    }
    return pending;
  }

  async #fetch(tag: string): Promise<bigint> {
    const result = await this.#network.call("eth_getBlockByNumber", `["${tag}",false]`, { idempotent: true });
    const block = JSON.parse(resultText(result)) as { gasLimit?: string } | null;
    if (block === null || typeof block.gasLimit !== "string") throw new Error(`the ${tag} block has no gasLimit`);
    const value = BigInt(block.gasLimit);
    this.#cache.set(tag, { value, at: Date.now() });
    return value;
  }
}
