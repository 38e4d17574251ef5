/**
 * Property tests of the strict hex codecs (src/codec/hex.ts): every encoding
 * round-trips, canonical output is lowercase and minimal, and malformed input
 * (leading zeros, odd digits, non-hex characters, overlong values) is
 * rejected with a HexError rather than truncated. Seeded and bounded, so
 * every run checks the same cases.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { uint256Codec } from "../../src/codec/eth-types.js";
import {
  bigintToBytes,
  bytesToBigint,
  decodeData,
  decodeFelt,
  decodeQuantity,
  decodeQuantityBytes,
  decodeStorageSlot,
  decodeUint64,
  encodeData,
  encodeFelt,
  encodeQuantity,
  encodeQuantityBytes,
  encodeStorageSlot,
  HexError,
  readingLeniently,
} from "../../src/codec/hex.js";
import type { Uint256 } from "../../gen/nodegate/eth/v1/primitives_pb.js";

const RUNS: fc.Parameters<unknown> = { seed: 0x6e6f6465, numRuns: 200 };

const QUANTITY = /^0x(0|[1-9a-f][0-9a-f]*)$/;
const DATA = /^0x([0-9a-f]{2})*$/;

const U64_MAX = (1n << 64n) - 1n;
const U256_MAX = (1n << 256n) - 1n;
const FELT_LIMIT = 1n << 252n; // 63 hex digits

const u256 = fc.bigInt({ min: 0n, max: U256_MAX });
const u64 = fc.bigInt({ min: 0n, max: U64_MAX });
const bytes = fc.uint8Array({ minLength: 0, maxLength: 80 });
const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 });
/** Characters that are not hex digits, including look-alikes. */
const nonHex = fc.constantFrom("g", "G", "z", "x", "X", " ", "-", "_", ".", "é", "\u0000", "０");

const digits = (n: bigint) => n.toString(16);

/** Byte values as a plain array: decoders return Buffer views, which do not deep-equal a Uint8Array. */
const plain = (b: Uint8Array): number[] => [...b];

/** A value's hex digits in random letter case. */
const mixedCaseDigits = (n: bigint) => fc.mixedCase(fc.constant(digits(n)));

/** A hex string with one character after "0x" replaced by a non-hex one. */
function corrupt(hex: string): fc.Arbitrary<string> {
  return fc.tuple(fc.integer({ min: 2, max: hex.length - 1 }), nonHex).map(([i, c]) => `${hex.slice(0, i)}${c}${hex.slice(i + 1)}`);
}

