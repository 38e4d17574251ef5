/**
 * Reading JSON bytes for the binary transcoder: byte classes, hex tables,
 * whitespace, literals, and the rare values read through JSON.parse. Readers
 * give up (throw GIVE_UP) on anything they do not vouch for.
 */
import { skipValue } from "../jsonrpc/raw-json.js";

/** Thrown (never escapes ResultTranscoder.write) when the fast path cannot vouch for the answer. */
export const GIVE_UP = new Error("binary transcoding gave up");

export function giveUp(): never {
  throw GIVE_UP;
}

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
export const ZERO = 0x30;
export const LOWER_X = 0x78;

/** Hex digit values, -1 for anything else. */
export const HEX = new Int8Array(256).fill(-1);
for (let i = 0; i < 10; i++) HEX[0x30 + i] = i;
for (let i = 0; i < 6; i++) {
  HEX[0x41 + i] = 10 + i;
  HEX[0x61 + i] = 10 + i;
}

/** Byte values of two hex digits at once (index: first digit's byte << 8 | second's), -1 when either is not hex. */
export const HEX_PAIR = new Int16Array(65536).fill(-1);
for (let a = 0; a < 256; a++) {
  for (let b = 0; b < 256; b++) {
    const hi = HEX[a] as number;
    const lo = HEX[b] as number;
    if (hi >= 0 && lo >= 0) HEX_PAIR[(a << 8) | b] = (hi << 4) | lo;
  }
}

/** The same, indexed by two digits read as a little-endian 16-bit word (second digit's byte << 8 | first's). */
export const HEX_PAIR_LE = new Int16Array(65536).fill(-1);
for (let i = 0; i < 65536; i++) HEX_PAIR_LE[((i & 0xff) << 8) | (i >>> 8)] = HEX_PAIR[i] as number;

/** A view of the text being transcoded, for reading four digits at a time (set by ResultTranscoder.write). */
export let srcView: DataView = new DataView(new ArrayBuffer(0));

/** Points srcView at the text about to be transcoded. */
export function readFrom(src: Uint8Array): void {
  srcView = new DataView(src.buffer, src.byteOffset, src.byteLength);
}

export const WHITESPACE = new Uint8Array(256);
WHITESPACE[0x20] = 1;
WHITESPACE[0x0a] = 1;
WHITESPACE[0x0d] = 1;
WHITESPACE[0x09] = 1;

export function ws(src: Uint8Array, pos: number): number {
  while (WHITESPACE[src[pos] as number] === 1) pos++;
  return pos;
}

/** Checks that a literal or number ends where JSON allows (a delimiter or the end). */
export function delimited(src: Uint8Array, pos: number): number {
  const c = src[pos];
  if (c === undefined || c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || WHITESPACE[c] === 1) return pos;
  return giveUp();
}

export function expectNull(src: Uint8Array, pos: number): number {
  if (src[pos] !== 0x6e || src[pos + 1] !== 0x75 || src[pos + 2] !== 0x6c || src[pos + 3] !== 0x6c) giveUp();
  return delimited(src, pos + 4);
}

export function utf8(src: Uint8Array, start: number, end: number): string {
  return Buffer.from(src.buffer, src.byteOffset + start, end - start).toString("utf8");
}

/** Parses the JSON value at [start, end) exactly as JSON.parse would (for the rare values the fast path does not read itself). */
export function parseSpan(src: Uint8Array, start: number, end: number): unknown {
  try {
    return JSON.parse(utf8(src, start, end));
  } catch {
    return giveUp();
  }
}

export function spanEnd(src: Uint8Array, pos: number): number {
  try {
    return skipValue(src, pos);
  } catch {
    return giveUp();
  }
}
