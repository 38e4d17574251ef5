/**
 * gRPC-Web text bodies: base64 that may be several padded texts back to
 * back. The one-pass decoder reads every text as decoding it piece by piece
 * with Buffer did (the reference below, the code it replaced), and refuses
 * the same texts; a body of many tiny pieces costs what any body of its size
 * does (it took seconds, found from outside).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeBase64Pieces } from "../../src/codec/base64-pieces.js";

/** Split at every padding run, each piece checked and decoded by Buffer. */
function reference(body: Buffer): Buffer | undefined {
  const text = body.toString("latin1").replace(/\s+/g, "");
  const decoded: Buffer[] = [];
  for (const piece of text.split(/(?<==)(?=[^=])/)) {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(piece) || piece.length % 4 === 1) return undefined;
    decoded.push(Buffer.from(piece, "base64"));
  }
  return Buffer.concat(decoded);
}

const RUNS: fc.Parameters<unknown> = { seed: 0x62363470, numRuns: 2000 };

/** Base64 of random bytes, padded or not, in pieces, with whitespace and the odd stray character between. */
const bodies = fc
  .array(
    fc.record({
      bytes: fc.uint8Array({ maxLength: 12 }),
      unpadded: fc.boolean(),
      extraPads: fc.integer({ min: 0, max: 3 }),
      cut: fc.integer({ min: 0, max: 3 }),
      space: fc.constantFrom("", " ", "\r\n", "\t", "\u00a0"),
      stray: fc.constantFrom("", "", "", "=", "*", "-", "_", "A"),
    }),
    { maxLength: 8 },
  )
  .map((pieces) =>
    Buffer.from(
      pieces
        .map((p) => {
          let text = Buffer.from(p.bytes).toString("base64");
          if (p.unpadded) text = text.replace(/=+$/, "");
          text = text.slice(0, Math.max(0, text.length - p.cut)) + "=".repeat(p.extraPads);
          return `${text}${p.space}${p.stray}`;
        })
        .join(""),
      "latin1",
    ),
  );

describe("decodeBase64Pieces", () => {
  it("reads and refuses every text as decoding each padded piece with Buffer does", () => {
    fc.assert(
      fc.property(bodies, (body) => {
        const want = reference(body);
        const got = decodeBase64Pieces(body);
        if (want === undefined) expect(got).toBeUndefined();
        else expect(got?.toString("hex")).toBe(want.toString("hex"));
      }),
      RUNS,
    );
  });

  it("examples: pieces, whitespace, and what is not base64", () => {
    expect(decodeBase64Pieces(Buffer.from("QQ==QkM=RA"))?.toString()).toBe("ABCD");
    expect(decodeBase64Pieces(Buffer.from(" QU\nJD "))?.toString()).toBe("ABC");
    expect(decodeBase64Pieces(Buffer.from(""))?.length).toBe(0);
    expect(decodeBase64Pieces(Buffer.from("QQ==="))).toBeUndefined();
    expect(decodeBase64Pieces(Buffer.from("QUJDR"))).toBeUndefined();
    expect(decodeBase64Pieces(Buffer.from("QQ==*"))).toBeUndefined();
    expect(decodeBase64Pieces(Buffer.from("QQ-_"))).toBeUndefined();
  });

  it("5 MiB of four-character pieces decodes in one pass: as many bytes out as a plain body gives per character", () => {
    const body = Buffer.from("QQ==".repeat((5 * 1024 * 1024) / 4));
    const decoded = decodeBase64Pieces(body);
    expect(decoded?.length).toBe(body.length / 4);
    expect(decoded?.every((b) => b === 0x41)).toBe(true);
  });
});