describe("QUANTITY (256-bit)", () => {
  it("round-trips every value through canonical lowercase minimal hex", () => {
    fc.assert(
      fc.property(u256, (n) => {
        const text = encodeQuantity(n);
        expect(text).toMatch(QUANTITY);
        expect(decodeQuantity(text)).toBe(n);
      }),
      RUNS,
    );
  });

  it("accepts mixed-case digits and re-encodes them lowercase", () => {
    fc.assert(
      fc.property(
        u256.chain((n) => mixedCaseDigits(n).map((d) => [n, `0x${d}`] as const)),
        ([n, text]) => {
          expect(decodeQuantity(text)).toBe(n);
          expect(encodeQuantity(decodeQuantity(text))).toBe(`0x${digits(n)}`);
        },
      ),
      RUNS,
    );
  });

  // Found from outside: the spec accepts mixed-case hex in requests, and geth's hexutil reads a "0X" prefix.
  it("accepts an upper-case 0X prefix, as geth does, for quantities, data and storage slots", () => {
    fc.assert(
      fc.property(u256, (n) => {
        expect(decodeQuantity(`0X${digits(n)}`)).toBe(n);
        expect(plain(decodeStorageSlot(`0X${digits(n)}`))).toEqual(plain(decodeStorageSlot(`0x${digits(n)}`)));
      }),
      RUNS,
    );
    expect(decodeUint64("0X1")).toBe(1n);
    expect(plain(decodeData("0XaBcD"))).toEqual([0xab, 0xcd]);
    expect(() => decodeQuantity("0X")).toThrow(/want 0x followed by hex digits/);
    expect(() => decodeQuantity("0X01")).toThrow(/leading zero/);
    // A felt keeps the Starknet spec's own pattern, lowercase x only.
    expect(() => decodeFelt("0X1")).toThrow(HexError);
  });

  it("rejects leading zero digits", () => {
    fc.assert(
      fc.property(u256, fc.integer({ min: 1, max: 8 }), (n, zeros) => {
        expect(() => decodeQuantity(`0x${"0".repeat(zeros)}${digits(n)}`)).toThrow(/leading zero/);
      }),
      RUNS,
    );
  });

  it("rejects a non-hex character anywhere", () => {
    fc.assert(
      fc.property(
        u256.chain((n) => corrupt(encodeQuantity(n))),
        (text) => {
          expect(() => decodeQuantity(text)).toThrow(HexError);
        },
      ),
      RUNS,
    );
  });

  it("rejects values above 2^256-1", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: U256_MAX + 1n, max: (1n << 320n) - 1n }), (n) => {
        expect(() => decodeQuantity(encodeQuantity(n))).toThrow(/exceeds 256 bits/);
      }),
      RUNS,
    );
  });

  it("rejects the empty quantity, a missing prefix and non-strings", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.constant("0x"),
          u256.map((n) => digits(n)),
          fc.integer(),
          fc.boolean(),
          fc.constant(null),
          fc.array(fc.string(), { maxLength: 2 }),
        ),
        (value) => {
          expect(() => decodeQuantity(value)).toThrow(HexError);
        },
      ),
      RUNS,
    );
  });
});

describe("QUANTITY (64-bit)", () => {
  it("round-trips every u64", () => {
    fc.assert(
      fc.property(u64, (n) => {
        expect(decodeUint64(encodeQuantity(n))).toBe(n);
      }),
      RUNS,
    );
  });

  it("rejects values that do not fit in 64 bits", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: U64_MAX + 1n, max: U256_MAX }), (n) => {
        expect(() => decodeUint64(encodeQuantity(n))).toThrow(/exceeds 64 bits/);
      }),
      RUNS,
    );
  });
});

describe("Uint256 (minimal big-endian bytes)", () => {
  it("decodes to bytes without leading zeros and re-encodes to the same quantity", () => {
    fc.assert(
      fc.property(u256, (n) => {
        const text = encodeQuantity(n);
        const message = uint256Codec.decode(text);
        expect(message.value[0]).not.toBe(0);
        expect(bytesToBigint(message.value)).toBe(n);
        expect(uint256Codec.encode(message)).toBe(`"${text}"`);
        expect(encodeQuantityBytes(decodeQuantityBytes(text))).toBe(text);
      }),
      RUNS,
    );
  });

  // Found from outside: Go's FillBytes(make([]byte, 32)) (and Java's sign byte) gave INVALID_ARGUMENT.
  it("reads a request's padded bytes as the value they pad, and refuses more than 32 significant bytes", () => {
    fc.assert(
      fc.property(u256, fc.integer({ min: 0, max: 8 }), (n, zeros) => {
        const minimal = bigintToBytes(n);
        const padded = new Uint8Array([...new Uint8Array(zeros), ...minimal]);
        expect(uint256Codec.encode({ value: padded } as Uint256)).toBe(`"${encodeQuantity(n)}"`);
        if (zeros > 0 && minimal.length > 0) expect(() => encodeQuantityBytes(padded)).toThrow(HexError);
      }),
      RUNS,
    );
    expect(uint256Codec.encode({ value: new Uint8Array(32) } as Uint256)).toBe('"0x0"');
    expect(() => uint256Codec.encode({ value: new Uint8Array([1, ...new Uint8Array(32)]) } as Uint256)).toThrow(/at most 32 significant bytes/);
  });

  it("bigintToBytes and bytesToBigint are inverse", () => {
    fc.assert(
      fc.property(u256, (n) => {
        expect(bytesToBigint(bigintToBytes(n))).toBe(n);
      }),
      RUNS,
    );
  });
});

