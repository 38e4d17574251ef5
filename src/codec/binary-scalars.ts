/**
 * Binary writers of single JSON values (the transcoder's leaves): QUANTITY
 * and JSON-number uint64, booleans, doubles, strings, DATA with its length
 * rules, and 256-bit quantities. Each mirrors the object codec's rule for
 * the same value and gives up where that rule would reject it.
 */
import { FIXED64, LEN, type ProtoWriter, VARINT } from "./proto-writer.js";
import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COMMA, delimited, giveUp, HEX, HEX_PAIR, HEX_PAIR_LE, LOWER_X, parseSpan, QUOTE, spanEnd, srcView, utf8, WHITESPACE, ZERO } from "./json-scan.js";

/** Writes the content of one message from the JSON value at `pos`; returns the index after the value. */
export type BodyWriter = (src: Uint8Array, pos: number, w: ProtoWriter) => number;
/** Writes one value as field `field` (tag and value); returns the index after the JSON value. */
export type ValueWriter = (src: Uint8Array, pos: number, w: ProtoWriter, field: number) => number;

let quantityHi = 0;
let quantityLo = 0;

/** Reads a QUANTITY of at most 64 bits ("0x0", "0x1a"; no leading zeros) into quantityHi/quantityLo. */
function readQuantity64(src: Uint8Array, pos: number): number {
  if (src[pos] !== QUOTE || src[pos + 1] !== ZERO || src[pos + 2] !== LOWER_X) giveUp();
  let i = pos + 3;
  const first = HEX[src[i] as number] as number;
  if (!(first >= 0)) giveUp();
  if (first === 0) {
    if (src[i + 1] !== QUOTE) giveUp();
    quantityHi = 0;
    quantityLo = 0;
    return i + 2;
  }
  let hi = 0;
  let lo = 0;
  const limit = i + 16;
  for (;;) {
    const c = src[i];
    if (c === QUOTE) break;
    const d = HEX[c as number] as number;
    if (!(d >= 0) || i === limit) giveUp();
    hi = ((hi << 4) | (lo >>> 28)) >>> 0;
    lo = ((lo << 4) | d) >>> 0;
    i++;
  }
  quantityHi = hi;
  quantityLo = lo;
  return i + 1;
}

export const quantityU64: ValueWriter = (src, pos, w, field) => {
  const end = readQuantity64(src, pos);
  w.tag(field, VARINT);
  w.varint64(quantityHi, quantityLo);
  return end;
};

export const jsonNumberU64: ValueWriter = (src, pos, w, field) => {
  let i = pos;
  if (src[i] === ZERO) i++;
  else while ((src[i] as number) >= 0x30 && (src[i] as number) <= 0x39) i++;
  if (i === pos || (src[pos] === ZERO && i - pos > 1)) giveUp();
  delimited(src, i);
  const n = Number(utf8(src, pos, i));
  if (!Number.isSafeInteger(n)) giveUp();
  w.tag(field, VARINT);
  w.varint(n);
  return i;
};

export const boolWriter: ValueWriter = (src, pos, w, field) => {
  let value: number;
  let end: number;
  if (src[pos] === 0x74 && src[pos + 1] === 0x72 && src[pos + 2] === 0x75 && src[pos + 3] === 0x65) {
    value = 1;
    end = pos + 4;
  } else if (src[pos] === 0x66 && src[pos + 1] === 0x61 && src[pos + 2] === 0x6c && src[pos + 3] === 0x73 && src[pos + 4] === 0x65) {
    value = 0;
    end = pos + 5;
  } else {
    return giveUp();
  }
  delimited(src, end);
  w.tag(field, VARINT);
  w.varint(value);
  return end;
};

const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

export const doubleWriter: ValueWriter = (src, pos, w, field) => {
  let i = pos;
  for (;;) {
    const c = src[i];
    if (c === undefined || c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || WHITESPACE[c] === 1) break;
    i++;
  }
  const text = Buffer.from(src.buffer, src.byteOffset + pos, i - pos).toString("latin1");
  if (!JSON_NUMBER.test(text)) giveUp();
  w.tag(field, FIXED64);
  w.double(Number(text));
  return i;
};

/** The end of the JSON string at `pos`, and whether its bytes can be copied as they are (no escape, ASCII, no control character). */
let stringIsPlain = false;

export function stringEnd(src: Uint8Array, pos: number): number {
  if (src[pos] !== QUOTE) giveUp();
  const q = src.indexOf(QUOTE, pos + 1);
  if (q < 0) giveUp();
  let plain = true;
  for (let i = pos + 1; i < q; i++) {
    const c = src[i] as number;
    if (c === BACKSLASH) {
      stringIsPlain = false;
      return spanEnd(src, pos);
    }
    if (c < 0x20 || c >= 0x80) plain = false;
  }
  stringIsPlain = plain;
  return q + 1;
}

