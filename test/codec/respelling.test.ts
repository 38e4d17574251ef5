/**
 * The typed door reads a node's non-canonical hex as the value it spells
 * (found from outside: one padded signature made the whole block -32053,
 * while the native door forwarded it): quantities with leading zeros, data
 * with an odd digit count, an upper-case 0X. What cannot be read as a value
 * still fails.
 */
import { describe, expect, it } from "vitest";
import { CodecError } from "../../src/codec/codec-error.js";
import { decodeRespelling } from "../../src/codec/lenient-result.js";
import { decodeData, decodeFelt, decodeQuantity, readingLeniently } from "../../src/codec/hex.js";
import { BlockSchema } from "../../gen/nodegate/eth/v1/block_pb.js";
import { createCodecRegistry, createMethodTable } from "../../src/methods/default-table.js";

const table = createMethodTable();
const decode = (method: string, json: unknown) => {
  const spec = table.byJsonRpc(method);
  if (spec === undefined) throw new Error(method);
  return decodeRespelling((v) => spec.result.decode(v), json) as unknown as Record<string, unknown>;
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
    const header = decodeRespelling((json) => blockCodec.decode(json), JSON.parse(text)) as { number?: bigint; nonce?: Uint8Array };
    expect(header.number).toBe(16n);
    expect(header.nonce).toHaveLength(8);
  });

  it("a quantity written as a JSON number reads as its value", () => {
    const log = { address: `0x${"44".repeat(20)}`, topics: [], data: "0x", blockNumber: 16, blockHash: hash("22"), transactionHash: hash("11"), transactionIndex: "0x0", logIndex: "0x0", removed: false };
    const logs = decode("eth_getLogs", [log]) as { logs?: { blockNumber?: bigint }[] };
    expect(logs.logs?.[0]?.blockNumber).toBe(16n);
  });

  it("what is not a value still fails, naming the field", () => {
    expect(() => decode("eth_getTransactionByHash", tx({ r: "0xzz" }))).toThrow(CodecError);
    expect(() => decode("eth_getTransactionByHash", tx({ hash: "0x1234" }))).toThrow(/want 32 bytes/);
  });

  it("every padded value of a large answer is read, however many there are (found from outside: 100 logs or 150 padded signatures were refused)", () => {
    const logs = Array.from({ length: 2000 }, (_, i) => ({
      address: `0x${"44".repeat(20)}`,
      topics: [hash("55")],
      data: "0x",
      blockNumber: "0x0010",
      blockHash: hash("22"),
      transactionHash: hash("11"),
      transactionIndex: `0x0${(i % 16).toString(16)}`,
      logIndex: `0x00${i.toString(16)}`,
      removed: false,
    }));
    const decoded = decode("eth_getLogs", logs) as { logs?: { logIndex?: bigint; blockNumber?: bigint }[] };
    expect(decoded.logs).toHaveLength(2000);
    expect(decoded.logs?.[1999]?.logIndex).toBe(1999n);
    expect(decoded.logs?.[0]?.blockNumber).toBe(16n);
    const transactions = Array.from({ length: 500 }, (_, i) => tx({ hash: `0x${i.toString(16).padStart(64, "0")}`, r: `0x00${"3c".repeat(31)}`, s: `0x000${"3d".repeat(31)}` }));
    const block = decode("eth_getBlockByNumber", { number: "0x10", hash: hash("aa"), transactions }) as { block?: { transactions?: { full: { s?: { value: Uint8Array } }[] } } };
    const full = block.block?.transactions?.full ?? [];
    expect(full).toHaveLength(500);
    expect(Buffer.from(full[499]?.s?.value ?? []).toString("hex")).toBe("3d".repeat(31));
  });
});

describe("the hex decoders read leniently", () => {
  it("read a non-canonical spelling as the value it spells", () => {
    readingLeniently(() => {
      expect(decodeQuantity("0x0001")).toBe(1n);
      expect(decodeQuantity("0x0000")).toBe(0n);
      expect(decodeQuantity("0X01f")).toBe(31n);
      expect(Buffer.from(decodeData("0x123")).toString("hex")).toBe("0123");
      expect(Buffer.from(decodeData("0x0", { length: 8 })).toString("hex")).toBe("00".repeat(8));
      expect(Buffer.from(decodeFelt("0X0abc")).toString("hex")).toBe("0abc");
      // A quantity written as a JSON number (found from outside: one "blockTimestamp": 1795991498 made a whole
      // answer -32053 on the typed door while the native door forwarded it).
      expect(decodeQuantity(1795991498)).toBe(1795991498n);
      expect(decodeQuantity(0)).toBe(0n);
    });
  });

  it("still refuse what is not a value, or data too short to be a number with zeros dropped", () => {
    readingLeniently(() => {
      expect(() => decodeData("0x12", { length: 32 })).toThrow(/want 32 bytes, got 1/);
      expect(() => decodeData("0x", { length: 8 })).toThrow(/want 8 bytes, got 0/);
      expect(() => decodeQuantity("12")).toThrow(/want 0x/);
      expect(() => decodeQuantity(`0x0${"f".repeat(65)}`)).toThrow(/exceeds 256 bits/);
      // A JSON number is a value only when it is a whole one JSON.parse kept exact.
      // The refusal says why (found from outside: "got number" alone, for 1.5 as for 2^53 + 2).
      const why = "(a number is read as a quantity only when whole, not negative and below 2^53)";
      for (const n of [1.5, -1]) expect(() => decodeQuantity(n)).toThrow(`want a hex quantity string, got the number ${n} ${why}`);
      // Past 2^53 JSON.parse has changed it: the text does not name a number that was not sent.
      expect(() => decodeQuantity(2 ** 53 + 2)).toThrow(`got a JSON integer above 9007199254740991 (2^53 - 1), which cannot be read exactly ${why}`);
      expect(() => decodeQuantity(Number.POSITIVE_INFINITY)).toThrow(`got a JSON number too large to read ${why}`);
    });
  });

  it("only while a result is read leniently", () => {
    expect(() => decodeQuantity("0x01")).toThrow(/leading zero digits/);
    expect(() => decodeQuantity(16)).toThrow("want a hex quantity string, got the number 16");
    expect(() => readingLeniently(() => decodeQuantity("0x")) ).toThrow(CodecError);
    expect(() => decodeData("0x123")).toThrow(/odd number of digits/);
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
