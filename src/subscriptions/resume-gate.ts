/**
 * A client that resumes from a block of its choosing: the gate joins the
 * live feed first (holding what it pushes), sends the history from the
 * resume point, then releases the held events, dropping the ones the
 * history already contained. The client sees one ordered sequence with
 * neither a gap nor a duplicate, and nothing older than its resume point.
 *
 * At most `capacity` live events are held. Past that, while a long history
 * is still being sent, live events are let go and the history is sent again
 * from the lowest block they were at, in another round, until a round ends
 * with nothing let go (found from outside: a client reading as fast as the
 * history came was ended as too slow once the blocks mined meanwhile filled
 * the hold). Each later round reads at least up to the highest block let
 * go: a node pushes a block's logs before its head, so a round ending where
 * the feed's head is lost the logs let go above it (a CI run lost the last
 * one so). Removals are always held: they take back logs the client may
 * already have, which no later history would say.
 */
import type { CallSignal } from "../call-signal.js";
import { resumeOvertaken, subscriberTooSlow } from "../errors/catalogue.js";
import type { GatewayError } from "../errors/gateway-error.js";
import { blockOf, type Consumer } from "./consumer.js";
import { type FeedEvent, logKey } from "./events.js";
import type { Deliver } from "./feed.js";

/** History rounds a resume may take before its client is taken as slower than the chain: each round is overtaken again. */
export const MAX_HISTORY_ROUNDS = 16;

/**
 * A feed's history from a block (Feed.history), up to where the feed is and at least to `atLeastTo`: resolves with
 * the block it went up to.
 */
export type History = (fromBlock: number, deliver: Deliver, signal: CallSignal, atLeastTo: number | undefined) => Promise<number | undefined>;

/** The next history round: from a block, at least up to another. */
export interface Round {
  readonly from: number;
  readonly atLeastTo: number;
}

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
  /** The lowest block of a live event let go (the hold was full): the next history round starts there at the latest. */
  #letGoFrom: number | undefined;
  /** The highest block of a live event let go: the next history round goes up to it at least. */
  #letGoTo: number | undefined;

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
    const block = blockOf(event);
    // Older than the resume point: never passed on (#forward), so neither held nor fetched again. Let go, it started
    // the next round below the resume point, whose history sent the client blocks it did not ask for.
    if (block !== undefined && block < this.#fromBlock) return;
    if (this.#held.length >= this.#capacity && !(event.kind === "log" && event.removed) && block !== undefined) {
      this.#letGoFrom = Math.min(this.#letGoFrom ?? block, block);
      this.#letGoTo = Math.max(this.#letGoTo ?? block, block);
      // Its history waits for room, so its own queue never fills: a client that stopped reading is judged by what is
      // held for it too, as a live one is (found from outside: one that stopped mid-history was never ended).
      this.#target.judgePace?.(this.#held.length);
      return;
    }
    if (this.#held.length >= this.#capacity && block === undefined) {
      // An event with no block cannot be fetched again (none resumes today).
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

  /**
   * Sends the history from the resume point, in as many rounds as live events overtake it (see roundDone), then
   * releases the held events. Throws when MAX_HISTORY_ROUNDS were not enough.
   */
  async sendHistory(history: History, signal: CallSignal): Promise<void> {
    let next: Round | undefined = { from: this.#fromBlock, atLeastTo: this.#fromBlock };
    const deliver = (event: FeedEvent) => this.deliverHistory(event);
    for (let round = 1; next !== undefined && !signal.aborted; round++) {
      if (round > MAX_HISTORY_ROUNDS) throw resumeOvertaken(this.#fromBlock, MAX_HISTORY_ROUNDS);
      next = this.roundDone(await history(next.from, deliver, signal, round === 1 ? undefined : next.atLeastTo));
    }
  }

  /** Sends one history event (waiting for room), unless an earlier round sent it. */
  async deliverHistory(event: FeedEvent): Promise<void> {
    await this.#target.ready();
    if ((blockOf(event) ?? 0) >= this.#rememberFrom) {
      const id = identity(event);
      if (this.#sent.has(id)) return;
      this.#sent.add(id);
    }
    this.#target.push(event);
  }

  /**
   * A history round sent everything up to block `to` (undefined: there was nothing to send). Returns the next round,
   * when live events were let go meanwhile; else releases the held events (release()).
   */
  roundDone(to: number | undefined): Round | undefined {
    let from = this.#letGoFrom;
    let atLeastTo = this.#letGoTo;
    if (from === undefined || atLeastTo === undefined) {
      this.release();
      return undefined;
    }
    this.#letGoFrom = undefined;
    this.#letGoTo = undefined;
    // The next round sends again what the hold has, so the hold is emptied for the events that come meanwhile; only
    // removals stay (no history says them). A held event no round sent yet is the next round's to send.
    const removals: FeedEvent[] = [];
    for (const event of this.#held ?? []) {
      const block = blockOf(event);
      if (event.kind === "log" && event.removed) removals.push(event);
      else if (block !== undefined && !this.#sent.has(identity(event))) {
        from = Math.min(from, block);
        atLeastTo = Math.max(atLeastTo, block);
      }
    }
    this.#held = removals;
    return { from: Math.max(this.#fromBlock, to === undefined ? from : Math.min(to + 1, from)), atLeastTo };
  }

  /** History is done: releases the held live events and passes the rest straight on. */
  release(): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    const released = new Set<string>();
    for (const event of held) {
      const id = identity(event);
      if (this.#sent.has(id)) continue;
      // A removal of a log the client never got (let go from the hold, and replaced in a later round by its new
      // branch) would take back nothing it has.
      if (event.kind === "log" && event.removed) {
        const added = logKey({ ...event, removed: false });
        if (!this.#sent.has(added) && !released.has(added)) continue;
      }
      if (this.#forward(event)) released.add(id);
    }
    this.#sent = new Set();
  }

  /** Passes `event` on unless it is older than the resume point; whether it did. */
  #forward(event: FeedEvent): boolean {
    const block = blockOf(event);
    if (block !== undefined && block < this.#fromBlock) return false;
    this.#target.push(event);
    return true;
  }
}
