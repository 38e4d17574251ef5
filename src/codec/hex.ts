/**
 * Strict hex codecs for JSON-RPC values. Decoders reject anything that is not
 * exactly the encoding they name (Buffer.from(hex) alone silently truncates at
 * the first bad digit); encoders always write the canonical lowercase form.
 */

import { CodecError } from "./codec-error.js";

/** Thrown when a JSON value does not have the expected hex encoding. */
export class HexError extends CodecError {
  override name = "HexError";
  constructor(reason: string) {
    super("", reason);
  }
}

// "0X" as well as "0x", as geth's hexutil reads them (felts keep Starknet's own lowercase rule).
const QUANTITY = /^0[xX](?:0|[1-9a-fA-F][0-9a-fA-F]*)$/;
// Leading zeros up to 64 digits, as Starknet nodes read a felt: explorers show hashes and addresses padded to 64.
const FELT = /^0x(?=[0-9a-fA-F]{1,64}$)0*(?:0|[1-9a-fA-F][0-9a-fA-F]{0,62})$/;
const HEX_DIGITS = /^0[xX][0-9a-fA-F]*$/;
/** A storage slot's digits without 0x (one at least: an empty string is no slot). */
const BARE_HEX_DIGITS = /^[0-9a-fA-F]+$/;

/** The longest fixed-size data read leniently when a node writes it short (a block nonce: 8 bytes). */
const MAX_PADDED_BYTES = 8;

/**
 * Set while a node's result is read leniently (lenient-result.ts): the
 * decoders below then read a non-canonical spelling as the value it spells.
 * Decoding is synchronous, so nothing else runs while it is set.
 */
let lenient = false;

/** Runs `read` with the decoders reading non-canonical hex as the value it spells. */
export function readingLeniently<T>(read: () => T): T {
  lenient = true;
  try {
    return read();
  } finally {
    lenient = false;
  }
}

/** Whether a result is being read leniently (for decoders outside this module). */
export function readsLeniently(): boolean {
  return lenient;
}

const U64_MAX = (1n << 64n) - 1n;
const U256_MAX = (1n << 256n) - 1n;

function describe(value: unknown): string {
  if (typeof value === "string") {
    return value.length > 80 ? `"${value.slice(0, 77)}..."` : JSON.stringify(value);
  }
  if (typeof value === "number") {
    // As JSON.parse left it: past 2^53 it is no longer the number that was sent, so it is not named.
    if (!Number.isFinite(value)) return "a JSON number too large to read";
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) return "a JSON integer above 9007199254740991 (2^53 - 1), which cannot be read exactly";
    return `the number ${String(value)}`;
  }
  // Found from outside: a Starknet transaction without its required "version" read "got undefined".
  if (value === undefined) return "nothing (the key is missing)";
  return value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
}

/** Whether a string starts with "0x" or "0X". */
export function hasHexPrefix(value: string): boolean {
  return value.length >= 2 && value.charCodeAt(0) === 48 && (value.charCodeAt(1) | 0x20) === 120;
}

/** Decodes a QUANTITY ("0x0", "0x1a"; no leading zeros) into a bigint. */
export function decodeQuantity(value: unknown, maxBits = 256): bigint {
  if (typeof value !== "string") {
    // Read leniently, a whole JSON number JSON.parse kept exact is the value it spells (a node's "blockTimestamp": 1795991498).
    if (lenient && typeof value === "number") {
      if (Number.isSafeInteger(value) && value >= 0) return decodeQuantity(`0x${value.toString(16)}`, maxBits);
      throw new HexError(`want a hex quantity string, got ${describe(value)} (a number is read as a quantity only when whole, not negative and below 2^53)`);
    }
    throw new HexError(`want a hex quantity string, got ${describe(value)}`);
  }
  if (!QUANTITY.test(value)) {
    if (lenient && value.length > 2 && HEX_DIGITS.test(value)) return decodeQuantity(`0x${value.slice(2).replace(/^0+(?=[0-9a-fA-F])/, "")}`, maxBits);
    if (value.length === 2 || !hasHexPrefix(value)) {
      throw new HexError(`invalid hex quantity ${describe(value)}: want 0x followed by hex digits`);
    }
    if (HEX_DIGITS.test(value)) {
      throw new HexError(`invalid hex quantity ${describe(value)}: leading zero digits`);
    }
    throw new HexError(`invalid hex quantity ${describe(value)}: not a hex number`);
  }
  // 64 hex digits are 256 bits; check length first so BigInt never sees huge input.
  if (value.length - 2 > Math.ceil(maxBits / 4)) {
    throw new HexError(`hex quantity ${describe(value)} exceeds ${maxBits} bits`);
  }
  const n = BigInt(value);
  if (maxBits === 64 ? n > U64_MAX : maxBits === 256 ? n > U256_MAX : n >= 1n << BigInt(maxBits)) {
    throw new HexError(`hex quantity ${describe(value)} exceeds ${maxBits} bits`);
  }
  return n;
}

