/**
 * A client that resumes from a block of its choosing: the gate joins the
 * live feed first (holding what it pushes), sends the history from the
 * resume point, then releases the held events, dropping the ones the
 * history already contained. The client sees one ordered sequence with
 * neither a gap nor a duplicate, and nothing older than its resume point.
 */
import { subscriberTooSlow } from "../errors/catalogue.js";
import type { GatewayError } from "../errors/gateway-error.js";
import { blockOf, type Consumer } from "./consumer.js";
import { type FeedEvent, logKey } from "./events.js";

function identity(event: FeedEvent): string {
  return event.kind === "log" ? logKey(event) : event.hash;
}

export class ResumeGate implements Consumer {
  readonly #target: Consumer;
  readonly #fromBlock: number;
  readonly #capacity: number;
  /** History events at or above this block are remembered, to drop their live copies. */
  readonly #rememberFrom: number;
  #held: FeedEvent[] | undefined = [];
  #sent = new Set<string>();

  /**
   * `rememberFrom`: the lowest block a held live event can be at (the feed's
   * position when the gate joined, less the reorganization window).
   */
  constructor(target: Consumer, fromBlock: number, capacity: number, rememberFrom: number) {
    this.#target = target;
    this.#fromBlock = fromBlock;
    this.#capacity = capacity;
    this.#rememberFrom = rememberFrom;
  }

  get ended(): boolean {
    return this.#target.ended;
  }

  push(event: FeedEvent): void {
    if (this.#target.ended) return;
    if (this.#held === undefined) {
      this.#forward(event);
      return;
    }
    if (this.#held.length >= this.#capacity) {
      this.#target.end(subscriberTooSlow(this.#held.length));
      this.#held = [];
      return;
    }
    this.#held.push(event);
  }

  ready(): Promise<void> {
    return this.#target.ready();
  }

  end(error: GatewayError): void {
    this.#target.end(error);
  }

  /** Sends one history event (waiting for room). */
  async deliverHistory(event: FeedEvent): Promise<void> {
    await this.#target.ready();
    if ((blockOf(event) ?? 0) >= this.#rememberFrom) this.#sent.add(identity(event));
    this.#target.push(event);
  }

  /** History is done: releases the held live events and passes the rest straight on. */
  release(): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const event of held) if (!this.#sent.has(identity(event))) this.#forward(event);
    this.#sent = new Set();
  }

  #forward(event: FeedEvent): void {
    const block = blockOf(event);
    if (block !== undefined && block < this.#fromBlock) return;
    this.#target.push(event);
  }
}
