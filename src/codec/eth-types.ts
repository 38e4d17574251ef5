/**
 * Ethereum values whose JSON shape is not a plain object: 256-bit quantities,
 * the block parameter, a block's transactions (hashes or objects), topic
 * filters (null, one or many) and the log filter's spelling rules.
 */
import { create, type DescMessage, type Message } from "@bufbuild/protobuf";
import { BlockTransactionsSchema, type BlockTransactions } from "../../gen/nodegate/eth/v1/block_pb.js";
import { type LogFilter, LogFilterSchema, type TopicFilter, TopicFilterSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import { type BlockId, BlockIdSchema, BlockTag, type Uint256, Uint256Schema } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import {
  StateOverrideSchema,
  StorageOverrideSchema,
  type Transaction,
  type TransactionCall,
  TransactionCallSchema,
  TransactionSchema,
} from "../../gen/nodegate/eth/v1/transaction_pb.js";
import { CodecError, locate, UNSAFE_JSON_INTEGER } from "./codec-error.js";
import { decodeData, decodeQuantityBytes, decodeUint64, encodeData, encodeQuantity, encodeQuantityBytes, hasHexPrefix, trimLeadingZeros } from "./hex.js";
import type { CodecRegistry, SpecialCodecFactory, ValueCodec } from "./message-codec.js";
import { stateOverrideCodec, storageOverrideCodec } from "./state-override.js";
import { wrongByteCount } from "./byte-count.js";

function fail(reason: string): never {
  throw new CodecError("", reason);
}

/** A 32-byte word (topic, hash) of another length, at `path` within the field. */
function wrongLength(path: string, bytes: Uint8Array): never {
  throw new CodecError(path, wrongByteCount("32 bytes", bytes));
}

export const uint256Codec: ValueCodec<Uint256> = {
  decode: (json) => ({ $typeName: "nodegate.eth.v1.Uint256", value: decodeQuantityBytes(json) }),
  encode: (value) => {
    // Padding is read as the value it pads: Go's FillBytes(make([]byte, 32)) and Java's toByteArray() sign byte.
    const bytes = trimLeadingZeros(value.value);
    if (bytes.length > 32) fail(`a 256-bit value has at most 32 significant bytes, got ${bytes.length}`);
    return `"${encodeQuantityBytes(bytes)}"`;
  },
};

/** Makes a Uint256 from a bigint (for callers and tests). */
export function uint256(value: bigint): Uint256 {
  return create(Uint256Schema, { value: decodeQuantityBytes(encodeQuantity(value)) });
}

export const TAG_NAMES: ReadonlyMap<BlockTag, string> = new Map([
  [BlockTag.LATEST, "latest"],
  [BlockTag.EARLIEST, "earliest"],
  [BlockTag.PENDING, "pending"],
  [BlockTag.SAFE, "safe"],
  [BlockTag.FINALIZED, "finalized"],
]);
const TAGS_BY_NAME = new Map([...TAG_NAMES].map(([tag, name]) => [name, tag]));

/** Which spellings of the block parameter a method accepts. */
export interface BlockIdForms {
  /** A 32-byte hash or an EIP-1898 {blockHash} object. */
  hash: boolean;
  /** A decimal block number (JSON integer or digits string), as eth_getBlockReceipts allows. */
  decimal: boolean;
  /**
   * A JSON integer: geth reads one as a block number (execution-apis records
   * eth_getBlockByNumber with [2, true]); other nodes refuse it (Anvil, for
   * most methods), so the method table rewrites it to hex before sending.
   */
  integer?: boolean;
}

/** Inside a message (a log filter's range): strict, as nodegate forwards such objects as they came. */
export const ANY_BLOCK: BlockIdForms = { hash: true, decimal: false };
/** The block parameter of a method. */
export const ANY_BLOCK_PARAM: BlockIdForms = { hash: true, decimal: false, integer: true };
export const NUMBER_OR_TAG: BlockIdForms = { hash: false, decimal: false, integer: true };

const DECIMAL = /^(?:0|[1-9][0-9]*)$/;

/** The block parameter codec for one set of accepted forms. */
export function blockIdCodec(forms: BlockIdForms): ValueCodec<BlockId> {
  const want = forms.hash ? "a block number, tag or hash" : "a block number or tag";
  const decodeString = (json: string): BlockId => {
    const tag = TAGS_BY_NAME.get(json);
    if (tag !== undefined) return create(BlockIdSchema, { kind: { case: "tag", value: tag } });
    if (json.length === 66 && hasHexPrefix(json)) {
      if (!forms.hash) fail(`want ${want}, got a 32-byte hash`);
      return create(BlockIdSchema, { kind: { case: "hash", value: decodeData(json, { length: 32 }) } });
    }
    if (forms.decimal && DECIMAL.test(json)) return fromDecimal(BigInt(json));
    if (!hasHexPrefix(json)) fail(`want ${want}, got "${json.length > 40 ? `${json.slice(0, 37)}...` : json}"`);
    return create(BlockIdSchema, { kind: { case: "number", value: decodeUint64(json) } });
  };
  const fromDecimal = (n: bigint): BlockId => {
    if (n >= 1n << 64n) fail("block number exceeds 64 bits");
    return create(BlockIdSchema, { kind: { case: "number", value: n } });
  };
  return {
    decode(json) {
      if (typeof json === "string") return decodeString(json);
      if (typeof json === "number" && (forms.decimal || forms.integer === true)) {
        // Past what a double holds, JSON.parse made Infinity of it: not what was sent, so not named.
        if (!Number.isFinite(json)) fail("a JSON number too large to read: send the block number as hex");
        if (!Number.isInteger(json) || json < 0) fail(`want a non-negative integer block number, got ${json}`);
        if (!Number.isSafeInteger(json)) fail(`${UNSAFE_JSON_INTEGER}: send the block number as hex`);
        return fromDecimal(BigInt(json));
      }
      if (typeof json === "object" && json !== null && !Array.isArray(json) && forms.hash) {
        // EIP-1898: {"blockNumber": q} or {"blockHash": h, "requireCanonical": b}
        const o = json as Record<string, unknown>;
        const keys = Object.keys(o);
        if ("blockNumber" in o && keys.length === 1) {
          // EIP-1898 names a quantity there, but geth and Anvil read a tag too (found from outside: {"blockNumber":
          // "latest"} was refused, where the node answers it).
          const tag = typeof o.blockNumber === "string" ? TAGS_BY_NAME.get(o.blockNumber) : undefined;
          if (tag !== undefined) return create(BlockIdSchema, { kind: { case: "tag", value: tag } });
          return create(BlockIdSchema, { kind: { case: "number", value: decodeUint64(o.blockNumber) } });
        }
        if ("blockHash" in o && keys.every((k) => k === "blockHash" || k === "requireCanonical")) {
          if (o.requireCanonical !== undefined && typeof o.requireCanonical !== "boolean") {
            fail("requireCanonical must be a boolean");
          }
          return create(BlockIdSchema, {
            kind: { case: "hash", value: decodeData(o.blockHash, { length: 32 }) },
            requireCanonical: o.requireCanonical === true,
          });
        }
        fail('want {"blockNumber": ...} or {"blockHash": ..., "requireCanonical": ...}');
      }
      return fail(`want ${want}, got ${json === null ? "null" : Array.isArray(json) ? "an array" : typeof json}`);
    },
    encode(value) {
      const kind = value.kind;
      // As the native door reads EIP-1898 (found from outside: the flag was dropped without a word with a number or tag).
      if (value.requireCanonical && kind.case !== "hash") fail("requireCanonical goes only with a block hash");
      switch (kind.case) {
        case "number":
          return `"${encodeQuantity(kind.value)}"`;
        case "tag": {
          const name = TAG_NAMES.get(kind.value);
          if (name === undefined) fail(kind.value === 0 ? "block tag is unspecified" : `unknown block tag value ${kind.value}`);
          return `"${name}"`;
        }
        case "hash":
          if (!forms.hash) fail(`want ${want}, got a hash`);
          if (kind.value.length !== 32) fail(`block hash: ${wrongByteCount("32 bytes", kind.value)}`);
          return value.requireCanonical
            ? `{"blockHash":"${encodeData(kind.value)}","requireCanonical":true}`
            : `"${encodeData(kind.value)}"`;
        default:
          // A proto JSON caller writing "latest" for the tag has it dropped as an unknown enum name, and lands here.
          return fail('block is unset: set number, tag or hash (in JSON, a tag is named in full, as "BLOCK_TAG_LATEST")');
      }
    },
  };
}

function blockTransactionsCodec(registry: CodecRegistry): ValueCodec<BlockTransactions> {
  const transaction = registry.message<Transaction>(TransactionSchema);
  return {
    decode(json) {
      if (!Array.isArray(json)) fail("want an array of transaction hashes or objects");
      const message = create(BlockTransactionsSchema);
      if (json.length === 0) return message;
      let i = 0;
      try {
        if (typeof json[0] === "string") {
          for (; i < json.length; i++) message.hashes.push(decodeData(json[i], { length: 32 }));
        } else {
          for (; i < json.length; i++) message.full.push(transaction.decode(json[i]));
        }
      } catch (err) {
        throw locate(err, `[${i}]`);
      }
      return message;
    },
    encode(value) {
      if (value.hashes.length && value.full.length) fail("set either hashes or full transactions, not both");
      if (value.hashes.length) {
        return `[${value.hashes.map((h, i) => (h.length === 32 ? `"${encodeData(h)}"` : wrongLength(`hashes[${i}]`, h))).join(",")}]`;
      }
      return `[${value.full.map((t) => transaction.encode(t)).join(",")}]`;
    },
  };
}

const topicFilterCodec: ValueCodec<TopicFilter> = {
  decode(json) {
    if (json === null) return create(TopicFilterSchema);
    if (typeof json === "string") return create(TopicFilterSchema, { anyOf: [decodeData(json, { length: 32 })] });
    if (Array.isArray(json)) {
      // A null among the alternatives matches any topic, as geth reads it (the whole position is a wildcard).
      if (json.includes(null)) return create(TopicFilterSchema);
      return create(TopicFilterSchema, {
        anyOf: json.map((t, i) => {
          try {
            return decodeData(t, { length: 32 });
          } catch (err) {
            throw locate(err, `[${i}]`);
          }
        }),
      });
    }
    return fail("want null, a 32-byte topic or an array of topics");
  },
  encode(value) {
    // Named as the other fields are, with the alternative and its length (found from outside: "topic: want 32 bytes").
    const topics = value.anyOf.map((t, i) => (t.length === 32 ? `"${encodeData(t)}"` : wrongLength(`any_of[${i}]`, t)));
    if (topics.length === 0) return "null";
    return topics.length === 1 ? (topics[0] as string) : `[${topics.join(",")}]`;
  },
};

/**
 * eth_feeHistory's blockCount: a hex QUANTITY, or (as geth's HexOrDecimal64
 * and Anvil read it) a JSON integer or a decimal string. Sent on as written
 * on the native door; a typed caller's count goes as hex.
 */
export const blockCountCodec: ValueCodec<bigint> = {
  decode(json) {
    if (typeof json === "number") {
      // Past 2^53 the number read is not the one sent: say so rather than echo a rounded value.
      if (Number.isInteger(json) && json > Number.MAX_SAFE_INTEGER) fail("a JSON number this large cannot be read exactly; send it as a hex string");
      if (!Number.isSafeInteger(json) || json < 0) fail(`want a non-negative integer, got ${json}`);
      return BigInt(json);
    }
    if (typeof json === "string" && /^[0-9]{1,20}$/.test(json)) {
      const n = BigInt(json);
      if (n >= 1n << 64n) fail(`block count ${json} exceeds 64 bits`);
      return n;
    }
    return decodeUint64(json);
  },
  encode: (value) => `"${encodeQuantity(value)}"`,
};

/**
 * The eth_getLogs filter: accepts the seed's "blockhash" spelling and a single
 * address string, and rejects blockHash together with fromBlock/toBlock.
 */
function logFilterCodec(registry: CodecRegistry, schema: DescMessage): ValueCodec<LogFilter> {
  const generic = registry.compileGeneric<LogFilter>(schema);
  return {
    decode(json) {
      if (typeof json !== "object" || json === null || Array.isArray(json)) fail("want a filter object");
      let source = json as Record<string, unknown>;
      if ("blockhash" in source || typeof source.address === "string") {
        source = { ...source };
        if ("blockhash" in source) {
          if ("blockHash" in source) fail("blockhash and blockHash are the same field; send one");
          source.blockHash = source.blockhash;
          delete source.blockhash;
        }
        if (typeof source.address === "string") source.address = [source.address];
      }
      const filter = generic.decode(source);
      if (filter.blockHash !== undefined && (filter.fromBlock !== undefined || filter.toBlock !== undefined)) {
        fail("cannot specify both blockHash and fromBlock/toBlock, choose one or the other");
      }
      for (const [name, id] of [["fromBlock", filter.fromBlock], ["toBlock", filter.toBlock]] as const) {
        if (id?.kind.case === "hash") throw new CodecError(name, "want a block number or tag, got a hash");
      }
      return filter;
    },
    encode(value) {
      if (value.blockHash !== undefined && (value.fromBlock !== undefined || value.toBlock !== undefined)) {
        fail("cannot specify both block_hash and from_block/to_block, choose one or the other");
      }
      // A hash written where a number goes would be read by the node as a (huge) block number.
      for (const [name, id] of [["from_block", value.fromBlock], ["to_block", value.toBlock]] as const) {
        if (id?.kind.case === "hash") throw new CodecError(name, "want a block number or tag, got a hash (use block_hash for one block)");
      }
      return generic.encode(value);
    },
  };
}

const CALL_DATA_CONFLICT = 'both "data" and "input" are set and not equal. Please use "input" to pass transaction call data';

/**
 * The call object of eth_call and eth_estimateGas: "input" and "data" are two
 * names for the call data, and when both are set they must agree (geth refuses
 * the call with this text; Anvil would quietly use "input").
 */
function transactionCallCodec(registry: CodecRegistry, schema: DescMessage): ValueCodec<TransactionCall> {
  const generic = registry.compileGeneric<TransactionCall>(schema);
  const check = (call: TransactionCall): TransactionCall => {
    if (call.input !== undefined && call.data !== undefined && !Buffer.from(call.input).equals(call.data)) fail(CALL_DATA_CONFLICT);
    return call;
  };
  return {
    decode: (json) => check(generic.decode(json)),
    encode: (value) => generic.encode(check(value)),
  };
}

/** Special codecs of the Ethereum package, by message type name. */
export const ethSpecialCodecs: ReadonlyMap<string, SpecialCodecFactory> = new Map<string, SpecialCodecFactory>([
  [Uint256Schema.typeName, () => uint256Codec as ValueCodec<Message>],
  [BlockIdSchema.typeName, () => blockIdCodec(ANY_BLOCK) as ValueCodec<Message>],
  [BlockTransactionsSchema.typeName, (registry) => blockTransactionsCodec(registry) as ValueCodec<Message>],
  [TopicFilterSchema.typeName, () => topicFilterCodec as ValueCodec<Message>],
  [LogFilterSchema.typeName, (registry, schema) => logFilterCodec(registry, schema) as ValueCodec<Message>],
  [TransactionCallSchema.typeName, (registry, schema) => transactionCallCodec(registry, schema) as ValueCodec<Message>],
  [StateOverrideSchema.typeName, (registry) => stateOverrideCodec(registry) as ValueCodec<Message>],
  [StorageOverrideSchema.typeName, () => storageOverrideCodec as ValueCodec<Message>],
]);
