/**
 * Starknet values whose JSON shape is not a plain object: the BLOCK_ID param
 * (a hash object, a number object or a tag), u128 amounts, the L1 handler's
 * NUM_AS_HEX nonce, and TXN_WITH_HASH, one flat object whose "type" and
 * "version" pick one of eleven variants.
 */
import { create, type DescMessage, type Message } from "@bufbuild/protobuf";
import { type BlockId, BlockIdSchema, BlockTag, type Uint128, Uint128Schema } from "../../gen/nodegate/starknet/v1/primitives_pb.js";
import {
  DeclareTransactionV0Schema,
  DeclareTransactionV1Schema,
  DeclareTransactionV2Schema,
  DeclareTransactionV3Schema,
  DeployAccountTransactionV1Schema,
  DeployAccountTransactionV3Schema,
  DeployTransactionSchema,
  InvokeTransactionV0Schema,
  InvokeTransactionV1Schema,
  InvokeTransactionV3Schema,
  type L1HandlerTransaction,
  L1HandlerTransactionSchema,
  type TransactionWithHash,
  TransactionWithHashSchema,
} from "../../gen/nodegate/starknet/v1/transaction_pb.js";
import { CodecError, locate, UNSAFE_JSON_INTEGER } from "./codec-error.js";
import { carryNumberTexts } from "./exact-numbers.js";
import { bytesToBigint, decodeFelt, decodeQuantityBytes, encodeFelt, encodeQuantity, encodeQuantityBytes, readsLeniently, trimLeadingZeros } from "./hex.js";
import type { CodecRegistry, SpecialCodecFactory, ValueCodec } from "./message-codec.js";

