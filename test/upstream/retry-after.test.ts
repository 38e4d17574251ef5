/** A provider's Retry-After, as nodegate reads it (src/upstream/http-upstream.ts): delay-seconds or an HTTP-date. */
import { describe, expect, it } from "vitest";
import { retryAfterSeconds } from "../../src/upstream/http-upstream.js";

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