describe("DATA", () => {
  it("round-trips any bytes through lowercase hex, two digits per byte", () => {
    fc.assert(
      fc.property(bytes, (b) => {
        const text = encodeData(b);
        expect(text).toMatch(DATA);
        expect(text.length).toBe(2 + b.length * 2);
        expect(plain(decodeData(text))).toEqual(plain(b));
      }),
      RUNS,
    );
  });

  it("accepts mixed-case digits and re-encodes them lowercase", () => {
    fc.assert(
      fc.property(
        bytes.chain((b) => fc.mixedCase(fc.constant(encodeData(b).slice(2))).map((d) => [b, `0x${d}`] as const)),
        ([b, text]) => {
          expect(encodeData(decodeData(text))).toBe(encodeData(b));
        },
      ),
      RUNS,
    );
  });

  it("rejects an odd number of digits (Buffer.from would drop the last one)", () => {
    fc.assert(
      fc.property(bytes, fc.constantFrom(..."0123456789abcdef"), (b, extra) => {
        expect(() => decodeData(`${encodeData(b)}${extra}`)).toThrow(/odd number of digits/);
      }),
      RUNS,
    );
  });

  it("rejects a non-hex character anywhere (Buffer.from would stop there)", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 40 }).chain((b) => corrupt(encodeData(b))),
        (text) => {
          expect(() => decodeData(text)).toThrow(HexError);
        },
      ),
      RUNS,
    );
  });

  it("enforces an exact length (a 20-byte address) and a maximum length", () => {
    fc.assert(
      fc.property(bytes, (b) => {
        const text = encodeData(b);
        if (b.length === 20) expect(plain(decodeData(text, { length: 20 }))).toEqual(plain(b));
        else expect(() => decodeData(text, { length: 20 })).toThrow(/want 20 bytes/);
        if (b.length <= 32) expect(plain(decodeData(text, { maxLength: 32 }))).toEqual(plain(b));
        else expect(() => decodeData(text, { maxLength: 32 })).toThrow(/at most 32 bytes/);
      }),
      RUNS,
    );
  });

  it("read leniently (a node's answer), a re-spelt value that still fails is quoted as the node wrote it", () => {
    // Found from outside: a blockHash written "0x0" was refused as 'invalid hex data "0x00"', a text the node never sent.
    expect(() => readingLeniently(() => decodeData("0x0", { length: 32 }))).toThrow('invalid hex data "0x0": want 32 bytes, got 1');
    expect(() => readingLeniently(() => decodeData("0xabc", { length: 20 }))).toThrow('invalid hex data "0xabc"');
    expect(() => readingLeniently(() => decodeData("0xz", { length: 32 }))).toThrow('invalid hex data "0xz"');
    expect(plain(readingLeniently(() => decodeData("0x1", { length: 8 })))).toEqual([0, 0, 0, 0, 0, 0, 0, 1]);
  });
});

describe("FELT (Starknet field element)", () => {
  const felt = fc.bigInt({ min: 0n, max: FELT_LIMIT - 1n });

  it("round-trips every value below 2^252 as minimal hex", () => {
    fc.assert(
      fc.property(felt, (n) => {
        const text = encodeFelt(bigintToBytes(n));
        expect(text).toBe(encodeQuantity(n));
        expect(bytesToBigint(decodeFelt(text))).toBe(n);
      }),
      RUNS,
    );
  });

  it("encodes padded 32-byte input without its leading zeros", () => {
    fc.assert(
      fc.property(felt, (n) => {
        const padded = new Uint8Array(32);
        const minimal = bigintToBytes(n);
        padded.set(minimal, 32 - minimal.length);
        expect(encodeFelt(padded)).toBe(encodeQuantity(n));
      }),
      RUNS,
    );
  });

  it("accepts mixed case and leading zeros up to 64 digits (as Starknet nodes do), rejects more digits and values past 252 bits", () => {
    fc.assert(
      fc.property(felt, fc.bigInt({ min: FELT_LIMIT, max: U256_MAX }), (n, big) => {
        fc.pre(n > 0n);
        expect(bytesToBigint(decodeFelt(`0x${digits(n).toUpperCase()}`))).toBe(n);
        expect(bytesToBigint(decodeFelt(`0x0${digits(n)}`))).toBe(n);
        expect(bytesToBigint(decodeFelt(`0x${digits(n).padStart(64, "0")}`))).toBe(n);
        expect(encodeFelt(decodeFelt(`0x${digits(n).padStart(64, "0")}`))).toBe(`0x${digits(n)}`);
        expect(() => decodeFelt(`0x0${digits(n).padStart(64, "0")}`)).toThrow(HexError);
        expect(() => decodeFelt(encodeQuantity(big))).toThrow(HexError);
        expect(() => decodeFelt(`0x${digits(big).padStart(64, "0")}`)).toThrow(HexError);
      }),
      RUNS,
    );
  });
});

