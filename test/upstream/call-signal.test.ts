import { describe, expect, it } from "vitest";
import { CallCancellation, NEVER_CANCELLED } from "../../src/call-signal.js";

describe("CallCancellation", () => {
  it("tells each listener once, in order, and is aborted from then on", () => {
    const c = new CallCancellation();
    const seen: string[] = [];
    c.signal.addEventListener("abort", () => seen.push("a"), { once: true });
    c.signal.addEventListener("abort", () => seen.push("b"));
    expect(c.signal.aborted).toBe(false);
    c.abort();
    c.abort();
    expect(seen).toEqual(["a", "b"]);
    expect(c.signal.aborted).toBe(true);
  });

  it("does not call a removed listener, nor one added after the abort (as an AbortSignal)", () => {
    const c = new CallCancellation();
    const seen: string[] = [];
    const removed = () => seen.push("removed");
    c.signal.addEventListener("abort", removed);
    c.signal.removeEventListener("abort", removed);
    c.abort();
    c.signal.addEventListener("abort", () => seen.push("late"));
    const a = new AbortController();
    a.abort();
    a.signal.addEventListener("abort", () => seen.push("late AbortSignal"));
    expect(seen).toEqual([]);
  });

  it("holds any number of listeners (a batch of calls on one request)", () => {
    const c = new CallCancellation();
    let count = 0;
    const listeners = Array.from({ length: 5000 }, () => () => count++);
    for (const l of listeners) c.signal.addEventListener("abort", l);
    for (const l of listeners.slice(0, 1000)) c.signal.removeEventListener("abort", l);
    c.abort();
    expect(count).toBe(4000);
  });

  it("NEVER_CANCELLED is never aborted", () => {
    NEVER_CANCELLED.addEventListener("abort", () => {
      throw new Error("called");
    });
    expect(NEVER_CANCELLED.aborted).toBe(false);
  });
});
