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
import { type BodyWriter, boolWriter, dataWriter, doubleWriter, jsonNumberU64, quantityU64, stringEnd, stringValue, stringWriter, type ValueWriter } from "./binary-scalars.js";
import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, expectNull, GIVE_UP, giveUp, OPEN_BRACE, OPEN_BRACKET, parseSpan, QUOTE, readFrom, spanEnd, srcView, utf8, ws } from "./json-scan.js";
import { exactSpanText } from "./exact-numbers.js";
import type { CodecRegistry } from "./message-codec.js";
import { LEN, ProtoWriter, VARINT } from "./proto-writer.js";
import { EXTRAS_FIELD, familyOf, jsonKeyOf } from "./json-naming.js";

export type { BodyWriter, ValueWriter } from "./binary-scalars.js";
export { dataWriter, uint256Body } from "./binary-scalars.js";
export { giveUp, ws } from "./json-scan.js";

/** Builds the body writer of a message type whose JSON shape is special (a union, a number-or-tag). */
export type BinarySpecialFactory = (compiler: BinaryCompiler, schema: DescMessage) => BodyWriter | undefined;

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
  /** The field's JSON key as UTF-8 (matched against the text, and written as is into json_extras). */
  keyBytes: Uint8Array;
  keyWords: Uint32Array;
  index: number;
  number: number;
  list: boolean;
  omitEmpty: boolean;
  write: ValueWriter;
}

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
  const source = srcView;
  for (let i = 0; i < words.length; i++) if (source.getUint32(start + i * 4, true) !== words[i]) return false;
  const key = plan.keyBytes;
  for (let i = words.length * 4; i < key.length; i++) if (src[start + i] !== key[i]) return false;
  return true;
}

function writeString(w: ProtoWriter, field: number, value: string): void {
  const bytes = Buffer.from(value, "utf8");
  w.tag(field, LEN);
  w.bytes(bytes, 0, bytes.length);
}

/** Field keys, written from the bytes their plans hold (built once, at compile time). */
function writeKeys(w: ProtoWriter, field: number, keys: readonly Uint8Array[]): void {
  for (const key of keys) {
    w.tag(field, LEN);
    w.bytes(key, 0, key.length);
  }
}

/** JsonExtras (field 1000): null_keys = 1, empty_keys = 2, absent_keys = 3, unknown_fields = 4 (map<string, string>). */
function writeExtras(w: ProtoWriter, nullKeys: Uint8Array[] | undefined, emptyKeys: Uint8Array[] | undefined, absentKeys: Uint8Array[] | undefined, unknown: string[] | undefined): void {
  w.tag(EXTRAS_NUMBER, LEN);
  const mark = w.beginLength();
  if (nullKeys) writeKeys(w, 1, nullKeys);
  if (emptyKeys) writeKeys(w, 2, emptyKeys);
  if (absentKeys) writeKeys(w, 3, absentKeys);
  if (unknown) {
    for (let i = 0; i < unknown.length; i += 2) {
      w.tag(4, LEN);
      const entry = w.beginLength();
      writeString(w, 1, unknown[i] as string);
      writeString(w, 2, unknown[i + 1] as string);
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
    let nullKeys: Uint8Array[] | undefined;
    let emptyKeys: Uint8Array[] | undefined;
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
          unknown.push(key, exactSpanText(parseSpan(src, pos, end), () => utf8(src, pos, end)));
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
            if (hasExtras) (nullKeys ??= []).push(plan.keyBytes);
          } else if (plan.list) {
            pos = writeList(src, pos, w, plan.number, plan.write);
            if (listCount === 0 && plan.omitEmpty && hasExtras) (emptyKeys ??= []).push(plan.keyBytes);
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
      let absentKeys: Uint8Array[] | undefined;
      for (const f of emitEmptyLists) {
        const present = seenWide !== undefined ? seenWide[f.index] === 1 : (seen & (1 << f.index)) !== 0;
        if (!present) (absentKeys ??= []).push(f.keyBytes);
      }
      if (nullKeys || emptyKeys || absentKeys || unknown) writeExtras(w, nullKeys, emptyKeys, absentKeys, unknown);
    }
    return pos;
  };
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
        if (encoding === Encoding.UNSPECIFIED || encoding === Encoding.DATA) return dataWriter(rules?.length ?? 0, rules?.maxLength ?? 0, rules?.emptyAllowed ?? false);
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
    const fields: FieldPlan[] = [];
    let hasExtras = false;
    for (const field of schema.fields) {
      if (field.name === EXTRAS_FIELD) {
        hasExtras = true;
        continue;
      }
      const write = this.field(field);
      if (write === undefined) return undefined;
      const keyBytes = Buffer.from(jsonKeyOf(field), "utf8");
      fields.push({
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
    readFrom(src);
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
      // An unknown member nested thousands deep overflows the stack here; the object path says what is wrong with it
      // (found from outside: it came out as an internal error with no details).
      if (err === GIVE_UP || err instanceof RangeError) return undefined;
      throw err;
    }
    return w.buf.subarray(0, w.pos);
  }
}
