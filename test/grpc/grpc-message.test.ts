/**
 * grpc-message encoding: printable ASCII but "%" is sent as it is, anything
 * else percent-encoded as UTF-8 bytes, so both decodeURI (@grpc/grpc-js) and
 * decodeURIComponent (connect-es, gRPC-Web) give the message back exactly.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeGrpcMessage, reencodeGrpcMessage } from "../../src/grpc/grpc-message.js";

describe("grpc-message", () => {
  it("leaves printable ASCII alone, reserved characters included", () => {
    expect(encodeGrpcMessage("execution reverted: boom; a/b?c=d&e#f,g+h$i@j")).toBe("execution reverted: boom; a/b?c=d&e#f,g+h$i@j");
  });

  it("encodes %, control characters and non-ASCII as UTF-8 bytes", () => {
    expect(encodeGrpcMessage("100% done\n")).toBe("100%25 done%0A");
    expect(encodeGrpcMessage("wei Ξ")).toBe("wei %CE%9E");
  });

  it("encodes a space at either end, which an HTTP/2 field value cannot begin or end with", () => {
    expect(encodeGrpcMessage("execution reverted: ")).toBe("execution reverted:%20");
    expect(encodeGrpcMessage(" bad  news ")).toBe("%20bad  news%20");
    expect(encodeGrpcMessage(" ")).toBe("%20");
    expect(encodeGrpcMessage("")).toBe("");
  });

  it("reads back exactly with decodeURI and with decodeURIComponent", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 80 }), (message) => {
        const sent = encodeGrpcMessage(message);
        expect(decodeURI(sent)).toBe(message);
        expect(decodeURIComponent(sent)).toBe(message);
      }),
      { seed: 7, numRuns: 500 },
    );
  });

  it("re-encodes what Connect escaped with encodeURIComponent", () => {
    const message = "params[0]: want 20 bytes, got 19 (100%)";
    expect(reencodeGrpcMessage(encodeURIComponent(message))).toBe(encodeGrpcMessage(message));
    expect(reencodeGrpcMessage("%E0%A4%A")).toBe("%E0%A4%A"); // not decodable: left as it was
  });
});
