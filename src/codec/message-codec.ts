/**
 * Compiles JSON-RPC <-> protobuf codecs from message descriptors and their
 * (nodegate.jsonrpc.v1.field) annotations. Plans are built once per message
 * type; decoding and encoding then walk a flat list of field plans.
 *
 * Lossless by construction: explicit nulls, empty-versus-absent lists and
 * unmodeled keys go into the message's json_extras (field 1000), so
 * JSON -> proto -> JSON reproduces the node's answer (hex case and key order
 * aside).
 */
import { create, getOption, ScalarType, type DescField, type DescMessage, type Message } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { type JsonExtras, JsonExtrasSchema } from "../../gen/nodegate/jsonrpc/v1/json_extras_pb.js";
import { Encoding, field as fieldRulesExt, message as messageRulesExt } from "../../gen/nodegate/jsonrpc/v1/options_pb.js";
import { CodecError, locate, UNSAFE_JSON_INTEGER } from "./codec-error.js";
import {
  decodeData,
  decodeFelt,
  decodeStorageSlot,
  decodeUint64,
  encodeData,
  encodeFelt,
  encodeQuantity,
  encodeStorageSlot,
} from "./hex.js";
import { unknownMemberText } from "./exact-numbers.js";
import { wrongByteCount } from "./byte-count.js";
import { EXTRAS_FIELD, familyOf, jsonKeyOf } from "./json-naming.js";

/** Converts one JSON value to its proto form and back to JSON text. */
export interface ValueCodec<T = unknown> {
  /** Decodes a parsed JSON value; throws CodecError naming the bad field. */
  decode(json: unknown): T;
  /** Encodes to JSON text; throws CodecError when the value breaks a rule (a 19-byte address). */
  encode(value: T): string;
}

/** Builds the codec of a message type that needs hand-written rules (a union, a number-or-tag). */
export type SpecialCodecFactory = (registry: CodecRegistry, schema: DescMessage) => ValueCodec<Message>;

interface FieldPlan {
  key: string;
  localName: string;
  list: boolean;
  omitEmpty: boolean;
  /** A scalar without presence (no `optional`): a key the node sent null leaves it at its zero value. */
  implicit: boolean;
  item: ValueCodec;
}

function describeJson(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return value.length > 40 ? `a string "${value.slice(0, 37)}..."` : `"${value}"`;
  return typeof value === "object" ? "an object" : `${typeof value} ${String(value)}`;
}

const IMPLICIT_PRESENCE = FeatureSet_FieldPresence.IMPLICIT;

/** Whether a scalar or enum value is its type's zero value (what a field without presence holds when unset). */
function isZero(v: unknown): boolean {
  return v === 0 || v === 0n || v === "" || v === false || (v instanceof Uint8Array && v.length === 0);
}

function fail(reason: string): never {
  throw new CodecError("", reason);
}

const boolCodec: ValueCodec<boolean> = {
  decode: (json) => (typeof json === "boolean" ? json : fail(`want a boolean, got ${describeJson(json)}`)),
  encode: (value) => (value ? "true" : "false"),
};

const stringCodec: ValueCodec<string> = {
  decode: (json) => (typeof json === "string" ? json : fail(`want a string, got ${describeJson(json)}`)),
  encode: (value) => JSON.stringify(value),
};

const doubleCodec: ValueCodec<number> = {
  // JSON.parse reads 1e400 as Infinity; a node's JSON decoder refuses it (geth: "cannot unmarshal number 1e400").
  decode: (json) => (typeof json === "number" ? (Number.isFinite(json) ? json : fail("want a finite number")) : fail(`want a number, got ${describeJson(json)}`)),
  encode: (value) => (Number.isFinite(value) ? JSON.stringify(value) : fail(`cannot write ${value} as JSON`)),
};

const quantityU64Codec: ValueCodec<bigint> = {
  decode: (json) => decodeUint64(json),
  encode: (value) => encodeQuantity(value),
};

const jsonNumberU64Codec: ValueCodec<bigint> = {
  decode: (json) => {
    if (typeof json !== "number" || !Number.isInteger(json) || json < 0) {
      fail(`want a non-negative JSON integer, got ${describeJson(json)}`);
    }
    if (!Number.isSafeInteger(json)) fail(UNSAFE_JSON_INTEGER);
    return BigInt(json);
  },
  encode: (value) => value.toString(),
};