/** Decodes a QUANTITY that must fit in 64 bits. */
export function decodeUint64(value: unknown): bigint {
  return decodeQuantity(value, 64);
}

/** Encodes a non-negative bigint as a canonical QUANTITY. */
export function encodeQuantity(value: bigint): string {
  if (value < 0n) throw new HexError(`negative quantity ${value}`);
  return `0x${value.toString(16)}`;
}

export interface DataRules {
  /** Exact length in bytes (0 = any). */
  length?: number;
  /** Maximum length in bytes (0 = any). */
  maxLength?: number;
  /** With a length: "0x" (no bytes) is accepted too (FieldRules.empty_allowed). */
  emptyAllowed?: boolean;
}

/** Decodes DATA ("0x", "0xdeadbeef": two hex digits per byte) into bytes. */
export function decodeData(value: unknown, rules?: DataRules): Uint8Array {
  return decodeDataAs(value, rules, value);
}

/** decodeData, naming `written` (what the node wrote) in its errors when it reads a re-spelling of it. */
function decodeDataAs(value: unknown, rules: DataRules | undefined, written: unknown): Uint8Array {
  if (typeof value !== "string") {
    throw new HexError(`want a hex data string, got ${describe(written)}`);
  }
  if (!hasHexPrefix(value)) {
    throw new HexError(`invalid hex data ${describe(written)}: want 0x prefix`);
  }
  const digits = value.length - 2;
  if (digits % 2 !== 0) {
    if (lenient) return decodeDataAs(`0x0${value.slice(2)}`, rules, written);
    throw new HexError(`invalid hex data ${describe(written)}: odd number of digits`);
  }
  const length = rules?.length ?? 0;
  if (length && digits !== length * 2 && !(digits === 0 && rules?.emptyAllowed)) {
    // A short block nonce ("0x00"): nonce-like fields of a few bytes are numbers, so zeros in front keep the value.
    // Longer fixed-size data (hashes, addresses, blooms) is not padded: a short one is not a number with zeros dropped.
    if (lenient && digits > 0 && digits < length * 2 && length <= MAX_PADDED_BYTES) return decodeDataAs(`0x${value.slice(2).padStart(length * 2, "0")}`, rules, written);
    throw new HexError(`invalid hex data ${describe(written)}: want ${length} bytes, got ${digits / 2}`);
  }
  const maxLength = rules?.maxLength ?? 0;
  if (maxLength && digits > maxLength * 2) {
    throw new HexError(`invalid hex data ${describe(written)}: want at most ${maxLength} bytes, got ${digits / 2}`);
  }
  // Buffer.from stops at the first invalid pair, so a short result means bad input.
  const bytes = Buffer.from(value.slice(2), "hex");
  if (bytes.length * 2 !== digits) {
    throw new HexError(`invalid hex data ${describe(written)}: not hex`);
  }
  return bytes;
}

/** Encodes bytes as DATA: 0x and two lowercase digits per byte. */
export function encodeData(bytes: Uint8Array): string {
  if (bytes.length === 0) return "0x";
  return `0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex")}`;
}