function fail(reason: string): never {
  throw new CodecError("", reason);
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing (the key is missing)";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return value.length > 40 ? `"${value.slice(0, 37)}..."` : JSON.stringify(value);
  return typeof value === "object" ? "an object" : `${typeof value} ${String(value)}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function encodeFeltText(bytes: Uint8Array): string {
  if (bytes.length > 32) fail(`a felt has at most 32 bytes, got ${bytes.length}`);
  return `"${encodeFelt(bytes)}"`;
}

/** JSON-RPC names of the block tags of both spec generations (before and from 0.9). */
export const STARKNET_TAG_NAMES: ReadonlyMap<BlockTag, string> = new Map([
  [BlockTag.LATEST, "latest"],
  [BlockTag.PENDING, "pending"],
  [BlockTag.PRE_CONFIRMED, "pre_confirmed"],
  [BlockTag.L1_ACCEPTED, "l1_accepted"],
]);
const TAGS_BY_NAME = new Map([...STARKNET_TAG_NAMES].map(([tag, name]) => [name, tag]));
const WANT_BLOCK_ID = `{"block_hash": felt}, {"block_number": integer} or a tag (${[...TAGS_BY_NAME.keys()].join(", ")})`;

function decodeBlockNumber(json: unknown): bigint {
  if (typeof json === "string" && json.startsWith("0x")) {
    fail(`want a JSON integer (Starknet block numbers are not hex), got ${describe(json)}`);
  }
  if (typeof json !== "number" || !Number.isInteger(json) || json < 0) fail(`want a non-negative JSON integer, got ${describe(json)}`);
  if (!Number.isSafeInteger(json)) fail(UNSAFE_JSON_INTEGER);
  return BigInt(json);
}

/** Starknet BLOCK_ID: {"block_hash": FELT} | {"block_number": integer} | tag. */
export const starknetBlockIdCodec: ValueCodec<BlockId> = {
  decode(json) {
    if (typeof json === "string") {
      const tag = TAGS_BY_NAME.get(json);
      if (tag === undefined) fail(`unknown block tag ${describe(json)}, want ${WANT_BLOCK_ID}`);
      return create(BlockIdSchema, { kind: { case: "tag", value: tag } });
    }
    if (isObject(json)) {
      const keys = Object.keys(json);
      if (keys.length === 1 && keys[0] === "block_hash") {
        try {
          return create(BlockIdSchema, { kind: { case: "blockHash", value: decodeFelt(json.block_hash) } });
        } catch (err) {
          throw locate(err, "block_hash");
        }
      }
      if (keys.length === 1 && keys[0] === "block_number") {
        try {
          return create(BlockIdSchema, { kind: { case: "blockNumber", value: decodeBlockNumber(json.block_number) } });
        } catch (err) {
          throw locate(err, "block_number");
        }
      }
    }
    return fail(`want ${WANT_BLOCK_ID}, got ${describe(json)}`);
  },
  encode(value) {
    const kind = value.kind;
    switch (kind.case) {
      case "blockHash":
        try {
          return `{"block_hash":${encodeFeltText(kind.value)}}`;
        } catch (err) {
          throw locate(err, "block_hash");
        }
      case "blockNumber":
        return `{"block_number":${kind.value.toString()}}`;
      case "tag": {
        const name = STARKNET_TAG_NAMES.get(kind.value);
        if (name === undefined) fail(kind.value === 0 ? "block tag is unspecified" : `unknown block tag value ${kind.value}`);
        return `"${name}"`;
      }
      default:
        return fail('block_id is unset: set block_hash, block_number or tag (in JSON, a tag is named in full, as "BLOCK_TAG_PRE_CONFIRMED")');
    }
  },
};

/** Starknet u128: hex without leading zeros, at most 32 digits. */
export const uint128Codec: ValueCodec<Uint128> = {
  decode: (json) => create(Uint128Schema, { value: decodeQuantityBytes(json, 128) }),
  encode(value) {
    // Padding is read as the value it pads, as for Uint256.
    const bytes = trimLeadingZeros(value.value);
    if (bytes.length > 16) fail(`a u128 has at most 16 significant bytes, got ${bytes.length}`);
    return `"${encodeQuantityBytes(bytes)}"`;
  },
};

/** Makes a Uint128 from a bigint (for callers and tests). */
export function uint128(value: bigint): Uint128 {
  return create(Uint128Schema, { value: decodeQuantityBytes(encodeQuantity(value), 128) });
}

const NUM_AS_HEX = /^0x[0-9a-fA-F]+$/;

/** L1_HANDLER_TXN: the generic codec plus the NUM_AS_HEX rule of its string nonce. */
function l1HandlerCodec(registry: CodecRegistry, schema: DescMessage): ValueCodec<L1HandlerTransaction> {
  const generic = registry.compileGeneric<L1HandlerTransaction>(schema);
  const check = (message: L1HandlerTransaction): L1HandlerTransaction => {
    if (message.nonce !== undefined && !NUM_AS_HEX.test(message.nonce)) {
      const respelt = `0x${message.nonce.slice(2)}`;
      if (!(readsLeniently() && message.nonce.startsWith("0X") && NUM_AS_HEX.test(respelt))) {
        throw new CodecError("nonce", `want NUM_AS_HEX (0x and hex digits), got ${describe(message.nonce)}`);
      }
      message.nonce = respelt;
    }
    return message;
  };
  return {
    decode: (json) => check(generic.decode(json)),
    encode: (value) => generic.encode(check(value)),
  };
}

type VariantCase = NonNullable<TransactionWithHash["variant"]["case"]>;

interface Variant {
  case: VariantCase;
  /** JSON-RPC "type". */
  type: string;
  /** The version without the query bit; undefined for DEPLOY, which takes any. */
  version: bigint | undefined;
  schema: DescMessage;
}

const VARIANTS: readonly Variant[] = [
  { case: "invokeV0", type: "INVOKE", version: 0n, schema: InvokeTransactionV0Schema },
  { case: "invokeV1", type: "INVOKE", version: 1n, schema: InvokeTransactionV1Schema },
  { case: "invokeV3", type: "INVOKE", version: 3n, schema: InvokeTransactionV3Schema },
  { case: "declareV0", type: "DECLARE", version: 0n, schema: DeclareTransactionV0Schema },
  { case: "declareV1", type: "DECLARE", version: 1n, schema: DeclareTransactionV1Schema },
  { case: "declareV2", type: "DECLARE", version: 2n, schema: DeclareTransactionV2Schema },
  { case: "declareV3", type: "DECLARE", version: 3n, schema: DeclareTransactionV3Schema },
  { case: "deploy", type: "DEPLOY", version: undefined, schema: DeployTransactionSchema },
  { case: "deployAccountV1", type: "DEPLOY_ACCOUNT", version: 1n, schema: DeployAccountTransactionV1Schema },
  { case: "deployAccountV3", type: "DEPLOY_ACCOUNT", version: 3n, schema: DeployAccountTransactionV3Schema },
  { case: "l1Handler", type: "L1_HANDLER", version: 0n, schema: L1HandlerTransactionSchema },
];

/** Query transactions (estimates, simulations) carry version 2^128 + N. */
const QUERY_BIT = 1n << 128n;

function baseVersion(version: bigint): bigint {
  return version & QUERY_BIT ? version ^ QUERY_BIT : version;
}

/** The keys the union itself writes; a variant's extras must not repeat them. */
const UNION_KEYS = ["transaction_hash", "type"] as const;

/**
 * TXN_WITH_HASH. Decoding picks the variant by "type" and the version with
 * the query bit masked; an unknown pair is a CodecError (the typed path
 * answers INTERNAL, the native path forwards the node's text untouched).
 * Encoding writes transaction_hash and type, then the variant's keys.
 */
function transactionWithHashCodec(registry: CodecRegistry): ValueCodec<TransactionWithHash> {
  const byType = new Map<string, Variant[]>();
  for (const v of VARIANTS) byType.set(v.type, [...(byType.get(v.type) ?? []), v]);
  const byCase = new Map(VARIANTS.map((v) => [v.case, v]));
  const codecs = new Map(VARIANTS.map((v) => [v.case, registry.message<Message & { version: Uint8Array }>(v.schema)]));
  const knownVersions = (type: string) =>
    (byType.get(type) ?? []).map((v) => (v.version === undefined ? "any" : encodeQuantity(v.version))).join(", ");

  return {
    decode(json) {
      if (!isObject(json)) fail(`want a transaction object, got ${describe(json)}`);
      const type = json.type;
      const candidates = typeof type === "string" ? byType.get(type) : undefined;
      if (candidates === undefined) {
        throw new CodecError("type", `unknown transaction type ${describe(type)}, want one of ${[...byType.keys()].join(", ")}`);
      }
      let version: bigint;
      try {
        version = bytesToBigint(decodeFelt(json.version));
      } catch (err) {
        throw locate(err, "version");
      }
      const base = baseVersion(version);
      const variant = candidates.find((v) => v.version === undefined || v.version === base);
      if (variant === undefined) {
        throw new CodecError("version", `no ${type} transaction has version ${encodeQuantity(version)} (known: ${knownVersions(type as string)})`);
      }
      let transactionHash: Uint8Array;
      try {
        transactionHash = decodeFelt(json.transaction_hash);
      } catch (err) {
        throw locate(err, "transaction_hash");
      }
      // No prototype: a "__proto__" key the node sent is a key like any other, not the object's prototype.
      const rest: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
      for (const key in json) if (key !== "type" && key !== "transaction_hash") rest[key] = json[key];
      carryNumberTexts(json, rest);
      const value = (codecs.get(variant.case) as ValueCodec).decode(rest);
      return create(TransactionWithHashSchema, { transactionHash, variant: { case: variant.case, value } as TransactionWithHash["variant"] });
    },
    encode(value) {
      const chosen = value.variant;
      if (chosen.case === undefined) fail("variant is unset: set one transaction variant");
      const variant = byCase.get(chosen.case) as Variant;
      const body = chosen.value;
      if (variant.version !== undefined && baseVersion(bytesToBigint(body.version)) !== variant.version) {
        throw new CodecError(
          "version",
          `a ${variant.type} ${chosen.case} transaction has version ${encodeQuantity(variant.version)} or its query form, got ${encodeQuantity(bytesToBigint(body.version))}`,
        );
      }
      for (const key of UNION_KEYS) {
        if (body.jsonExtras?.unknownFields[key] !== undefined || body.jsonExtras?.nullKeys.includes(key)) {
          fail(`json_extras of the variant must not hold "${key}": the transaction writes it`);
        }
      }
      let hash: string;
      try {
        hash = encodeFeltText(value.transactionHash);
      } catch (err) {
        throw locate(err, "transaction_hash");
      }
      const inner = (codecs.get(chosen.case) as ValueCodec).encode(body);
      return `{"transaction_hash":${hash},"type":"${variant.type}"${inner.length > 2 ? `,${inner.slice(1)}` : "}"}`;
    },
  };
}

/** Special codecs of the Starknet package, by message type name. */
export const starknetSpecialCodecs: ReadonlyMap<string, SpecialCodecFactory> = new Map<string, SpecialCodecFactory>([
  [BlockIdSchema.typeName, () => starknetBlockIdCodec as ValueCodec<Message>],
  [Uint128Schema.typeName, () => uint128Codec as ValueCodec<Message>],
  [L1HandlerTransactionSchema.typeName, (registry, schema) => l1HandlerCodec(registry, schema) as ValueCodec<Message>],
  [TransactionWithHashSchema.typeName, (registry) => transactionWithHashCodec(registry) as ValueCodec<Message>],
]);
