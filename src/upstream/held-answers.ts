/**
 * Answers that wait in nodegate's memory, not yet gone to their client, count
 * in the same ReplyBudget as the node replies being read: a native batch's
 * answers wait for the rest of the batch, and any answer waits for a client
 * that reads slowly (or not at all) until its response or stream closes. The
 * budget bounded only replies being read, so clients that asked for large
 * answers and never read them could hold memory without bound.
 *
 * One answer that several calls send (from the cache's memory, shared by
 * coalesced callers, one typed encoding kept for all) counts once while any
 * of them holds it: what is counted is memory, not calls.
 *
 * Each key's callers may hold a part of the budget only
 * (limits.maxReplyBytesPerKey): one client that asks for large answers and
 * does not read them must leave room for every other key's (found from
 * outside: one HTTP/1.1 connection pipelining 260 eth_getLogs held 846 MB of
 * the 1 GiB budget, and another key's large answers were refused meanwhile).
 */
import { capacityExceeded, replyTooLarge } from "../errors/catalogue.js";
import type { GatewayError } from "../errors/gateway-error.js";
import type { ReplyBudget } from "./reply-budget.js";

/** Answers from this size on count; smaller ones (a balance, a write's hash) never wait or fail for it. */
export const HELD_FROM_BYTES = 64 * 1024;

/** What hold gives for an answer below HELD_FROM_BYTES: nothing to give back. */
const NOTHING_HELD = (): void => {};

/** Why hold refused an answer: the process's budget is full, the key holds its share of it, or it is larger than the whole budget. */
export type HoldRefused = "budget" | "key share" | "too large";

/** An answer held: by how many calls, and by how many of each key's. */
interface Holding {
  holders: number;
  byKey: Map<object, number>;
}

export class HeldAnswers {
  readonly #budget: ReplyBudget;
  readonly #keyMaxBytes: number;
  readonly #holdings = new Map<object, Holding>();
  /** The bytes each key's callers hold (each answer once per key). */
  readonly #keyBytes = new Map<object, number>();

  /** `keyMaxBytes`: the most one key's callers may hold (limits.maxReplyBytesPerKey); the whole budget by default. */
  constructor(budget: ReplyBudget, keyMaxBytes = budget.maxBytes) {
    this.#budget = budget;
    this.#keyMaxBytes = keyMaxBytes;
  }

  /**
   * The error a call gets in place of an answer hold refused (for `why`); `advice` says what the caller can do
   * about it.
   */
  refusal(what: string, advice = "", why: HoldRefused = "budget"): GatewayError {
    // An answer larger than the whole budget can never be held: retrying will not help (a WebSocket node's message is
    // not bounded by the budget as it is read, unlike an HTTP reply, which fails as it arrives).
    if (why === "too large") return replyTooLarge(`reply body larger than ${this.#budget.maxBytes} bytes`);
    if (why === "key share") {
      return capacityExceeded(`${what} would pass ${this.#keyMaxBytes} bytes held for this key's clients at once (limits.maxReplyBytesPerKey)${advice || "; read the answers already asked for before asking for more"}`);
    }
    return capacityExceeded(`${what} and the replies being read would pass ${this.#budget.maxBytes} bytes (limits.maxReplyBytesInFlight)${advice}`);
  }

  /**
   * Holds `bytes` for `answer` (the object whose memory they are; the same object gives the same size), for a call
   * of `key` when one is known, until the function returned is called, which gives them back once, after its last
   * holder; why it was refused, with nothing held, when they would pass the budget or the key's share of it.
   */
  hold(answer: object, bytes: number, key?: object): (() => void) | HoldRefused {
    if (bytes < HELD_FROM_BYTES) return NOTHING_HELD;
    if (bytes > this.#budget.maxBytes) return "too large";
    let holding = this.#holdings.get(answer);
    const keyHolds = key === undefined ? 0 : (holding?.byKey.get(key) ?? 0);
    const keyTakes = key !== undefined && keyHolds === 0;
    // A key holding nothing may take one answer larger than its share, as the budget allows: else such an answer would
    // be refused on every try (found from outside: with a 5 MiB share, a single 6 MB answer never came).
    const keyHeld = key === undefined ? 0 : (this.#keyBytes.get(key) ?? 0);
    if (keyTakes && keyHeld > 0 && keyHeld + bytes > this.#keyMaxBytes) return "key share";
    if (holding === undefined) {
      if (!this.#budget.take(bytes)) return "budget";
      holding = { holders: 0, byKey: new Map() };
      this.#holdings.set(answer, holding);
    }
    holding.holders++;
    if (key !== undefined) {
      holding.byKey.set(key, keyHolds + 1);
      if (keyTakes) this.#keyBytes.set(key, (this.#keyBytes.get(key) ?? 0) + bytes);
    }
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const h = holding as Holding;
      if (key !== undefined) {
        const left = (h.byKey.get(key) as number) - 1;
        if (left > 0) h.byKey.set(key, left);
        else {
          h.byKey.delete(key);
          const keyLeft = (this.#keyBytes.get(key) as number) - bytes;
          if (keyLeft > 0) this.#keyBytes.set(key, keyLeft);
          else this.#keyBytes.delete(key);
        }
      }
      if (--h.holders > 0) return;
      this.#holdings.delete(answer);
      this.#budget.give(bytes);
    };
  }
}
