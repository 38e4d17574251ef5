/**
 * The logs sent for recent blocks to some subscribers, by block number, and
 * taking them back (removed: true) when a reorganization replaces their
 * blocks. A logs feed keeps one for what it sends every subscriber, and one
 * per resuming client for the history only that client was sent, so that a
 * removal reaches the clients that got the log, and no other (found from
 * outside: live subscribers were sent removals of logs only a resuming
 * client had got).
 */
import { asRemoved, type LogEvent, logKey } from "./events.js";

interface SentBlock {
  hash: string;
  /** By log index. */
  logs: Map<number, LogEvent>;
}

export class SentLogs {
  readonly #blocks = new Map<number, SentBlock>();
  readonly #send: (removal: LogEvent) => void;

  /** `send`: how a removal reaches the subscribers this ledger is for. */
  constructor(send: (removal: LogEvent) => void) {
    this.#send = send;
  }

  /** The hash of the block at `number` whose logs were sent, if any were. */
  hashAt(number: number): string | undefined {
    return this.#blocks.get(number)?.hash;
  }

  has(log: LogEvent): boolean {
    const block = this.#blocks.get(log.blockNumber);
    return block !== undefined && block.hash === log.blockHash && block.logs.has(log.logIndex);
  }

  /** Every log recorded, as its key (events.ts logKey) with its block number. */
  *keys(): Generator<[string, number]> {
    for (const [number, block] of this.#blocks) for (const log of block.logs.values()) yield [logKey(log), number];
  }

  /** Records `log` as sent; the caller has taken back whatever another block at its height sent. */
  add(log: LogEvent): void {
    let block = this.#blocks.get(log.blockNumber);
    if (block === undefined || block.hash !== log.blockHash) {
      block = { hash: log.blockHash, logs: new Map() };
      this.#blocks.set(log.blockNumber, block);
    }
    block.logs.set(log.logIndex, log);
  }

  /** Forgets `log` (the node took it back itself). */
  forget(log: LogEvent): void {
    const block = this.#blocks.get(log.blockNumber);
    if (block?.hash !== log.blockHash) return;
    block.logs.delete(log.logIndex);
    if (block.logs.size === 0) this.#blocks.delete(log.blockNumber);
  }

  /**
   * Takes back the logs sent for blocks that these canonical headers
   * replaced. Blocks above the branch are judged when their height's header
   * comes (the node may push a block's logs before its header).
   */
  takeBackReplaced(branch: readonly { number: number; hash: string }[]): void {
    for (const header of branch) {
      const hash = this.hashAt(header.number);
      if (hash !== undefined && hash !== header.hash) this.takeBack(header.number);
    }
  }

  /** Takes back the logs sent for the blocks a shorter branch left out (with their old hashes). */
  takeBackDropped(dropped: readonly { number: number; hash: string }[]): void {
    for (const block of dropped) if (this.hashAt(block.number) === block.hash) this.takeBack(block.number);
  }

  /** Takes back the logs sent for every block above `number`, lowest first. */
  takeBackAbove(number: number): void {
    let lowest: number | undefined;
    for (const n of this.#blocks.keys()) if (n > number && (lowest === undefined || n < lowest)) lowest = n;
    if (lowest !== undefined) this.takeBackFrom(lowest);
  }

  /** Takes back the logs sent for block `number` and every block above it, lowest first. */
  takeBackFrom(number: number): void {
    const above = [...this.#blocks.keys()].filter((n) => n > number).sort((a, b) => a - b);
    this.takeBack(number);
    for (const n of above) this.takeBack(n);
  }

  /** Sends removed: true for every log sent for block `number`, in log order. */
  takeBack(number: number): void {
    const block = this.#blocks.get(number);
    if (block === undefined) return;
    this.#blocks.delete(number);
    for (const index of [...block.logs.keys()].sort((a, b) => a - b)) this.#send(asRemoved(block.logs.get(index) as LogEvent));
  }

  forgetBefore(number: number): void {
    for (const n of this.#blocks.keys()) if (n < number) this.#blocks.delete(n);
  }

  clear(): void {
    this.#blocks.clear();
  }
}
