/**
 * The reason a typed caller gets in RevertError: decoded from the revert
 * data, as Solidity encodes it (Error(string), Panic(uint256)), and nothing
 * read past the data's end.
 */
import { encodeErrorResult } from "viem";
import { describe, expect, it } from "vitest";
import { decodeRevertReason } from "../../src/errors/revert.js";

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
