/**
 * The in-process cache store: a byte budget (keys at two bytes a character,
 * each value's backing memory, and the objects around them) enforced by
 * evicting the least recently used entries, TTLs on an injected clock, and
 * oversized values refused rather than flushing everything.
 */
import v8 from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { ENTRY_OVERHEAD_BYTES, MemoryCacheStore } from "../../src/cache/memory-cache-store.js";

const kb = (n: number, fill = 1) => Buffer.alloc(n * 1024, fill);
/** What a one-character key and an n KiB value cost. */
const entry = (n: number) => 2 + n * 1024 + ENTRY_OVERHEAD_BYTES;

describe("MemoryCacheStore", () => {
  it("evicts the least recently used entries once the byte budget is passed", () => {
    const store = new MemoryCacheStore({ maxBytes: 3 * entry(1) + 10, maxEntryBytes: entry(1) });
    store.set("a", kb(1, 1));
    store.set("b", kb(1, 2));
    store.set("c", kb(1, 3));
    expect(store.get("a")?.[0]).toBe(1); // a is now the most recently used
    store.set("d", kb(1, 4));
    expect(store.get("b")).toBeUndefined();
    expect(store.get("a")?.[0]).toBe(1);
    expect(store.get("c")?.[0]).toBe(3);
    expect(store.get("d")?.[0]).toBe(4);
    expect(store.bytes).toBeLessThanOrEqual(store.maxBytes);
    expect(store.bytes).toBe(3 * entry(1));
    expect(store.evictions).toBe(1);
  });

  it("counts a replaced value once", () => {
    const store = new MemoryCacheStore({ maxBytes: 10_000 });
    store.set("k", kb(2));
    store.set("k", kb(1));
    expect(store.size).toBe(1);
    expect(store.bytes).toBe(entry(1));
  });

  it("refuses a value larger than its share of the budget (a quarter by default) and keeps what it holds", () => {
    const store = new MemoryCacheStore({ maxBytes: 8 * entry(1) });
    store.set("small", kb(1));
    store.set("huge", kb(4));
    expect(store.get("huge")).toBeUndefined();
    expect(store.get("small")).toBeDefined();
    expect(store.evictions).toBe(0);
  });

  it("keeps a copy of a small slice, so a cached answer does not pin the whole buffer it was cut from", () => {
    const store = new MemoryCacheStore();
    const big = Buffer.alloc(64 * 1024, 7);
    store.set("k", big.subarray(100, 110));
    expect(store.get("k")?.buffer.byteLength).toBe(10);
    expect(store.bytes).toBe(2 + 10 + ENTRY_OVERHEAD_BYTES);
  });

  it("expires an entry after its TTL and frees its bytes", () => {
    let now = 1_000;
    const store = new MemoryCacheStore({ now: () => now });
    store.set("short", Buffer.from("x"), 100);
    store.set("forever", Buffer.from("y"));
    now += 99;
    expect(store.get("short")?.toString()).toBe("x");
    now += 1;
    expect(store.get("short")).toBeUndefined();
    expect(store.get("forever")?.toString()).toBe("y");
    expect(store.bytes).toBe(2 * "forever".length + 1 + ENTRY_OVERHEAD_BYTES); // the pooled one-byte value was copied out of its pool
  });

  it("deletes, and empties on close", async () => {
    const store = new MemoryCacheStore();
    store.set("a", Buffer.from("1"));
    store.set("b", Buffer.from("2"));
    store.delete("a");
    expect(store.get("a")).toBeUndefined();
    await store.close();
    expect(store.size).toBe(0);
    expect(store.bytes).toBe(0);
  });

  it("counts what its entries really hold: a budget full of small answers uses about that much memory", () => {
    v8.setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const used = () => {
      gc();
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers;
    };
    const store = new MemoryCacheStore({ maxBytes: 1 << 30 });
    const before = used();
    for (let i = 0; i < 50_000; i++) {
      // Keys and values as the cache writes them for eth_getBalance at a final block.
      const reply = Buffer.from(`{"jsonrpc":"2.0","id":1,"result":"0x${(i * 7919).toString(16)}"}`);
      store.set(`0\nethereum\neth_getBalance\n["0x${i.toString(16).padStart(40, "0")}","0x1c"]`, reply.subarray(27, reply.length - 1));
    }
    const held = used() - before;
    expect(held).toBeGreaterThan(store.bytes * 0.7);
    expect(held).toBeLessThan(store.bytes * 1.3);
  });
});
