/**
 * The hashes of the most recent canonical blocks a feed has passed, by
 * number: enough history to tell whether a new header continues the chain,
 * fills a gap, or comes from a reorganization (and where the fork is).
 */

export class BlockWindow {
  readonly #size: number;
  readonly #hashes = new Map<number, string>();
  #highest: number | undefined;

  /** `size`: how many blocks below the highest are remembered. */
  constructor(size: number) {
    this.#size = Math.max(1, size);
  }

  get highest(): { number: number; hash: string } | undefined {
    if (this.#highest === undefined) return undefined;
    return { number: this.#highest, hash: this.#hashes.get(this.#highest) as string };
  }

  /** The lowest remembered number, or undefined when the window is empty. */
  get lowest(): number | undefined {
    let lowest: number | undefined;
    for (const n of this.#hashes.keys()) if (lowest === undefined || n < lowest) lowest = n;
    return lowest;
  }

  hash(number: number): string | undefined {
    return this.#hashes.get(number);
  }

  /** The blocks remembered above `number`, lowest first. */
  above(number: number): { number: number; hash: string }[] {
    const blocks: { number: number; hash: string }[] = [];
    for (const [n, hash] of this.#hashes) if (n > number) blocks.push({ number: n, hash });
    return blocks.sort((a, b) => a.number - b.number);
  }

  /** Numbers remembered, highest first. */
  numbersDescending(): number[] {
    return [...this.#hashes.keys()].sort((a, b) => b - a);
  }

  /**
   * Records `hash` as the canonical block `number`, which becomes the
   * highest: blocks above it belonged to a branch that was replaced.
   */
  set(number: number, hash: string): void {
    this.truncateAbove(number);
    this.#hashes.set(number, hash);
    this.#highest = number;
    const floor = number - this.#size;
    if (this.#hashes.size > this.#size) {
      for (const n of this.#hashes.keys()) if (n <= floor) this.#hashes.delete(n);
    }
  }

  /**
   * Records `hash` as block `number` below the lowest remembered, when the
   * window has room for it (no more than `size` below the highest); whether
   * it did. The caller vouches that it links to the block above.
   */
  prepend(number: number, hash: string): boolean {
    const lowest = this.lowest;
    if (this.#highest === undefined || lowest === undefined || number !== lowest - 1 || this.#highest - number >= this.#size) return false;
    this.#hashes.set(number, hash);
    return true;
  }

  /** Forgets every block. */
  clear(): void {
    this.#hashes.clear();
    this.#highest = undefined;
  }

  /** Forgets every block above `number`. */
  truncateAbove(number: number): void {
    if (this.#highest === undefined || this.#highest <= number) return;
    for (const n of [...this.#hashes.keys()]) if (n > number) this.#hashes.delete(n);
    this.#highest = undefined;
    for (const n of this.#hashes.keys()) if (this.#highest === undefined || n > this.#highest) this.#highest = n;
  }
}
