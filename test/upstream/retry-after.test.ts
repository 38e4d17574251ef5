/** A provider's Retry-After, as nodegate reads it (src/upstream/http-upstream.ts): delay-seconds or an HTTP-date. */
import { describe, expect, it } from "vitest";
import { retryAfterSeconds } from "../../src/upstream/retry-after.js";

describe("retryAfterSeconds", () => {
  const now = Date.parse("Sun, 29 Nov 2026 04:00:00 GMT");
  it.each([
    ["7", 7],
    [" 120 ", 120],
    ["0", 0],
    // Found from outside: an HTTP-date (RFC 9110 allows it) was ignored.
    ["Sun, 29 Nov 2026 04:00:30 GMT", 30],
    ["Sun, 29 Nov 2026 03:59:00 GMT", 0],
    ["-1", undefined],
    ["soon", undefined],
    ["1.5", undefined],
    [undefined, undefined],
  ])("%s -> %s", (header, seconds) => {
    expect(retryAfterSeconds(header, now)).toBe(seconds);
  });
});

describe("retryAfterSeconds with an HTTP-date read between whole seconds", () => {
  // A date names a whole second and the clock has milliseconds: the seconds left are rounded up, or a caller (and the
  // circuit) would come back before the date the provider named, and be refused again. (The cases above read it on a
  // whole second, where rounding either way agrees.)
  const date = "Sun, 29 Nov 2026 04:00:30 GMT";
  const at = Date.parse(date);
  it.each([
    [29_001, 30],
    [29_500, 30],
    [29_999, 30],
    [30_000, 30],
    [300, 1],
    [1, 1],
  ])("read %d ms before the date: %d s", (before, seconds) => {
    expect(retryAfterSeconds(date, at - before)).toBe(seconds);
  });

  it("never tells a caller to come back before the date, nor a second after it", () => {
    for (let ms = 0; ms < 2000; ms += 37) {
      const now = at - 5000 - ms;
      const seconds = retryAfterSeconds(date, now) as number;
      expect(now + seconds * 1000, `read ${5000 + ms} ms before the date`).toBeGreaterThanOrEqual(at);
      expect(seconds * 1000 - (at - now)).toBeLessThan(1000);
    }
  });
});