describe("STORAGE_SLOT", () => {
  it("32 bytes round-trip as 64 digits, leading zero bytes kept", () => {
    fc.assert(
      fc.property(bytes32, (b) => {
        const text = encodeStorageSlot(b);
        expect(text).toBe(encodeData(b));
        expect(plain(decodeStorageSlot(text))).toEqual(plain(b));
      }),
      RUNS,
    );
  });

  it("shorter values round-trip as a minimal quantity", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 248n) - 1n }), (n) => {
        const minimal = bigintToBytes(n);
        const text = encodeStorageSlot(minimal);
        expect(text).toBe(encodeQuantity(n));
        expect(plain(decodeStorageSlot(text))).toEqual(plain(minimal));
      }),
      RUNS,
    );
  });

  it("reads leniently: any digit count up to 64, leading zeros, odd digits, mixed case", () => {
    fc.assert(
      fc.property(
        u256.chain((n) =>
          fc.tuple(fc.constant(n), fc.integer({ min: Math.max(digits(n).length, 1), max: 64 }), mixedCaseDigits(n)),
        ),
        ([n, width, d]) => {
          const slot = decodeStorageSlot(`0x${d.padStart(width, "0")}`);
          expect(bytesToBigint(slot)).toBe(n);
          expect(slot.length).toBe(width === 64 ? 32 : bigintToBytes(n).length);
        },
      ),
      RUNS,
    );
  });

  it("reads bare digits (no 0x) as geth's decodeHash and Anvil do; an empty string is no slot", () => {
    fc.assert(
      fc.property(
        u256.chain((n) => fc.tuple(fc.constant(n), fc.integer({ min: Math.max(digits(n).length, 1), max: 64 }), mixedCaseDigits(n))),
        ([n, width, d]) => {
          const text = d.padStart(width, "0");
          expect(plain(decodeStorageSlot(text))).toEqual(plain(decodeStorageSlot(`0x${text}`)));
        },
      ),
      RUNS,
    );
    expect(bytesToBigint(decodeStorageSlot("2"))).toBe(2n);
    expect(() => decodeStorageSlot("")).toThrow(/invalid hex in storage key: /);
    expect(() => decodeStorageSlot("x2")).toThrow(/invalid hex in storage key: /);
    expect(() => decodeStorageSlot("1".repeat(65))).toThrow(/too long/);
  });

  it("rejects more than 64 digits and non-hex characters; no digits is slot 0, as geth (and Anvil) read it", () => {
    fc.assert(
      fc.property(u256, fc.integer({ min: 1, max: 8 }), (n, extra) => {
        expect(() => decodeStorageSlot(`0x${"0".repeat(extra)}${digits(n).padStart(64, "0")}`)).toThrow(/too long/);
        expect(plain(decodeStorageSlot("0x"))).toEqual([]);
        expect(plain(decodeStorageSlot("0X"))).toEqual([]);
        expect(() => decodeStorageSlot(`0x${digits(n)}g`)).toThrow(HexError);
      }),
      RUNS,
    );
  });
});
