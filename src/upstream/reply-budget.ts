/**
 * The bytes that replies being read hold, over every pool that shares it,
 * and the most they may: a reply is taken whole or dropped, so the sum of
 * replies in progress stays bounded however many calls run at once.
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
