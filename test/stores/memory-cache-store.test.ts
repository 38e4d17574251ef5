/**
 * The in-process cache store: a byte budget enforced by evicting the least
 * recently used entries, TTLs on an injected clock, and oversized values
 * refused rather than flushing everything.
 */
import { describe, expect, it } from "vitest";
import { MemoryCacheStore } from "../../src/cache/memory-cache-store.js";

const kb = (n: number, fill = 1) => Buffer.alloc(n * 1024, fill);

describe("MemoryCacheStore", () => {
  it("evicts the least recently used entries once the byte budget is passed", () => {
    const store = new MemoryCacheStore({ maxBytes: 3 * 1024 + 10 });
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
    expect(store.bytes).toBe(3 * 1024 + 3);
  });

  it("counts a replaced value once", () => {
    const store = new MemoryCacheStore({ maxBytes: 10_000 });
    store.set("k", kb(2));
    store.set("k", kb(1));
    expect(store.size).toBe(1);
    expect(store.bytes).toBe(1024 + 1);
  });

  it("refuses a value larger than the budget and keeps what it holds", () => {
    const store = new MemoryCacheStore({ maxBytes: 2048 });
    store.set("small", kb(1));
    store.set("huge", kb(4));
    expect(store.get("huge")).toBeUndefined();
    expect(store.get("small")).toBeDefined();
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
    expect(store.bytes).toBe("forever".length + 1);
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
});
