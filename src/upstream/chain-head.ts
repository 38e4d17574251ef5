/**
 * What nodegate knows about a network's head without a round trip per call:
 * the latest and pending blocks' gas limits, refreshed at most once per
 * `maxAgeMs` and fetched by one call however many callers ask at once.
 */
import { upstreamBadResponse } from "../errors/catalogue.js";
import type { Network } from "./network.js";
import { resultText } from "./reply.js";

const QUANTITY = /^0x(0|[1-9a-fA-F][0-9a-fA-F]{0,63})$/;

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
    // A node's odd answer is the node's fault, said as such, not an internal error of the caller's request.
    let block: { gasLimit?: unknown } | null;
    try {
      block = JSON.parse(resultText(result)) as { gasLimit?: unknown } | null;
    } catch {
      throw upstreamBadResponse(`the ${tag} block is not JSON`);
    }
    const gasLimit = block?.gasLimit;
    if (typeof gasLimit !== "string" || !QUANTITY.test(gasLimit)) throw upstreamBadResponse(`the ${tag} block has no gasLimit quantity`);
    const value = BigInt(gasLimit);
    this.#cache.set(tag, { value, at: Date.now() });
    return value;
  }
}