function dataCodec(length: number, maxLength: number, emptyAllowed: boolean): ValueCodec<Uint8Array> {
  const rules = { length, maxLength, emptyAllowed };
  return {
    decode: (json) => decodeData(json, rules),
    encode: (value) => {
      if (length && value.length !== length && !(value.length === 0 && emptyAllowed)) fail(wrongByteCount(`${length} bytes`, value));
      if (maxLength && value.length > maxLength) fail(`want at most ${maxLength} bytes, got ${value.length}`);
      return `"${encodeData(value)}"`;
    },
  };
}

const feltCodec: ValueCodec<Uint8Array> = {
  decode: (json) => decodeFelt(json),
  encode: (value) => {
    if (value.length > 32) fail(`a felt has at most 32 bytes, got ${value.length}`);
    return `"${encodeFelt(value)}"`;
  },
};

const storageSlotCodec: ValueCodec<Uint8Array> = {
  decode: (json) => decodeStorageSlot(json),
  encode: (value) => {
    if (value.length > 32) fail(`a storage slot has at most 32 bytes, got ${value.length}`);
    return `"${encodeStorageSlot(value)}"`;
  },
};

const storageKeyCodec: ValueCodec<Uint8Array> = {
  decode: (json) => decodeStorageSlot(json),
  encode: (value) => {
    if (value.length > 32) fail(`a storage key has at most 32 bytes, got ${value.length}`);
    const padded = new Uint8Array(32);
    padded.set(value, 32 - value.length);
    return `"${encodeData(padded)}"`;
  },
};

function withQuotes<T>(codec: ValueCodec<T>): ValueCodec<T> {
  return { decode: codec.decode, encode: (value) => `"${codec.encode(value)}"` };
}

const quotedQuantityU64 = withQuotes(quantityU64Codec);

/** Holds the compiled codec of every message type, built on first use. */
export class CodecRegistry {
  readonly #codecs = new Map<string, ValueCodec<Message>>();
  readonly #specials: ReadonlyMap<string, SpecialCodecFactory>;

  constructor(specials: ReadonlyMap<string, SpecialCodecFactory>) {
    this.#specials = specials;
  }

  /** Whether a message type has a hand-written codec (other codecs must not assume the generic shape). */
  isSpecial(typeName: string): boolean {
    return this.#specials.has(typeName);
  }

