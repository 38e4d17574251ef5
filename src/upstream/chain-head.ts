/**
 * What nodegate knows about a network's head without a round trip per call:
 * the latest and pending blocks' gas limits, refreshed at most once per
 * `maxAgeMs` and fetched by one call however many callers ask at once; and
 * the finalized block number (for the cache), fetched only when someone asks
 * and no more often than once per `finalizedMaxAgeMs`. No timers: nothing
 * runs after the network closes.
 */
import { decodeUint64, readingLeniently } from "../codec/hex.js";
import { GatewayError } from "../errors/gateway-error.js";
import { isOutage, type Network } from "./network.js";
import { readResult } from "./reply.js";

interface Cached {
  /** Undefined: the node has no gas limit for that tag (see gasLimit). */
  value: bigint | undefined;
  at: number;
}

export class ChainHead {
  readonly #network: Network;
  readonly #maxAgeMs: number;
  readonly #cache = new Map<string, Cached>();
  readonly #inflight = new Map<string, Promise<bigint | undefined>>();
  readonly #finalizedMaxAgeMs: number;
  #finalized: bigint | undefined;
  /** The hash of block #finalized when it was fetched: a reorg of final blocks changes it. */
  #finalizedHash: string | undefined;
  /** When the finalized number was last asked for (answered or not). */
  #finalizedAskedAt = Number.NEGATIVE_INFINITY;
  #finalizedFetch: Promise<void> | undefined;
  /** The refresh under way follows a long pause: callers wait for it rather than trust the old reading. */
  #refreshAfterPause = false;
  /**
   * The node answered the last reading with an error (or named no finalized block): the reading before it is kept,
   * to see a rewind by once readings come back, and not used meanwhile. Used, it could be served for as long as the
   * readings fail (found from outside: a dev chain rewound while its finalized reading failed was served stale for as
   * long as that lasted, where a reading at most twice finalizedMaxAgeMs old is the promise).
   */
  #readingFailed = false;
  readonly #rewindListeners: ((from: bigint, to: bigint) => void)[] = [];
  readonly #finalizedListeners: (() => void)[] = [];
  #onUnreadableGasLimit: ((tag: string, gasLimit: string) => void) | undefined;

  /**
   * `onUnreadableGasLimit`: told once, the first time a block comes with a gasLimit that is missing or spells no
   * uint64 (found from outside: the cap was then skipped without a word).
   */
  constructor(network: Network, maxAgeMs = 12_000, finalizedMaxAgeMs = 4_000, onUnreadableGasLimit?: (tag: string, gasLimit: string) => void) {
    this.#network = network;
    this.#maxAgeMs = maxAgeMs;
    this.#finalizedMaxAgeMs = finalizedMaxAgeMs;
    this.#onUnreadableGasLimit = onUnreadableGasLimit;
  }