/** Big-endian bytes without leading zero bytes (empty for zero). */
export function bigintToBytes(value: bigint): Uint8Array {
  if (value < 0n) throw new HexError(`negative value ${value}`);
  if (value === 0n) return new Uint8Array(0);
  let hex = value.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  return Buffer.from(hex, "hex");
}

/** Reads big-endian bytes as an unsigned integer. */
export function bytesToBigint(bytes: Uint8Array): bigint {
  if (bytes.length === 0) return 0n;
  return BigInt(`0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex")}`);
}

/** Strips leading zero bytes (a minimal big-endian magnitude). */
export function trimLeadingZeros(bytes: Uint8Array): Uint8Array {
  let i = 0;
  while (i < bytes.length && bytes[i] === 0) i++;
  return i === 0 ? bytes : bytes.subarray(i);
}

/** Decodes a QUANTITY into minimal big-endian bytes (for Uint256 values). */
export function decodeQuantityBytes(value: unknown, maxBits = 256): Uint8Array {
  return bigintToBytes(decodeQuantity(value, maxBits));
}

/** Encodes minimal big-endian bytes as a QUANTITY; leading zero bytes are rejected. */
export function encodeQuantityBytes(bytes: Uint8Array): string {
  if (bytes.length === 0) return "0x0";
  if (bytes[0] === 0) throw new HexError("quantity bytes have a leading zero byte");
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
  return hex.charCodeAt(0) === 48 ? `0x${hex.slice(1)}` : `0x${hex}`;
}

/** Decodes a Starknet FELT (0x, at most 63 significant digits, padded with zeros to at most 64) into minimal bytes. */
export function decodeFelt(value: unknown): Uint8Array {
  if (typeof value !== "string") {
    throw new HexError(`want a felt hex string, got ${describe(value)}`);
  }
  if (!FELT.test(value)) {
    if (lenient && value.startsWith("0X")) return decodeFelt(`0x${value.slice(2)}`);
    throw new HexError(`invalid felt ${describe(value)}: want 0x and at most 63 significant hex digits (252 bits), at most 64 with leading zeros`);
  }
  return bigintToBytes(BigInt(value));
}

/** Encodes minimal big-endian bytes as a FELT ("0x0" for zero). */
export function encodeFelt(bytes: Uint8Array): string {
  const text = encodeQuantityBytes(trimLeadingZeros(bytes));
  // 32 bytes can hold 64 digits; a felt has at most 63, and decodeFelt rejects more.
  if (text.length > 65) throw new HexError(`a felt has at most 63 hex digits (252 bits), got ${text.length - 2}`);
  return text;
}

/**
 * Decodes a storage slot as nodes accept it: up to 64 hex digits, with or
 * without 0x, any case, leading zeros allowed; an odd digit count is padded.
 * 64 digits give 32 bytes, fewer give the minimal value (geth's decodeHash).
 */
export function decodeStorageSlot(value: unknown): Uint8Array {
  if (typeof value !== "string") {
    throw new HexError(`want a hex storage slot string, got ${describe(value)}`);
  }
  // "0x" alone is slot 0, and bare digits ("2") a slot, as geth's decodeHash (and Anvil) read them (found from outside).
  // Refusals in geth's words (execution-apis records them for eth_getStorageAt).
  const prefixed = value.startsWith("0x") || value.startsWith("0X");
  if (!(prefixed ? HEX_DIGITS.test(value) : BARE_HEX_DIGITS.test(value))) {
    throw new HexError(`invalid hex in storage key: ${describe(value)}`);
  }
  const hex = prefixed ? value.slice(2) : value;
  if (hex.length > 64) {
    throw new HexError(`storage key too long (want at most 32 bytes): ${describe(value)}`);
  }
  if (hex.length === 64) return Buffer.from(hex, "hex");
  return trimLeadingZeros(Buffer.from(hex.length % 2 ? `0${hex}` : hex, "hex"));
}

/** Encodes a storage slot: 32 bytes as 64 digits, shorter values as a QUANTITY. */
export function encodeStorageSlot(bytes: Uint8Array): string {
  return bytes.length === 32 ? encodeData(bytes) : encodeQuantityBytes(trimLeadingZeros(bytes));
}