  /** The codec of a message type (special if registered, else compiled from its descriptor). */
  message<M extends Message>(schema: DescMessage): ValueCodec<M> {
    let codec = this.#codecs.get(schema.typeName);
    if (codec === undefined) {
      // A forward reference lets recursive or mutually referencing messages compile.
      let compiled: ValueCodec<Message> | undefined;
      this.#codecs.set(schema.typeName, {
        decode: (json) => (compiled as ValueCodec<Message>).decode(json),
        encode: (value) => (compiled as ValueCodec<Message>).encode(value),
      });
      const special = this.#specials.get(schema.typeName);
      compiled = special ? special(this, schema) : this.compileGeneric(schema);
      this.#codecs.set(schema.typeName, compiled);
      codec = compiled;
    }
    return codec as ValueCodec<M>;
  }

  /** The codec of one value of a field (the element codec for a repeated field). */
  field(field: DescField): ValueCodec {
    const family = familyOf(field.parent);
    const rules = getOption(field, fieldRulesExt);
    const encoding = rules?.encoding ?? Encoding.UNSPECIFIED;
    const kind = field.fieldKind === "list" ? field.listKind : field.fieldKind;
    if (kind === "message") {
      const message = field.message as DescMessage;
      return this.message(message) as ValueCodec;
    }
    if (kind === "enum") {
      return this.#enumCodec(field);
    }
    if (kind === "map") throw new Error(`${field.parent.typeName}.${field.name}: map fields are not JSON-RPC encodable`);
    const scalar = field.scalar as ScalarType;
    switch (scalar) {
      case ScalarType.BOOL:
        return boolCodec as ValueCodec;
      case ScalarType.STRING:
        return stringCodec as ValueCodec;
      case ScalarType.DOUBLE:
        return doubleCodec as ValueCodec;
      case ScalarType.UINT64:
        if (encoding === Encoding.JSON_NUMBER) return jsonNumberU64Codec as ValueCodec;
        if (encoding === Encoding.UNSPECIFIED || encoding === Encoding.QUANTITY) return quotedQuantityU64 as ValueCodec;
        break;
      case ScalarType.BYTES:
        if (encoding === Encoding.FELT || (encoding === Encoding.UNSPECIFIED && family === "starknet")) {
          return feltCodec as ValueCodec;
        }
        if (encoding === Encoding.STORAGE_SLOT) return storageSlotCodec as ValueCodec;
        if (encoding === Encoding.STORAGE_KEY) return storageKeyCodec as ValueCodec;
        if (encoding === Encoding.UNSPECIFIED || encoding === Encoding.DATA) {
          return dataCodec(rules?.length ?? 0, rules?.maxLength ?? 0, rules?.emptyAllowed ?? false) as ValueCodec;
        }
        break;
      default:
        break;
    }
    throw new Error(`${field.parent.typeName}.${field.name}: no JSON-RPC encoding for this field type and encoding ${encoding}`);
  }

  #enumCodec(field: DescField): ValueCodec {
    const desc = field.enum as NonNullable<DescField["enum"]>;
    const byName = new Map<string, number>();
    const byNumber = new Map<number, string>();
    // protobuf-es gives the shared prefix in lower case ("data_availability_mode_").
    const prefix = desc.sharedPrefix ?? "";
    for (const v of desc.values) {
      if (v.number === 0) continue;
      const name = v.name.toLowerCase().startsWith(prefix) ? v.name.slice(prefix.length) : v.name;
      byName.set(name, v.number);
      byNumber.set(v.number, name);
    }
    return {
      decode: (json) => {
        const n = typeof json === "string" ? byName.get(json) : undefined;
        if (n === undefined) fail(`want one of ${[...byName.keys()].join(", ")}, got ${describeJson(json)}`);
        return n;
      },
      encode: (value) => {
        const name = byNumber.get(value as number);
        if (name === undefined) fail(`unset or unknown ${desc.name} value ${String(value)}`);
        return JSON.stringify(name);
      },
    };
  }

  /** The descriptor-driven codec of a message, for special codecs that wrap it. */
  compileGeneric<M extends Message>(schema: DescMessage): ValueCodec<M> {
    if (schema.oneofs.length > 0) {
      throw new Error(`${schema.typeName} has a oneof and needs a special codec`);
    }
    const fields: FieldPlan[] = [];
    let hasExtras = false;
    for (const field of schema.fields) {
      if (field.name === EXTRAS_FIELD) {
        hasExtras = true;
        continue;
      }
      const rules = getOption(field, fieldRulesExt);
      fields.push({
        key: jsonKeyOf(field),
        localName: field.localName,
        list: field.fieldKind === "list",
        omitEmpty: rules?.omitEmpty ?? false,
        implicit: (field.fieldKind === "scalar" || field.fieldKind === "enum") && field.presence === IMPLICIT_PRESENCE,
        item: this.field(field),
      });
    }
    const messageRules = getOption(schema, messageRulesExt);
    if (messageRules?.list) {
      const only = fields[0];
      if (fields.length !== 1 || !only?.list || hasExtras) {
        throw new Error(`${schema.typeName}: a list message needs exactly one repeated field`);
      }
      return listMessageCodec(schema, only) as ValueCodec<M>;
    }
    return objectMessageCodec(schema, fields, hasExtras) as ValueCodec<M>;
  }
}

function decodeList(plan: FieldPlan, json: unknown): unknown[] {
  if (!Array.isArray(json)) fail(`want an array, got ${describeJson(json)}`);
  const out = new Array<unknown>(json.length);
  let i = 0;
  try {
    for (; i < json.length; i++) out[i] = plan.item.decode(json[i]);
  } catch (err) {
    throw locate(err, `[${i}]`);
  }
  return out;
}

function encodeList(plan: FieldPlan, values: readonly unknown[]): string {
  let out = "[";
  let i = 0;
  try {
    for (; i < values.length; i++) {
      if (i) out += ",";
      out += plan.item.encode(values[i]);
    }
  } catch (err) {
    throw locate(err, `[${i}]`);
  }
  return `${out}]`;
}


function listMessageCodec(schema: DescMessage, only: FieldPlan): ValueCodec<Message> {
  return {
    decode(json) {
      const message = create(schema) as Record<string, unknown>;
      message[only.localName] = decodeList(only, json);
      return message as Message;
    },
    encode(value) {
      return encodeList(only, (value as unknown as Record<string, unknown[]>)[only.localName] as unknown[]);
    },
  };
}

