/**
 * Calls waiting for a connection to the node, taken in turns by flow (the
 * API key a call is for): one caller's thousand calls (a JSON-RPC batch is
 * sent member by member) do not all go ahead of another caller's one. Within
 * a flow, first come, first served.
 */
export interface Queued {
  readonly flow: string;
}

export class FairQueue<T extends Queued> {
  /** Insertion order is the rotation: the flow served last goes to the back. */
  readonly #flows = new Map<string, T[]>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  push(item: T): void {
    const waiting = this.#flows.get(item.flow);
    if (waiting === undefined) this.#flows.set(item.flow, [item]);
    else waiting.push(item);
    this.#size++;
  }

  /** Ahead of every other call: one that was on its way already (sent again after its connection closed). */
  pushFirst(item: T): void {
    const waiting = this.#flows.get(item.flow);
    this.#flows.delete(item.flow);
    const rest = [...this.#flows];
    this.#flows.clear();
    this.#flows.set(item.flow, waiting === undefined ? [item] : [item, ...waiting]);
    for (const [flow, items] of rest) this.#flows.set(flow, items);
    this.#size++;
  }

  shift(): T | undefined {
    for (const [flow, waiting] of this.#flows) {
      const item = waiting.shift() as T;
      this.#flows.delete(flow);
      if (waiting.length > 0) this.#flows.set(flow, waiting);
      this.#size--;
      return item;
    }
    return undefined;
  }

  remove(item: T): void {
    const waiting = this.#flows.get(item.flow);
    const i = waiting?.indexOf(item) ?? -1;
    if (waiting === undefined || i < 0) return;
    waiting.splice(i, 1);
    if (waiting.length === 0) this.#flows.delete(item.flow);
    this.#size--;
  }

  /** Takes every waiting call out. */
  drain(): T[] {
    const all = [...this.#flows.values()].flat();
    this.#flows.clear();
    this.#size = 0;
    return all;
  }
}
