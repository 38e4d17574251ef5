/**
 * The typed door reads a node's non-canonical hex as the value it spells
 * (found from outside: one padded signature made the whole block -32053,
 * while the native door forwarded it): quantities with leading zeros, data
 * with an odd digit count, an upper-case 0X. What cannot be read as a value
 * still fails.
 */
import { describe, expect, it } from "vitest";
import { CodecError } from "../../src/codec/codec-error.js";
import { canonicalSpelling, decodeRespelling } from "../../src/codec/lenient-result.js";
import { BlockSchema } from "../../gen/nodegate/eth/v1/block_pb.js";
import { createCodecRegistry, createMethodTable } from "../../src/methods/default-table.js";

const table = createMethodTable();
const decode = (method: string, json: unknown) => {
  const spec = table.byJsonRpc(method);
  if (spec === undefined) throw new Error(method);
  return decodeRespelling((v) => spec.result.decode(v), json, "result", JSON.stringify(json).length) as unknown as Record<string, unknown>;
};

const hash = (b: string) => `0x${b.repeat(32)}`;
const tx = (over: Record<string, unknown> = {}) => ({
  hash: hash("11"),
  nonce: "0x1",
  blockHash: hash("22"),
  blockNumber: "0x10",
  transactionIndex: "0x0",
  from: `0x${"33".repeat(20)}`,
  to: null,
  value: "0x0",
  gas: "0x5208",
  gasPrice: "0x1",
  input: "0x",
  v: "0x1b",
  r: "0x1",
  s: "0x1",
  ...over,
});

describe("non-canonical hex in a node's result", () => {
  it("a quantity with leading zeros reads as its value (a padded r, a nonce of 0x01)", () => {
    const decoded = decode("eth_getTransactionByHash", tx({ r: `0x0a${"3c".repeat(31)}`, nonce: "0x0001" })) as { transaction?: { r?: { value: Uint8Array }; nonce?: bigint } };
    expect(decoded.transaction?.nonce).toBe(1n);
    expect(Buffer.from(decoded.transaction?.r?.value ?? []).toString("hex")).toBe(`0a${"3c".repeat(31)}`);
  });

  it("a block nonce of 0x0 and an upper-case 0X read as the values they spell; so do many fields at once", () => {
    const transactions = Array.from({ length: 20 }, (_, i) => tx({ hash: `0x${i.toString(16).padStart(64, "0")}`, transactionIndex: `0x0${i.toString(16)}`, value: "0X10" }));
    const decoded = decode("eth_getBlockByNumber", { number: "0x10", hash: hash("aa"), nonce: "0x0", timestamp: "0x0066b5a1b3", transactions }) as {
      block?: { nonce?: Uint8Array; timestamp?: bigint; transactions?: { full: { value?: { value: Uint8Array }; transactionIndex?: bigint }[] } };
    };
    expect(Buffer.from(decoded.block?.nonce ?? []).toString("hex")).toBe("00".repeat(8));
    expect(decoded.block?.timestamp).toBe(0x66b5a1b3n);
    const full = decoded.block?.transactions?.full ?? [];
    expect(full).toHaveLength(20);
    expect(full[19]?.transactionIndex).toBe(19n);
  });

  it("a header as a typed subscription decodes it (no result wrapper): the same re-spelling", () => {
    const blockCodec = createCodecRegistry().message(BlockSchema);
    const text = JSON.stringify({ number: "0x010", hash: hash("aa"), parentHash: hash("bb"), nonce: "0x0" });
    const header = decodeRespelling((json) => blockCodec.decode(json), JSON.parse(text), "", text.length) as { number?: bigint; nonce?: Uint8Array };
    expect(header.number).toBe(16n);
    expect(header.nonce).toHaveLength(8);
  });

  it("what is not a value still fails, naming the field", () => {
    expect(() => decode("eth_getTransactionByHash", tx({ r: "0xzz" }))).toThrow(CodecError);
    expect(() => decode("eth_getTransactionByHash", tx({ hash: "0x1234" }))).toThrow(/want 32 bytes/);
  });

  it.each([
    ["0x0001", "leading zero digits", "0x1"],
    ["0x0000", "leading zero digits", "0x0"],
    ["0x123", "odd number of digits", "0x0123"],
    ["0X1f", "anything", "0x1f"],
    ["0x12", "want 32 bytes, got 1", undefined],
    ["0x00", "want 8 bytes, got 1", "0x0000000000000000"],
    ["0x", "want 8 bytes, got 0", undefined],
    ["12", "want 0x prefix", undefined],
  ])("%s (%s) is spelt %s", (value, reason, want) => {
    expect(canonicalSpelling(value, reason)).toBe(want);
  });
});

describe("a result that is itself a hex value", () => {
  it("reads as the value it spells too (found from outside: eth_getBalance's 0x01 was refused while 0x01 inside an object was read)", () => {
    const balance = decode("eth_getBalance", "0x01") as { balance?: { value: Uint8Array } };
    expect(Buffer.from(balance.balance?.value ?? []).toString("hex")).toBe("01");
    expect((decode("eth_getTransactionCount", "0x0000") as { count?: bigint }).count).toBe(0n);
    expect((decode("eth_estimateGas", "0x05208") as { gas?: bigint }).gas).toBe(0x5208n);
    const code = decode("eth_getCode", "0xabc") as { code?: Uint8Array };
    expect(Buffer.from(code.code ?? []).toString("hex")).toBe("0abc");
    const word = `0X${"00".repeat(31)}ff`;
    expect(Buffer.from((decode("eth_getStorageAt", word) as { value?: Uint8Array }).value ?? []).toString("hex")).toBe(word.slice(2).toLowerCase());
  });

  it("what is not hex still fails", () => {
    expect(() => decode("eth_getBalance", "0xzz")).toThrow(CodecError);
    expect(() => decode("eth_getBalance", "12")).toThrow(CodecError);
  });
});
