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