/** The JSON string at [pos, end) as JSON.parse reads it. */
export function stringValue(src: Uint8Array, pos: number, end: number): string {
  const value = parseSpan(src, pos, end);
  return typeof value === "string" ? value : giveUp();
}

export const stringWriter: ValueWriter = (src, pos, w, field) => {
  const end = stringEnd(src, pos);
  w.tag(field, LEN);
  if (stringIsPlain) {
    w.bytes(src, pos + 1, end - 1);
  } else {
    const bytes = Buffer.from(stringValue(src, pos, end), "utf8");
    w.bytes(bytes, 0, bytes.length);
  }
  return end;
};

/** Writes the hex digits [start, end) as bytes; gives up on anything but hex digits. */
export function writeHex(src: Uint8Array, start: number, end: number, w: ProtoWriter): void {
  w.ensure((end - start) >> 1);
  const out = w.buf;
  const view = w.view;
  // Held in locals: read through the module bindings, each step reloaded them (writeHex took a third longer).
  const source = srcView;
  const pairs = HEX_PAIR_LE;
  let o = w.pos;
  let i = start;
  // Eight digits at a time: two 32-bit reads, four table lookups, one 32-bit write.
  for (; i + 8 <= end; i += 8) {
    const low = source.getUint32(i, true);
    const high = source.getUint32(i + 4, true);
    const b0 = pairs[low & 0xffff] as number;
    const b1 = pairs[low >>> 16] as number;
    const b2 = pairs[high & 0xffff] as number;
    const b3 = pairs[high >>> 16] as number;
    if ((b0 | b1 | b2 | b3) < 0) giveUp();
    view.setUint32(o, b0 | (b1 << 8) | (b2 << 16) | (b3 << 24), true);
    o += 4;
  }
  for (; i + 4 <= end; i += 4) {
    const digits = source.getUint32(i, true);
    const first = pairs[digits & 0xffff] as number;
    const second = pairs[digits >>> 16] as number;
    if ((first | second) < 0) giveUp();
    view.setUint16(o, first | (second << 8), true);
    o += 2;
  }
  for (; i < end; i += 2) {
    const byte = HEX_PAIR[((src[i] as number) << 8) | (src[i + 1] as number)] as number;
    if (byte < 0) giveUp();
    out[o++] = byte;
  }
  w.pos = o;
}

/** DATA: "0x" and two hex digits per byte, with the field's exact or maximum length. */
export function dataWriter(length: number, maxLength: number, emptyAllowed = false): ValueWriter {
  return (src, pos, w, field) => {
    if (src[pos] !== QUOTE || src[pos + 1] !== ZERO || ((src[pos + 2] as number) | 0x20) !== LOWER_X) giveUp();
    const start = pos + 3;
    // A hash or an address ends where its length says: one byte to look at, not a search (a wrong guess gives up in
    // writeHex, at the quote it reads as a digit). The benchmark's 10,000-log answer has about 50,000 of them.
    const expected = start + length * 2;
    const q = length !== 0 && src[expected] === QUOTE ? expected : src.indexOf(QUOTE, start);
    if (q < 0) giveUp();
    const digits = q - start;
    if (digits & 1) giveUp();
    const bytes = digits >> 1;
    if ((length && bytes !== length && !(bytes === 0 && emptyAllowed)) || (maxLength && bytes > maxLength)) giveUp();
    w.tag(field, LEN);
    w.varint(bytes);
    writeHex(src, start, q, w);
    return q + 1;
  };
}

/** A QUANTITY of up to 256 bits as minimal big-endian bytes (field 1 of a Uint256), nothing for zero. */
export const uint256Body: BodyWriter = (src, pos, w) => {
  if (src[pos] !== QUOTE || src[pos + 1] !== ZERO || src[pos + 2] !== LOWER_X) giveUp();
  const start = pos + 3;
  const q = src.indexOf(QUOTE, start);
  const digits = q - start;
  if (q < 0 || digits === 0 || digits > 64) giveUp();
  const first = HEX[src[start] as number] as number;
  if (first === 0) {
    if (digits !== 1) giveUp(); // leading zero digits
    return q + 1;
  }
  const bytes = (digits + 1) >> 1;
  w.tag(1, LEN);
  w.varint(bytes);
  if (digits & 1) {
    if (!(first >= 0)) giveUp();
    w.ensure(1);
    w.buf[w.pos++] = first;
    writeHex(src, start + 1, q, w);
  } else {
    writeHex(src, start, q, w);
  }
  return q + 1;
};
