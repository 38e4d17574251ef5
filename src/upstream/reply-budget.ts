/**
 * The bytes that node replies being read, and answers waiting for their
 * clients (held-answers.ts), hold over the process, and the most they may:
 * each is taken whole or dropped, so their sum stays bounded however many
 * calls run at once and however slowly clients read.
 */
export class ReplyBudget {
  readonly maxBytes: number;
  #held = 0;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  get held(): number {
    return this.#held;
  }

  /** Takes `bytes` when they fit; false (and nothing taken) when they would pass the budget. */
  take(bytes: number): boolean {
    if (this.#held + bytes > this.maxBytes) return false;
    this.#held += bytes;
    return true;
  }

  give(bytes: number): void {
    this.#held -= bytes;
  }
}