  /**
   * The finalized block number as last fetched (a stale value is safe on a
   * real chain, where it only grows; a dev node's rewind is noticed at the
   * next refresh). Refreshes it in the background when it is older than
   * finalizedMaxAgeMs, so while calls keep coming nothing is judged on a
   * reading older than that plus one refresh. Waits for the first fetch, and
   * for a refresh after a pause of twice finalizedMaxAgeMs or more (a rewind
   * during the pause must not be served from what was stored before it).
   * Undefined when the node does not say (no "finalized" tag, or unreachable).
   */
  finalized(): bigint | undefined | Promise<bigint | undefined> {
    const age = performance.now() - this.#finalizedAskedAt;
    if (age >= this.#finalizedMaxAgeMs && this.#finalizedFetch === undefined) {
      this.#finalizedAskedAt = performance.now();
      this.#refreshAfterPause = this.#finalized !== undefined && age >= 2 * this.#finalizedMaxAgeMs;
      this.#finalizedFetch = this.#fetchFinalized().finally(() => {
        this.#finalizedFetch = undefined;
        this.#refreshAfterPause = false;
      });
    }
    if (this.#finalizedFetch !== undefined && (this.#finalized === undefined || this.#refreshAfterPause)) return this.#finalizedFetch.then(() => this.lastFinalized);
    return this.lastFinalized;
  }

  /** A refresh after a long pause is under way: the reading from before it must not be trusted until it is done. */
  get refreshingAfterPause(): boolean {
    return this.#refreshAfterPause;
  }

  /** How long the finalized block has been asked for (performance.now() ms), when a reading is under way. */
  get refreshOutForMs(): number {
    return this.#finalizedFetch === undefined ? 0 : performance.now() - this.#finalizedAskedAt;
  }

  /** The finalized block number as last fetched, without asking again; undefined until it has been learnt. */
  get lastFinalized(): bigint | undefined {
    return this.#readingFailed ? undefined : this.#finalized;
  }

  /** The finalized block as last fetched, with its hash; undefined until learnt, or while readings fail. */
  get finalizedBlock(): { number: bigint; hash: string } | undefined {
    if (this.#readingFailed || this.#finalized === undefined || this.#finalizedHash === undefined) return undefined;
    return { number: this.#finalized, hash: this.#finalizedHash };
  }

  /** The hash of block `number` on the node's chain; null when the node has no such block. Throws when it cannot say. */
  async hashAt(number: bigint): Promise<string | null> {
    const block = await this.#block(`"0x${number.toString(16)}"`);
    return block?.hash ?? null;
  }

  /** Called when a reading names another finalized block than the one before (see finalizedBlock). */
  onFinalizedMoved(listener: () => void): void {
    this.#finalizedListeners.push(listener);
  }

  /**
   * Called when blocks nodegate had seen as final changed: the node's
   * finalized block went back, or the block it called finalized before is no
   * longer on its chain (a reorg past finality, or a dev node's reset or deep
   * anvil_reorg, which a real chain never does).
   */
  onFinalityRewind(listener: (from: bigint, to: bigint) => void): void {
    this.#rewindListeners.push(listener);
  }

  async #fetchFinalized(): Promise<void> {
    let value: bigint;
    let hash: string | undefined;
    try {
      const block = await this.#block('"finalized"');
      if (block === undefined) {
        this.#readingFailed = true;
        return;
      }
      ({ value, hash } = block);
    } catch (err) {
      // A node that answers with an error: no finality known, nothing is looked up or stored until a reading comes
      // back. An outage leaves the reading as it was: nothing newer can be asked for meanwhile, what is stored keeps
      // answering, and a rewind (a dev node restarted afresh) is seen at the first reading after it.
      if (!isOutage(err)) this.#readingFailed = true;
      return;
    }
    const previous = this.#finalized;
    const previousHash = this.#finalizedHash;
    let rewound = previous !== undefined && value < previous && previousHash === undefined;
    if (!rewound && previous !== undefined && previousHash !== undefined) {
      // The block final before must still be there, under the same hash: one more call, only when finality moved.
      // Moved back, and the block is there: a node behind the same URL that lags the one read before (a load
      // balancer's backends, an epoch apart), not a rewind; the reading before stands (found from outside: each such
      // step dropped every stored answer). Not known there, or unreadable: taken for a rewind, to be safe.
      const back = value < previous;
      let then = hash;
      if (value !== previous) {
        try {
          then = (await this.#block(`"0x${previous.toString(16)}"`))?.hash;
        } catch (err) {
          // Moved on, and the block final before could not be read: whether it is still there is not known (a dev node
          // restarted afresh with more blocks has another block at that height). The reading is not taken, and nothing
          // is served until a reading checks that block again, whatever the failure: the node has just answered the
          // reading, so an outage of this one call (a front's 503 or 429, a reset) makes the stored answers no safer.
          // Taken as there, the old chain's stored answers were served for good (found from outside: after one failed
          // check, the chain's old hash was forgotten), and, kept as an outage, for as long as the check failed.
          if (!back) {
            this.#readingFailed = true;
            return;
          }
          then = undefined;
        }
      }
      rewound = then !== previousHash;
      if (back && !rewound) {
        this.#readingFailed = false;
        return;
      }
    }
    this.#finalized = value;
    this.#finalizedHash = hash;
    if (rewound && previous !== undefined) for (const listener of this.#rewindListeners) listener(previous, value);
    this.#readingFailed = false;
    if (value !== previous || hash !== previousHash) for (const listener of this.#finalizedListeners) listener();
  }

  /** A block's number and hash, by tag or number; undefined when the node has no such block. */
  async #block(id: string): Promise<{ value: bigint; hash: string | undefined } | undefined> {
    const result = await this.#network.call("eth_getBlockByNumber", `[${id},false]`, { idempotent: true });
    const block = readResult(result, JSON.parse) as { number?: unknown; hash?: unknown } | null;
    if (block === null || typeof block.number !== "string") return undefined;
    return { value: BigInt(block.number), hash: typeof block.hash === "string" ? block.hash : undefined };
  }

  /**
   * The gas limit of the latest (or pending) block; undefined when the node
   * gives none: some answer null for "pending" (reth), refuse the tag
   * (java-tron: -32602 "TAG pending not supported") or write no gasLimit,
   * and a gasLimit of 0 is no limit either (Anvil --gas-limit 0: found from
   * outside, a cap of 10 x 0 sent every eth_call with gas 0). Such a node
   * still answers the call itself, so the call goes without the bound rather
   * than fail on it. An outage still fails.
   */
  gasLimit(tag: "latest" | "pending"): Promise<bigint | undefined> {
    const cached = this.#cache.get(tag);
    if (cached !== undefined && performance.now() - cached.at < this.#maxAgeMs) return Promise.resolve(cached.value);
    let pending = this.#inflight.get(tag);
    if (pending === undefined) {
      pending = this.#fetch(tag).finally(() => this.#inflight.delete(tag));
      this.#inflight.set(tag, pending);
    }
    return pending;
  }

  async #fetch(tag: string): Promise<bigint | undefined> {
    let value: bigint | undefined;
    try {
      const result = await this.#network.call("eth_getBlockByNumber", `["${tag}",false]`, { idempotent: true, headReading: true });
      const block = readResult(result, JSON.parse) as { gasLimit?: unknown } | null;
      const gasLimit = block?.gasLimit;
      // Read as the value it spells, as the typed door reads results (a padded "0x01c9c380", a whole JSON number: found
      // from outside, the cap was skipped without a word), and only within uint64: a gas param above it no node reads.
      const spelled = readingLeniently(() => {
        try {
          return decodeUint64(gasLimit);
        } catch {
          return undefined;
        }
      });
      if (spelled !== undefined && spelled !== 0n) value = spelled;
      // Only the latest block's: an unreadable pending block falls back to the latest one, which then decides.
      else if (tag === "latest" && spelled === undefined && block !== null && typeof block === "object" && this.#onUnreadableGasLimit !== undefined) {
        const tell = this.#onUnreadableGasLimit;
        this.#onUnreadableGasLimit = undefined;
        tell(tag, gasLimit === undefined ? "(none)" : JSON.stringify(gasLimit).slice(0, 80));
      }
    } catch (err) {
      if (err instanceof GatewayError && err.outage) throw err;
    }
    this.#cache.set(tag, { value, at: performance.now() });
    return value;
  }
}
