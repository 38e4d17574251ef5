/** FairQueue: flows take turns; within a flow, first come first served; removal and draining keep the count. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FairQueue } from "../../src/upstream/fair-queue.js";

interface Item {
  flow: string;
  n: number;
}

describe("FairQueue", () => {
  it("takes one item per flow in turn, each flow in its own order", () => {
    const q = new FairQueue<Item>();
    for (let n = 0; n < 3; n++) q.push({ flow: "a", n });
    q.push({ flow: "b", n: 0 });
    q.push({ flow: "c", n: 0 });
    q.push({ flow: "b", n: 1 });
    const taken: string[] = [];
    for (let item = q.shift(); item !== undefined; item = q.shift()) taken.push(`${item.flow}${item.n}`);
    expect(taken).toEqual(["a0", "b0", "c0", "a1", "b1", "a2"]);
    expect(q.size).toBe(0);
  });

  it("pushFirst puts an item ahead of every flow; remove and drain keep the size right", () => {
    const q = new FairQueue<Item>();
    const a1 = { flow: "a", n: 1 };
    q.push({ flow: "a", n: 0 });
    q.push(a1);
    q.push({ flow: "b", n: 0 });
    q.pushFirst({ flow: "b", n: -1 });
    expect(q.size).toBe(4);
    expect(q.shift()).toEqual({ flow: "b", n: -1 });
    q.remove(a1);
    q.remove(a1); // twice: no effect
    expect(q.size).toBe(2);
    expect(q.drain().map((i) => `${i.flow}${i.n}`).sort()).toEqual(["a0", "b0"]);
    expect(q.size).toBe(0);
    expect(q.shift()).toBeUndefined();
  });

  it("any mix of push, pushFirst, remove and shift serves what a plain list per flow would", () => {
    // The queue links its items so a call leaves from anywhere at once (found from outside: array splices froze the
    // process for 14 s when 120,000 queued calls left together); this is the rotation it must keep.
    class Model {
      flows = new Map<string, Item[]>();
      push(i: Item) {
        const w = this.flows.get(i.flow);
        if (w) w.push(i);
        else this.flows.set(i.flow, [i]);
      }
      pushFirst(i: Item) {
        const w = this.flows.get(i.flow) ?? [];
        this.flows.delete(i.flow);
        this.flows = new Map([[i.flow, [i, ...w]], ...this.flows]);
      }
      shift(): Item | undefined {
        for (const [flow, w] of this.flows) {
          const item = w.shift();
          this.flows.delete(flow);
          if (w.length > 0) this.flows.set(flow, w);
          return item;
        }
        return undefined;
      }
      remove(i: Item) {
        const w = this.flows.get(i.flow);
        const k = w?.indexOf(i) ?? -1;
        if (!w || k < 0) return;
        w.splice(k, 1);
        if (w.length === 0) this.flows.delete(i.flow);
      }
      get size() {
        return [...this.flows.values()].reduce((n, w) => n + w.length, 0);
      }
    }
    const op = fc.oneof(
      fc.record({ kind: fc.constant("push" as const), flow: fc.constantFrom("a", "b", "c") }),
      fc.record({ kind: fc.constant("pushFirst" as const), flow: fc.constantFrom("a", "b", "c") }),
      fc.record({ kind: fc.constant("shift" as const) }),
      fc.record({ kind: fc.constant("remove" as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 150 }), (ops) => {
        const q = new FairQueue<Item>();
        const model = new Model();
        const pushed: Item[] = [];
        ops.forEach((o, n) => {
          if (o.kind === "push" || o.kind === "pushFirst") {
            const item = { flow: o.flow, n };
            pushed.push(item);
            q[o.kind](item);
            model[o.kind](item);
          } else if (o.kind === "shift") {
            expect(q.shift()).toBe(model.shift());
          } else if (pushed.length > 0) {
            const item = pushed[o.pick % pushed.length] as Item;
            q.remove(item);
            model.remove(item);
          }
          expect(q.size).toBe(model.size);
        });
        const rest = q.drain();
        expect(rest.map((i) => i.n).sort((x, y) => x - y)).toEqual([...model.flows.values()].flat().map((i) => i.n).sort((x, y) => x - y));
      }),
    );
  });

  it("never loses, repeats or reorders a flow's items, and never lets a flow wait more turns than there are flows", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom("a", "b", "c", "d"), { maxLength: 200 }), (flows) => {
        const q = new FairQueue<Item>();
        flows.forEach((flow, n) => q.push({ flow, n }));
        const taken: Item[] = [];
        for (let item = q.shift(); item !== undefined; item = q.shift()) taken.push(item);
        expect(taken.map((i) => i.n).sort((x, y) => x - y)).toEqual(flows.map((_, n) => n));
        for (const flow of new Set(flows)) {
          const mine = taken.filter((i) => i.flow === flow).map((i) => i.n);
          expect(mine).toEqual([...mine].sort((x, y) => x - y));
        }
        // While a flow still has items, at most (flows - 1) others are served between two of its items.
        const distinct = new Set(flows).size;
        for (const flow of new Set(flows)) {
          const at = taken.flatMap((i, k) => (i.flow === flow ? [k] : []));
          for (let k = 1; k < at.length; k++) expect((at[k] as number) - (at[k - 1] as number)).toBeLessThanOrEqual(distinct);
        }
      }),
    );
  });
});
