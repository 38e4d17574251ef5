/**
 * A node's JSON result straight to protobuf binary, for the typed gRPC door:
 * no JS objects, no messages, no second pass. Compiled once per message type
 * from the same descriptors and annotations as message-codec.ts, and
 * equivalent to it: the bytes decode to the message the object codec builds
 * from the same text (json_extras included).
 *
 * The fast path gives up (write() returns undefined) on anything it does not
 * cover: an escape in a key, a duplicate key, a value the object codec would
 * reject, invalid JSON, a type with no binary writer (Starknet felts, storage
 * slots, unknown special codecs). The caller then takes the object path,
 * which also words the error exactly.
 */
import { type DescField, type DescMessage, getOption, ScalarType } from "@bufbuild/protobuf";
import { Encoding, field as fieldRulesExt, message as messageRulesExt } from "../../gen/nodegate/jsonrpc/v1/options_pb.js";
import { skipValue } from "../jsonrpc/raw-json.js";
import type { CodecRegistry } from "./message-codec.js";
import { FIXED64, LEN, ProtoWriter, VARINT } from "./proto-writer.js";

/** Thrown (never escapes write()) when the fast path cannot vouch for the answer. */
const GIVE_UP = new Error("binary transcoding gave up");

export function giveUp(): never {
  throw GIVE_UP;
}

/** Writes the content of one message from the JSON value at `pos`; returns the index after the value. */
export type BodyWriter = (src: Uint8Array, pos: number, w: ProtoWriter) => number;
/** Writes one value as field `field` (tag and value); returns the index after the JSON value. */
export type ValueWriter = (src: Uint8Array, pos: number, w: ProtoWriter, field: number) => number;

/** Builds the body writer of a message type whose JSON shape is special (a union, a number-or-tag). */
export type BinarySpecialFactory = (compiler: BinaryCompiler, schema: DescMessage) => BodyWriter | undefined;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const ZERO = 0x30;
const LOWER_X = 0x78;

/** Hex digit values, -1 for anything else. */
export const HEX = new Int8Array(256).fill(-1);
for (let i = 0; i < 10; i++) HEX[0x30 + i] = i;
for (let i = 0; i < 6; i++) {
  HEX[0x41 + i] = 10 + i;
  HEX[0x61 + i] = 10 + i;
}

/** Byte values of two hex digits at once (index: first digit's byte << 8 | second's), -1 when either is not hex. */
const HEX_PAIR = new Int16Array(65536).fill(-1);
for (let a = 0; a < 256; a++) {
  for (let b = 0; b < 256; b++) {
    const hi = HEX[a] as number;
    const lo = HEX[b] as number;
    if (hi >= 0 && lo >= 0) HEX_PAIR[(a << 8) | b] = (hi << 4) | lo;
  }
}

/** The same, indexed by two digits read as a little-endian 16-bit word (second digit's byte << 8 | first's). */
const HEX_PAIR_LE = new Int16Array(65536).fill(-1);
for (let i = 0; i < 65536; i++) HEX_PAIR_LE[((i & 0xff) << 8) | (i >>> 8)] = HEX_PAIR[i] as number;

/** A view of the text being transcoded, for reading four digits at a time (set by ResultTranscoder.write). */
let srcView: DataView = new DataView(new ArrayBuffer(0));

const WHITESPACE = new Uint8Array(256);
WHITESPACE[0x20] = 1;
WHITESPACE[0x0a] = 1;
WHITESPACE[0x0d] = 1;
WHITESPACE[0x09] = 1;

export function ws(src: Uint8Array, pos: number): number {
  while (WHITESPACE[src[pos] as number] === 1) pos++;
  return pos;
}

/** Checks that a literal or number ends where JSON allows (a delimiter or the end). */
function delimited(src: Uint8Array, pos: number): number {
  const c = src[pos];
  if (c === undefined || c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || WHITESPACE[c] === 1) return pos;
  return giveUp();
}

function expectNull(src: Uint8Array, pos: number): number {
  if (src[pos] !== 0x6e || src[pos + 1] !== 0x75 || src[pos + 2] !== 0x6c || src[pos + 3] !== 0x6c) giveUp();
  return delimited(src, pos + 4);
}

function utf8(src: Uint8Array, start: number, end: number): string {
  return Buffer.from(src.buffer, src.byteOffset + start, end - start).toString("utf8");
}

/** Parses the JSON value at [start, end) exactly as JSON.parse would (for the rare values the fast path does not read itself). */
function parseSpan(src: Uint8Array, start: number, end: number): unknown {
  try {
    return JSON.parse(utf8(src, start, end));
  } catch {
    return giveUp();
  }
}

