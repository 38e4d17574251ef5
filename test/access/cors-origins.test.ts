/**
 * cors.origins reads its entries as the key allowlists' origins do (found
 * from outside: "*.example.com" and "https://app.example.org/" passed
 * check-config but never matched a browser's Origin, so preflights got 405).
 */
import { describe, expect, it } from "vitest";
import { allowedOrigin } from "../../src/http/cors.js";

describe("cors.origins", () => {
  const origins = ["*.example.com", "https://app.example.org/", "http://localhost:3000"];

  it.each([
    ["https://app.example.com", "https://app.example.com"],
    ["https://a.b.example.com", "https://a.b.example.com"],
    ["https://app.example.org", "https://app.example.org"],
    ["http://localhost:3000", "http://localhost:3000"],
    ["http://app.example.org", undefined],
    ["https://example.com.evil.net", undefined],
    ["https://evilexample.com", undefined],
    ["http://localhost:3001", undefined],
  ])("Origin %s is answered with %s", (origin, allowed) => {
    expect(allowedOrigin(origins, origin)).toBe(allowed);
  });

  it("* allows any origin, and no entries none", () => {
    expect(allowedOrigin(["*"], "https://x.test")).toBe("*");
    expect(allowedOrigin([], "https://x.test")).toBeUndefined();
  });
});
