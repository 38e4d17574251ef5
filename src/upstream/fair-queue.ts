/**
 * Calls waiting for a connection to the node, taken in turns by flow (the
 * API key a call is for): one caller's thousand calls (a JSON-RPC batch's,
 * sent alone or, when they wait, as a few batches: WaitingBatches) do not all
 * go ahead of another caller's one. Within a flow, first come, first served.
 */
export interface Queued {
  readonly flow: string;
}

interface Node<T> {
  readonly item: T;
  prev: Node<T> | undefined;
  next: Node<T> | undefined;
}

/** One flow's calls, oldest first: linked, so a call leaves from anywhere at once. */
interface Line<T> {
  head: Node<T> | undefined;
  tail: Node<T> | undefined;
}

/**
 * Every operation costs the same however many calls wait (found from outside:
 * with arrays, 120 batches of 1,000 calls leaving one key's line together at
 * their deadline took a splice each, O(n²), and froze the process for 14 s).
 */
export class FairQueue<T extends Queued> {
  /** Insertion order is the rotation: the flow served last goes to the back. */
  readonly #flows = new Map<string, Line<T>>();
  readonly #nodes = new Map<T, Node<T>>();

  get size(): number {
    return this.#nodes.size;
  }

  push(item: T): void {
    let line = this.#flows.get(item.flow);
    if (line === undefined) {
      line = { head: undefined, tail: undefined };
      this.#flows.set(item.flow, line);
    }
    const node: Node<T> = { item, prev: line.tail, next: undefined };
    if (line.tail === undefined) line.head = node;
    else line.tail.next = node;
    line.tail = node;
    this.#nodes.set(item, node);
  }

  /** Ahead of every other call: one that was on its way already (sent again after its connection closed). */
  pushFirst(item: T): void {
    const line = this.#flows.get(item.flow) ?? { head: undefined, tail: undefined };
    this.#flows.delete(item.flow);
    const rest = [...this.#flows];
    this.#flows.clear();
    this.#flows.set(item.flow, line);
    for (const [flow, other] of rest) this.#flows.set(flow, other);
    const node: Node<T> = { item, prev: undefined, next: line.head };
    if (line.head === undefined) line.tail = node;
    else line.head.prev = node;
    line.head = node;
    this.#nodes.set(item, node);
  }

  shift(): T | undefined {
    for (const [flow, line] of this.#flows) {
      const node = line.head as Node<T>;
      this.#unlink(line, node);
      this.#flows.delete(flow);
      if (line.head !== undefined) this.#flows.set(flow, line);
      return node.item;
    }
    return undefined;
  }

  remove(item: T): void {
    const node = this.#nodes.get(item);
    const line = this.#flows.get(item.flow);
    if (node === undefined || line === undefined) return;
    this.#unlink(line, node);
    if (line.head === undefined) this.#flows.delete(item.flow);
  }

  /** Takes every waiting call out. */
  drain(): T[] {
    const all: T[] = [];
    for (const line of this.#flows.values()) for (let n = line.head; n !== undefined; n = n.next) all.push(n.item);
    this.#flows.clear();
    this.#nodes.clear();
    return all;
  }

  #unlink(line: Line<T>, node: Node<T>): void {
    if (node.prev === undefined) line.head = node.next;
    else node.prev.next = node.next;
    if (node.next === undefined) line.tail = node.prev;
    else node.next.prev = node.prev;
    node.prev = undefined;
    node.next = undefined;
    this.#nodes.delete(node.item);
  }
}
