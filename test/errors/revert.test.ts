/**
 * The reason a typed caller gets in RevertError: decoded from the revert
 * data, as Solidity encodes it (Error(string), Panic(uint256)), and nothing
 * read past the data's end.
 */
import { Code } from "@connectrpc/connect";
import { encodeErrorResult } from "viem";
import { describe, expect, it } from "vitest";
import { GatewayError } from "../../src/errors/gateway-error.js";
import { decodeRevertReason, revertReason } from "../../src/errors/revert.js";

const PANIC = [{ type: "error", name: "Panic", inputs: [{ name: "code", type: "uint256" }] }] as const;
const ERROR = [{ type: "error", name: "Error", inputs: [{ name: "message", type: "string" }] }] as const;
const bytes = (hex: string) => Uint8Array.from(Buffer.from(hex.slice(2), "hex"));

describe("decodeRevertReason", () => {
  // Found by a mutation audit: dropping the panic names, or the bounds check, passed every test.
  it.each([
    [0x01n, "assert(false)"],
    [0x11n, "arithmetic underflow or overflow"],
    [0x12n, "division or modulo by zero"],
    [0x32n, "out-of-bounds access of an array or bytesN"],
    [0x99n, "panic code 0x99"],
  ])("Panic(%s) reads as Solidity names it", (code, reason) => {
    expect(decodeRevertReason(bytes(encodeErrorResult({ abi: PANIC, errorName: "Panic", args: [code] })))).toBe(reason);
  });

  it("Error(string) reads as its text; cut short, it reads as nothing rather than past its end", () => {
    const data = encodeErrorResult({ abi: ERROR, errorName: "Error", args: ["not enough tokens"] });
    expect(decodeRevertReason(bytes(data))).toBe("not enough tokens");
    expect(decodeRevertReason(bytes(data.slice(0, data.length - 64)))).toBeUndefined();
  });
});

describe("revertReason", () => {
  const reverted = (message: string, data: string) => new GatewayError({ code: 3, message, data: JSON.stringify(data), grpcCode: Code.FailedPrecondition, origin: "upstream" });
  const CUSTOM = [{ type: "error", name: "Custom", inputs: [{ name: "code", type: "uint256" }, { name: "text", type: "string" }] }] as const;

  it("a custom error reads as the node's text up to its argument bytes (Anvil writes them as text), never as NUL bytes", () => {
    // Found from outside: a Python client printed RevertError.reason as "custom error 0xf988f737: \x00\x00…".
    const data = encodeErrorResult({ abi: CUSTOM, errorName: "Custom", args: [7n, "custom error"] });
    const anvilText = `custom error ${data.slice(0, 10)}: ${Buffer.from(data.slice(10), "hex").toString("latin1")}`;
    expect(revertReason(reverted(`execution reverted: ${anvilText}`, data))).toBe(`custom error ${data.slice(0, 10)}`);
  });

  it("a readable reason from the node's text is kept whole, and one that is only bytes is none", () => {
    expect(revertReason(reverted("execution reverted: not owner\n(line 2)", "0xdeadbeef"))).toBe("not owner\n(line 2)");
    expect(revertReason(reverted("execution reverted: \u0000\u0001", "0xdeadbeef"))).toBeUndefined();
  });

  it("decoded data wins over the node's text", () => {
    const data = encodeErrorResult({ abi: ERROR, errorName: "Error", args: ["boom"] });
    expect(revertReason(reverted("execution reverted: something else", data))).toBe("boom");
  });
});
