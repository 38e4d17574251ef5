/**
 * The reads that fill gaps: headers by number or hash and logs by block
 * range, through the network (breaker, metrics, the WebSocket connection
 * when the upstream is one). eth_getLogs keeps the seed's limits here too,
 * so a backfill page that would exceed them is split, never sent to clients.
 */
import { Code } from "@connectrpc/connect";
import type { Limits } from "../config/config.js";
import { upstreamBadResponse } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { hasMoreLogsThan, queryTimeout, tooManyResults } from "../methods/policies/get-logs-limits.js";
import type { Network } from "../upstream/network.js";
import { readResult, resultText } from "../upstream/reply.js";
import { EventShapeError, type HeadEvent, type LogEvent, readHead, readLogs } from "./events.js";
import { type LogTopicFilter, logFilterJson } from "./topic.js";

/** How many headers are fetched at once when a gap spans many blocks. */
const PREFETCH_CONCURRENCY = 8;

function shapeError(method: string, err: unknown): unknown {
  return err instanceof EventShapeError ? upstreamBadResponse(`${method}: ${err.message}`, err) : err;
}

export class ChainReader {
  readonly #network: Network;
  readonly #limits: Limits;

  constructor(network: Network, limits: Limits) {
    this.#network = network;
    this.#limits = limits;
  }

  async #header(method: string, params: string): Promise<HeadEvent | undefined> {
    const result = await this.#network.call(method, params, { idempotent: true, ownRead: true });
    try {
      return readResult(result, (text) => (text === "null" ? undefined : readHead(text)));
    } catch (err) {
      throw shapeError(method, err);
    }
  }

  async latestHead(): Promise<HeadEvent> {
    const head = await this.#header("eth_getBlockByNumber", '["latest",false]');
    if (head === undefined) throw upstreamBadResponse("eth_getBlockByNumber: the node has no latest block");
    return head;
  }

  /** The number of the block a tag (latest, safe, finalized, earliest) names now. */
  async numberOfTag(tag: string): Promise<number> {
    const head = await this.#header("eth_getBlockByNumber", `["${tag}",false]`);
    if (head === undefined) throw upstreamBadResponse(`eth_getBlockByNumber: the node has no ${tag} block`);
    return head.number;
  }

  headByNumber(number: number): Promise<HeadEvent | undefined> {
    return this.#header("eth_getBlockByNumber", `["0x${number.toString(16)}",false]`);
  }

  /**
   * The hash of the node's genesis block (block 0), which names its chain: another one than before is a fresh chain
   * (a dev node restarted afresh, or another chain behind the URL), not a reorganization. Undefined when the node has
   * no block 0 to give, or answers one not numbered 0.
   */
  async genesisHash(): Promise<string | undefined> {
    const genesis = await this.headByNumber(0);
    return genesis?.number === 0 ? genesis.hash.toLowerCase() : undefined;
  }

  headByHash(hash: string): Promise<HeadEvent | undefined> {
    return this.#header("eth_getBlockByHash", `["${hash}",false]`);
  }

  /**
   * Fetches the headers of blocks from..to (as numbers resolve now) into `into`, by number, but for those it has;
   * missing ones are left out. A batch with a failed call throws once the headers it did get are in `into`: a node
   * serving only part of the calls (a rate limit) still lets the caller get on over several tries (found from
   * outside, h77: every try's whole batch was thrown away, and heads and logs stalled while the limit lasted).
   */
  async headsByNumber(from: number, to: number, into: Map<number, HeadEvent>): Promise<void> {
    const numbers: number[] = [];
    for (let n = from; n <= to; n++) if (!into.has(n)) numbers.push(n);
    for (let start = 0; start < numbers.length; start += PREFETCH_CONCURRENCY) {
      const batch = numbers.slice(start, start + PREFETCH_CONCURRENCY);
      let failure: unknown;
      for (const outcome of await Promise.allSettled(batch.map((n) => this.headByNumber(n)))) {
        if (outcome.status === "rejected") failure ??= outcome.reason;
        else if (outcome.value !== undefined) into.set(outcome.value.number, outcome.value);
      }
      if (failure !== undefined) throw failure;
    }
  }

  /** The latest block number. */
  async blockNumber(): Promise<number> {
    const result = await this.#network.call("eth_blockNumber", "[]", { idempotent: true, ownRead: true });
    const text = resultText(result);
    const m = /^"0x([0-9a-fA-F]{1,13})"$/.exec(text);
    if (m === null) throw upstreamBadResponse(`eth_blockNumber: ${text.slice(0, 40)} is not a block number`);
    return Number.parseInt(m[1] as string, 16);
  }

  /** One eth_getLogs over from..to, under the seed's result and time limits (errors -32005 otherwise). */
  async logs(filter: LogTopicFilter, from: number, to: number, capOneBlock = true): Promise<LogEvent[]> {
    let result;
    const sentAt = performance.now();
    try {
      result = await this.#network.call("eth_getLogs", `[${logFilterJson(filter, { from, to })}]`, {
        idempotent: true,
        ownRead: true,
        timeoutMs: this.#limits.getLogsTimeoutMs,
      });
    } catch (err) {
      // A node that answered other calls (or nodegate's liveness question) meanwhile, and was never seen down, took too
      // long over these logs, as a provider's own query timeout says; one silent, or seen down, had an outage, which
      // is not these logs refused (found from outside: a node that hung for a while after refusing a block's logs, the
      // retry sent into the hang ran out, and that ended every logs subscriber as the block refused again).
      const network = this.#network;
      if (err instanceof GatewayError && err.origin === "nodegate" && err.grpcCode === Code.DeadlineExceeded && network.heardFromSince(sentAt) && network.lastOutageAt < sentAt) {
        // Said as nodegate's limit: a subscriber ended for it read the node's own words otherwise (found from outside).
        throw queryTimeout(`nodegate's getLogsTimeoutMs, ${this.#limits.getLogsTimeoutMs} ms`);
      }
      throw err;
    }
    // A subscription feed cannot narrow one block further: its logs are what a node's own logs subscription pushes,
    // and refusing them would stall the feed on that block for good (capOneBlock false); StreamLogs keeps the error.
    if ((capOneBlock || to > from) && hasMoreLogsThan(result, this.#limits.getLogsMaxResults)) throw tooManyResults(this.#limits.getLogsMaxResults, undefined, undefined);
    try {
      return readLogs(result);
    } catch (err) {
      throw shapeError("eth_getLogs", err);
    }
  }
}
