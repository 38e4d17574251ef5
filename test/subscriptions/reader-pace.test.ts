/**
 * ReaderPace: a burst bigger than the buffer does not make a reading client
 * slow; a client that takes nothing for the grace period does, and so does
 * four times the buffer whatever the pace.
 */
import { describe, expect, it } from "vitest";
import { ReaderPace } from "../../src/subscriptions/reader-pace.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("ReaderPace", () => {
  it("is patient within a burst: up to four times the buffer waiting, while the client took something lately", () => {
    const pace = new ReaderPace(10, 10_000);
    pace.progressed();
    expect(pace.tooSlow(9)).toBe(false);
    expect(pace.tooSlow(10)).toBe(false);
    expect(pace.tooSlow(39)).toBe(false);
    expect(pace.tooSlow(40)).toBe(true);
  });

  it("calls a client slow once the buffer is full and it took nothing for the grace period; taking one restarts the clock", async () => {
    const pace = new ReaderPace(10, 30);
    pace.progressed();
    await sleep(60);
    expect(pace.tooSlow(9)).toBe(false);
    expect(pace.tooSlow(10)).toBe(true);
    pace.progressed();
    expect(pace.tooSlow(10)).toBe(false);
  });
});
