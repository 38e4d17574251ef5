/**
 * A byte field of the wrong length says when its bytes are 0x hex read as
 * base64 (what grpcurl, buf curl and Connect JSON make of a JSON-RPC habit),
 * and only then.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { wrongByteCount } from "../../src/codec/byte-count.js";

describe("wrongByteCount", () => {
  it("names the hex text any 0x hex of 2 digits or more was read from", () => {
    fc.assert(
      fc.property(fc.constantFrom("0x", "0X"), fc.stringMatching(/^[0-9a-fA-F]{2,80}$/), (prefix, digits) => {
        const text = prefix + digits;
        const bytes = Buffer.from(text, "base64");
        const shown = text.length > 18 ? `${text.slice(0, 18)}…` : text;
        // The decoding drops the last character's spare bits: all but it are shown as written.
        const message = wrongByteCount("20 bytes", bytes);
        expect(message.startsWith(`want 20 bytes, got ${bytes.length}: these bytes are base64 of "${shown.slice(0, Math.min(shown.length, text.length - 1))}`), message).toBe(true);
        expect(message.endsWith('; in JSON, bytes are base64, not 0x hex')).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("says only the counts of other bytes", () => {
    expect(wrongByteCount("32 bytes", new Uint8Array(31))).toBe("want 32 bytes, got 31");
    expect(wrongByteCount("20 bytes", Buffer.from("d31e9de1c7badd00", "hex"))).toBe("want 20 bytes, got 8"); // base64 "0x6d4ce63QA=": not hex
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 64 }), (bytes) => {
        const text = Buffer.from(bytes).toString("base64").replace(/=+$/, "");
        if (/^0[xX]/.test(text)) return;
        expect(wrongByteCount("20 bytes", bytes)).toBe(`want 20 bytes, got ${bytes.length}`);
      }),
      { numRuns: 500 },
    );
  });
});