function spanEnd(src: Uint8Array, pos: number): number {
  try {
    return skipValue(src, pos);
  } catch {
    return giveUp();
  }
}

/* ---------------------------------------------------------------- */
/* Scalar writers                                                    */
/* ---------------------------------------------------------------- */

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

const quantityU64: ValueWriter = (src, pos, w, field) => {
  const end = readQuantity64(src, pos);
  w.tag(field, VARINT);
  w.varint64(quantityHi, quantityLo);
  return end;
};

const jsonNumberU64: ValueWriter = (src, pos, w, field) => {
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

const boolWriter: ValueWriter = (src, pos, w, field) => {
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

const doubleWriter: ValueWriter = (src, pos, w, field) => {
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

function stringEnd(src: Uint8Array, pos: number): number {
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
function stringValue(src: Uint8Array, pos: number, end: number): string {
  const value = parseSpan(src, pos, end);
  return typeof value === "string" ? value : giveUp();
}

const stringWriter: ValueWriter = (src, pos, w, field) => {
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
  let o = w.pos;
  let i = start;
  // Eight digits at a time: two 32-bit reads, four table lookups, one 32-bit write.
  for (; i + 8 <= end; i += 8) {
    const low = srcView.getUint32(i, true);
    const high = srcView.getUint32(i + 4, true);
    const b0 = HEX_PAIR_LE[low & 0xffff] as number;
    const b1 = HEX_PAIR_LE[low >>> 16] as number;
    const b2 = HEX_PAIR_LE[high & 0xffff] as number;
    const b3 = HEX_PAIR_LE[high >>> 16] as number;
    if ((b0 | b1 | b2 | b3) < 0) giveUp();
    view.setUint32(o, b0 | (b1 << 8) | (b2 << 16) | (b3 << 24), true);
    o += 4;
  }
  for (; i + 4 <= end; i += 4) {
    const digits = srcView.getUint32(i, true);
    const first = HEX_PAIR_LE[digits & 0xffff] as number;
    const second = HEX_PAIR_LE[digits >>> 16] as number;
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
export function dataWriter(length: number, maxLength: number): ValueWriter {
  return (src, pos, w, field) => {
    if (src[pos] !== QUOTE || src[pos + 1] !== ZERO || ((src[pos + 2] as number) | 0x20) !== LOWER_X) giveUp();
    const start = pos + 3;
    const q = src.indexOf(QUOTE, start);
    if (q < 0) giveUp();
    const digits = q - start;
    if (digits & 1) giveUp();
    const bytes = digits >> 1;
    if ((length && bytes !== length) || (maxLength && bytes > maxLength)) giveUp();
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

/* ---------------------------------------------------------------- */
/* Messages and lists                                                */
/* ---------------------------------------------------------------- */

/** A message-typed value: tag, length, then the message's body (resolved on first use, for recursive types). */
export function messageValue(resolve: () => BodyWriter): ValueWriter {
  let body: BodyWriter | undefined;
  return (src, pos, w, field) => {
    body ??= resolve();
    w.tag(field, LEN);
    const mark = w.beginLength();
    const end = body(src, pos, w);
    w.endLength(mark);
    return end;
  };
}

/** How many elements the last writeList() wrote. */
let listCount = 0;

/** Writes a JSON array as repeated field `field`; null elements give up (no item codec takes null). */
export function writeList(src: Uint8Array, pos: number, w: ProtoWriter, field: number, item: ValueWriter): number {
  if (src[pos] !== OPEN_BRACKET) giveUp();
  pos = ws(src, pos + 1);
  let count = 0;
  if (src[pos] === CLOSE_BRACKET) {
    listCount = 0;
    return pos + 1;
  }
  for (;;) {
    pos = ws(src, item(src, pos, w, field));
    count++;
    const c = src[pos];
    if (c === COMMA) {
      pos = ws(src, pos + 1);
      continue;
    }
    if (c === CLOSE_BRACKET) {
      listCount = count;
      return pos + 1;
    }
    giveUp();
  }
}

interface FieldPlan {
  key: string;
  keyBytes: Uint8Array;
  keyWords: Uint32Array;
  index: number;
  number: number;
  list: boolean;
  omitEmpty: boolean;
  write: ValueWriter;
}

const EXTRAS_FIELD = "json_extras";
const EXTRAS_NUMBER = 1000;

function keyHash(src: Uint8Array, start: number, end: number): number {
  let h = end - start;
  for (let i = start; i < end; i++) h = (Math.imul(h, 31) + (src[i] as number)) | 0;
  return h;
}

function sameBytes(src: Uint8Array, start: number, end: number, key: Uint8Array): boolean {
  if (end - start !== key.length) return false;
  for (let i = 0; i < key.length; i++) if (src[start + i] !== key[i]) return false;
  return true;
}

/** A key as little-endian 32-bit words (and the bytes after the last whole word), to compare four bytes at a time. */
function keyWords(key: Uint8Array): Uint32Array {
  const words = new Uint32Array(key.length >> 2);
  const view = new DataView(key.buffer, key.byteOffset, key.byteLength);
  for (let i = 0; i < words.length; i++) words[i] = view.getUint32(i * 4, true);
  return words;
}

/** sameBytes for the text at `start` (a key of known length, already bounded by a quote). */
function isKey(src: Uint8Array, start: number, plan: FieldPlan): boolean {
  const words = plan.keyWords;
  for (let i = 0; i < words.length; i++) if (srcView.getUint32(start + i * 4, true) !== words[i]) return false;
  const key = plan.keyBytes;
  for (let i = words.length * 4; i < key.length; i++) if (src[start + i] !== key[i]) return false;
  return true;
}

function writeStrings(w: ProtoWriter, field: number, values: readonly string[]): void {
  for (const value of values) {
    const bytes = Buffer.from(value, "utf8");
    w.tag(field, LEN);
    w.bytes(bytes, 0, bytes.length);
  }
}

/** JsonExtras (field 1000): null_keys = 1, empty_keys = 2, absent_keys = 3, unknown_fields = 4 (map<string, string>). */
function writeExtras(w: ProtoWriter, nullKeys: string[] | undefined, emptyKeys: string[] | undefined, absentKeys: string[] | undefined, unknown: string[] | undefined): void {
  w.tag(EXTRAS_NUMBER, LEN);
  const mark = w.beginLength();
  if (nullKeys) writeStrings(w, 1, nullKeys);
  if (emptyKeys) writeStrings(w, 2, emptyKeys);
  if (absentKeys) writeStrings(w, 3, absentKeys);
  if (unknown) {
    for (let i = 0; i < unknown.length; i += 2) {
      w.tag(4, LEN);
      const entry = w.beginLength();
      writeStrings(w, 1, [unknown[i] as string]);
      writeStrings(w, 2, [unknown[i + 1] as string]);
      w.endLength(entry);
    }
  }
  w.endLength(mark);
}

/** The body writer of a plain object message, mirroring objectMessageCodec in message-codec.ts. */
function objectBody(fields: FieldPlan[], hasExtras: boolean): BodyWriter {
  const byHash = new Map<number, FieldPlan[]>();
  for (const f of fields) {
    const h = keyHash(f.keyBytes, 0, f.keyBytes.length);
    byHash.set(h, [...(byHash.get(h) ?? []), f]);
  }
  const emitEmptyLists = fields.filter((f) => f.list && !f.omitEmpty);
  const wide = fields.length > 30;
  /** The key seen after each field (index + 1; slot 0: the first key), learnt as objects go by. */
  const nextKey: (FieldPlan | undefined)[] = new Array(fields.length + 1).fill(undefined);
  return (src, pos, w) => {
    let previous = -1;
    if (src[pos] !== OPEN_BRACE) giveUp();
    pos = ws(src, pos + 1);
    let seen = 0;
    const seenWide = wide ? new Uint8Array(fields.length) : undefined;
    let nullKeys: string[] | undefined;
    let emptyKeys: string[] | undefined;
    let unknown: string[] | undefined;
    if (src[pos] === CLOSE_BRACE) {
      pos++;
    } else {
      for (;;) {
        if (src[pos] !== QUOTE) giveUp();
        const keyStart = pos + 1;
        let keyEnd: number;
        let plan: FieldPlan | undefined;
        // Nodes write an object's keys in the same order every time: try the key that followed this one last time.
        const guess = nextKey[previous + 1];
        if (guess !== undefined && src[keyStart + guess.keyBytes.length] === QUOTE && isKey(src, keyStart, guess)) {
          plan = guess;
          keyEnd = keyStart + guess.keyBytes.length;
        } else {
          keyEnd = src.indexOf(QUOTE, keyStart);
          if (keyEnd < 0) giveUp();
          let h = keyEnd - keyStart;
          for (let i = keyStart; i < keyEnd; i++) {
            const c = src[i] as number;
            if (c === BACKSLASH || c < 0x20) giveUp(); // escaped keys: the object path reads them
            h = (Math.imul(h, 31) + c) | 0;
          }
          const candidates = byHash.get(h);
          if (candidates !== undefined) {
            for (const f of candidates) {
              if (sameBytes(src, keyStart, keyEnd, f.keyBytes)) {
                plan = f;
                break;
              }
            }
          }
          nextKey[previous + 1] = plan;
        }
        previous = plan === undefined ? -1 : plan.index;
        pos = ws(src, keyEnd + 1);
        if (src[pos] !== COLON) giveUp();
        pos = ws(src, pos + 1);
        if (plan === undefined) {
          if (!hasExtras) giveUp();
          const key = utf8(src, keyStart, keyEnd);
          const end = spanEnd(src, pos);
          unknown ??= [];
          for (let i = 0; i < unknown.length; i += 2) if (unknown[i] === key) giveUp(); // a duplicate key: JSON.parse keeps the last
          unknown.push(key, JSON.stringify(parseSpan(src, pos, end)));
          pos = end;
        } else {
          if (seenWide !== undefined) {
            if (seenWide[plan.index] === 1) giveUp();
            seenWide[plan.index] = 1;
          } else {
            const bit = 1 << plan.index;
            if (seen & bit) giveUp(); // a duplicate key: JSON.parse keeps the last
            seen |= bit;
          }
          if (src[pos] === 0x6e) {
            pos = expectNull(src, pos);
            if (hasExtras) (nullKeys ??= []).push(plan.key);
          } else if (plan.list) {
            pos = writeList(src, pos, w, plan.number, plan.write);
            if (listCount === 0 && plan.omitEmpty && hasExtras) (emptyKeys ??= []).push(plan.key);
          } else {
            pos = plan.write(src, pos, w, plan.number);
          }
        }
        pos = ws(src, pos);
        const c = src[pos];
        if (c === COMMA) {
          pos = ws(src, pos + 1);
          continue;
        }
        if (c === CLOSE_BRACE) {
          pos++;
          break;
        }
        giveUp();
      }
    }
    if (hasExtras) {
      let absentKeys: string[] | undefined;
      for (const f of emitEmptyLists) {
        const present = seenWide !== undefined ? seenWide[f.index] === 1 : (seen & (1 << f.index)) !== 0;
        if (!present) (absentKeys ??= []).push(f.key);
      }
      if (nullKeys || emptyKeys || absentKeys || unknown) writeExtras(w, nullKeys, emptyKeys, absentKeys, unknown);
    }
    return pos;
  };
}

function familyOf(schema: DescMessage): "eth" | "starknet" {
  return schema.typeName.startsWith("nodegate.starknet.") ? "starknet" : "eth";
}

/** Compiles and keeps the binary writers of message types, once per type. */
export class BinaryCompiler {
  readonly #bodies = new Map<string, { writer: BodyWriter | undefined; done: boolean }>();
  readonly #registry: CodecRegistry;
  readonly #binarySpecials: ReadonlyMap<string, BinarySpecialFactory>;

  /**
   * Every type `registry` handles by hand needs a binary writer in
   * `binarySpecials` too, or it has no fast path.
   */
  constructor(registry: CodecRegistry, binarySpecials: ReadonlyMap<string, BinarySpecialFactory>) {
    this.#registry = registry;
    this.#binarySpecials = binarySpecials;
  }

  /** The body writer of a message type, or undefined when some field on the way has no fast path. */
  message(schema: DescMessage): BodyWriter | undefined {
    const known = this.#bodies.get(schema.typeName);
    if (known !== undefined) {
      // A type being compiled (recursion) is reached through a late-bound call.
      return known.done ? known.writer : (src, pos, w) => (this.#bodies.get(schema.typeName)?.writer ?? giveUp)(src, pos, w);
    }
    const entry: { writer: BodyWriter | undefined; done: boolean } = { writer: undefined, done: false };
    this.#bodies.set(schema.typeName, entry);
    if (this.#registry.isSpecial(schema.typeName)) {
      entry.writer = this.#binarySpecials.get(schema.typeName)?.(this, schema);
    } else {
      entry.writer = this.#generic(schema);
    }
    entry.done = true;
    return entry.writer;
  }

  /** The writer of one value of a field (the element writer for a repeated field). */
  field(field: DescField): ValueWriter | undefined {
    const family = familyOf(field.parent);
    const rules = getOption(field, fieldRulesExt);
    const encoding = rules?.encoding ?? Encoding.UNSPECIFIED;
    const kind = field.fieldKind === "list" ? field.listKind : field.fieldKind;
    if (kind === "message") {
      const message = field.message as DescMessage;
      if (this.message(message) === undefined) return undefined;
      return messageValue(() => this.message(message) as BodyWriter);
    }
    if (kind === "enum") return this.#enumWriter(field);
    if (kind === "map") return undefined;
    switch (field.scalar as ScalarType) {
      case ScalarType.BOOL:
        return boolWriter;
      case ScalarType.STRING:
        return stringWriter;
      case ScalarType.DOUBLE:
        return doubleWriter;
      case ScalarType.UINT64:
        if (encoding === Encoding.JSON_NUMBER) return jsonNumberU64;
        if (encoding === Encoding.UNSPECIFIED || encoding === Encoding.QUANTITY) return quantityU64;
        return undefined;
      case ScalarType.BYTES:
        if (family === "starknet") return undefined;
        if (encoding === Encoding.UNSPECIFIED || encoding === Encoding.DATA) return dataWriter(rules?.length ?? 0, rules?.maxLength ?? 0);
        return undefined;
      default:
        return undefined;
    }
  }

  #enumWriter(field: DescField): ValueWriter {
    const desc = field.enum as NonNullable<DescField["enum"]>;
    const byName = new Map<string, number>();
    for (const v of desc.values) {
      if (v.number === 0) continue;
      const name = v.name.startsWith(desc.sharedPrefix ?? "") ? v.name.slice((desc.sharedPrefix ?? "").length) : v.name;
      byName.set(name, v.number);
    }
    return (src, pos, w, fieldNumber) => {
      const end = stringEnd(src, pos);
      const n = byName.get(stringValue(src, pos, end));
      if (n === undefined) giveUp();
      w.tag(fieldNumber, VARINT);
      w.varint(n);
      return end;
    };
  }

  #generic(schema: DescMessage): BodyWriter | undefined {
    if (schema.oneofs.length > 0) return undefined;
    const family = familyOf(schema);
    const fields: FieldPlan[] = [];
    let hasExtras = false;
    for (const field of schema.fields) {
      if (field.name === EXTRAS_FIELD) {
        hasExtras = true;
        continue;
      }
      const write = this.field(field);
      if (write === undefined) return undefined;
      const key = family === "starknet" ? field.name : field.jsonName;
      const keyBytes = Buffer.from(key, "utf8");
      fields.push({
        key,
        keyBytes,
        keyWords: keyWords(keyBytes),
        index: fields.length,
        number: field.number,
        list: field.fieldKind === "list",
        omitEmpty: getOption(field, fieldRulesExt)?.omitEmpty ?? false,
        write,
      });
    }
    if (getOption(schema, messageRulesExt)?.list) {
      const only = fields[0];
      if (fields.length !== 1 || !only?.list || hasExtras) return undefined;
      return (src, pos, w) => writeList(src, pos, w, only.number, only.write);
    }
    return objectBody(fields, hasExtras);
  }
}

/** Writes a method's result (field 1 of its response message) as protobuf binary. */
export class ResultTranscoder {
  readonly #item: ValueWriter;
  readonly #list: boolean;

  constructor(item: ValueWriter, list: boolean) {
    this.#item = item;
    this.#list = list;
  }

  /** The response compiled for `schema`, or undefined when its result type has no fast path. */
  static compile(compiler: BinaryCompiler, schema: DescMessage): ResultTranscoder | undefined {
    const field = schema.fields[0];
    if (field === undefined || field.number !== 1) return undefined;
    const item = compiler.field(field);
    return item === undefined ? undefined : new ResultTranscoder(item, field.fieldKind === "list");
  }

  /**
   * The response message's bytes for the JSON result in body[start, end),
   * after `headroom` free bytes (room for a frame header); undefined when the
   * fast path gives up.
   */
  write(body: Uint8Array, start: number, end: number, headroom = 0): Uint8Array | undefined {
    const src = body.subarray(start, end);
    srcView = new DataView(src.buffer, src.byteOffset, src.byteLength);
    // Hex halves in binary and keys vanish: answers come out at 40-50% of their JSON, so half is
    // allocated up front (the writer grows if it must); over-allocating would only feed the GC.
    const w = new ProtoWriter((src.length >> 1) + headroom + 1024, headroom);
    try {
      let pos = ws(src, 0);
      if (src[pos] === 0x6e) {
        pos = expectNull(src, pos); // a null result: field 1 unset
      } else if (this.#list) {
        pos = writeList(src, pos, w, 1, this.#item);
      } else {
        pos = this.#item(src, pos, w, 1);
      }
      if (ws(src, pos) !== src.length) giveUp();
    } catch (err) {
      if (err === GIVE_UP) return undefined;
      throw err;
    }
    return w.buf.subarray(0, w.pos);
  }
}