function isJsonText(raw: string): boolean {
  try {
    JSON.parse(raw);
    return true;
  } catch {
    return false;
  }
}

function newExtras(): JsonExtras {
  return create(JsonExtrasSchema);
}

function objectMessageCodec(schema: DescMessage, fields: FieldPlan[], hasExtras: boolean): ValueCodec<Message> {
  const byKey = new Map(fields.map((f) => [f.key, f]));
  const emitEmptyLists = fields.filter((f) => f.list && !f.omitEmpty);
  return {
    decode(json) {
      if (typeof json !== "object" || json === null || Array.isArray(json)) {
        fail(`want an object, got ${describeJson(json)}`);
      }
      const source = json as Record<string, unknown>;
      const message = create(schema) as Record<string, unknown>;
      let extras: JsonExtras | undefined;
      let key = "";
      try {
        for (key in source) {
          const value = source[key];
          const plan = byKey.get(key);
          if (plan === undefined) {
            if (!hasExtras) fail(`unknown field`);
            extras ??= newExtras();
            // Defined, not assigned: assigning "__proto__" would set the map's prototype, and the key would be lost.
            Object.defineProperty(extras.unknownFields, key, { value: unknownMemberText(value, source, key), enumerable: true, writable: true, configurable: true });
            continue;
          }
          if (value === null) {
            if (!hasExtras) continue;
            extras ??= newExtras();
            extras.nullKeys.push(key);
            continue;
          }
          if (plan.list) {
            const list = decodeList(plan, value);
            if (list.length === 0 && plan.omitEmpty && hasExtras) {
              extras ??= newExtras();
              extras.emptyKeys.push(key);
            }
            message[plan.localName] = list;
          } else {
            message[plan.localName] = plan.item.decode(value);
          }
        }
      } catch (err) {
        throw locate(err, key);
      }
      if (hasExtras) {
        for (const plan of emitEmptyLists) {
          if (!(plan.key in source)) {
            extras ??= newExtras();
            extras.absentKeys.push(plan.key);
          }
        }
        if (extras !== undefined) message.jsonExtras = extras;
      }
      return message as Message;
    },
    encode(value) {
      const message = value as unknown as Record<string, unknown>;
      const extras = message.jsonExtras as JsonExtras | undefined;
      let out = "{";
      let plan: FieldPlan | undefined;
      try {
        for (plan of fields) {
          const v = message[plan.localName];
          if (plan.list) {
            const list = v as unknown[];
            if (list.length === 0) {
              // A list the node (or caller) sent as null is written null below, once (found from outside: [] and
              // then null, a duplicate key).
              const write = plan.omitEmpty
                ? extras !== undefined && extras.emptyKeys.includes(plan.key)
                : extras === undefined || !(extras.absentKeys.includes(plan.key) || extras.nullKeys.includes(plan.key));
              if (!write) continue;
            }
            out += `${out.length > 1 ? "," : ""}"${plan.key}":${encodeList(plan, list)}`;
          } else if (v !== undefined && !(plan.implicit && isZero(v) && extras?.nullKeys.includes(plan.key))) {
            // A field without presence holds its zero value for a key the node sent null: null is written below.
            out += `${out.length > 1 ? "," : ""}"${plan.key}":${plan.item.encode(v)}`;
          }
        }
      } catch (err) {
        throw locate(err, plan?.key ?? "");
      }
      if (extras !== undefined) {
        for (const key of extras.nullKeys) {
          const known = byKey.get(key);
          const v = known === undefined ? undefined : message[known.localName];
          if (known !== undefined && (known.list ? (v as unknown[]).length > 0 : v !== undefined && !(known.implicit && isZero(v)))) continue;
          out += `${out.length > 1 ? "," : ""}${JSON.stringify(key)}:null`;
        }
        for (const key in extras.unknownFields) {
          // Skipped, it would change the call's meaning unseen (a "to" here made an eth_call without a target).
          if (byKey.has(key)) throw new CodecError(`jsonExtras.unknownFields[${JSON.stringify(key)}]`, "names a field of the message: set that field instead");
          const raw = extras.unknownFields[key] as string;
          if (!isJsonText(raw)) throw new CodecError(`jsonExtras.unknownFields[${JSON.stringify(key)}]`, "not valid JSON text");
          out += `${out.length > 1 ? "," : ""}${JSON.stringify(key)}:${raw}`;
        }
      }
      return `${out}}`;
    },
  };
}
