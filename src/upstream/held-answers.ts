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
 */
import { replyBudgetExceeded } from "../errors/catalogue.js";
import type { GatewayError } from "../errors/gateway-error.js";
import type { ReplyBudget } from "./reply-budget.js";

/** Answers from this size on count; smaller ones (a balance, a write's hash) never wait or fail for it. */
export const HELD_FROM_BYTES = 64 * 1024;

/** What hold gives for an answer below HELD_FROM_BYTES: nothing to give back. */
const NOTHING_HELD = (): void => {};

export class HeldAnswers {
  readonly #budget: ReplyBudget;
  /** Each answer held, by identity: how many holders it has. */
  readonly #holders = new Map<object, number>();

  constructor(budget: ReplyBudget) {
    this.#budget = budget;
  }

  /** The error a call gets in place of an answer hold refused; `advice` says what the caller can do about it. */
  refusal(what: string, advice = ""): GatewayError {
    return replyBudgetExceeded(`${what} and the replies being read would pass ${this.#budget.maxBytes} bytes (limits.maxReplyBytesInFlight)${advice}`);
  }

  /**
   * Holds `bytes` for `answer` (the object whose memory they are; the same
   * object gives the same size) until the function returned is called, which
   * gives them back once, after its last holder; undefined, with nothing
   * held, when they would pass the budget.
   */
  hold(answer: object, bytes: number): (() => void) | undefined {
    if (bytes < HELD_FROM_BYTES) return NOTHING_HELD;
    const holders = this.#holders.get(answer);
    if (holders !== undefined) {
      this.#holders.set(answer, holders + 1);
    } else {
      if (!this.#budget.take(bytes)) return undefined;
      this.#holders.set(answer, 1);
    }
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const left = (this.#holders.get(answer) as number) - 1;
      if (left > 0) {
        this.#holders.set(answer, left);
        return;
      }
      this.#holders.delete(answer);
      this.#budget.give(bytes);
    };
  }
}
