/**
 * The state overrides of eth_call and eth_estimateGas: JSON objects keyed by
 * account address (and, inside an account, by storage slot), held in protobuf
 * as repeated entries in the order the caller wrote them.
 */
import { create } from "@bufbuild/protobuf";
import {
  type AccountOverride,
  AccountOverrideSchema,
  AccountStateOverrideSchema,
  type StateOverride,
  StateOverrideSchema,
  type StorageOverride,
  StorageOverrideSchema,
  StorageSlotValueSchema,
} from "../../gen/nodegate/eth/v1/transaction_pb.js";
import { wrongByteCount } from "./byte-count.js";
import { CodecError, locate } from "./codec-error.js";
import { decodeData, encodeData } from "./hex.js";
import type { CodecRegistry, ValueCodec } from "./message-codec.js";

const ADDRESS = { length: 20 };
const WORD = { length: 32 };

function entriesOf(json: unknown, keyedBy: string): [string, unknown][] {
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw new CodecError("", `want an object keyed by ${keyedBy}`);
  return Object.entries(json);
}

/** Runs `body` for the member `key`, so that an error names it: ["0xab…"].balance. */
function member<T>(key: string, body: () => T): T {
  try {
    return body();
  } catch (err) {
    throw locate(err, `[${JSON.stringify(key)}]`);
  }
}

/** Each entry's key text, refusing two entries that name the same key. */
function uniqueKeys<E>(entries: readonly E[], field: string, keyOf: (entry: E) => Uint8Array, length: number): string[] {
  const seen = new Set<string>();
  return entries.map((entry, i) => {
    const bytes = keyOf(entry);
    if (bytes.length !== length) throw new CodecError(`${field}[${i}]`, wrongByteCount(`${length} bytes`, bytes));
    const key = encodeData(bytes);
    if (seen.has(key)) throw new CodecError(`${field}[${i}]`, `${key} is set twice`);
    seen.add(key);
    return key;
  });
}

export function stateOverrideCodec(registry: CodecRegistry): ValueCodec<StateOverride> {
  const account = registry.message<AccountOverride>(AccountOverrideSchema);
  return {
    decode(json) {
      const accounts = entriesOf(json, "account address").map(([key, value]) =>
        member(key, () => create(AccountStateOverrideSchema, { address: decodeData(key, ADDRESS), override: account.decode(value) })),
      );
      return create(StateOverrideSchema, { accounts });
    },
    encode(value) {
      const keys = uniqueKeys(value.accounts, "accounts", (a) => a.address, ADDRESS.length);
      const members = value.accounts.map((a, i) => {
        try {
          return `"${keys[i]}":${a.override === undefined ? "{}" : account.encode(a.override)}`;
        } catch (err) {
          throw locate(err, `accounts[${i}].override`);
        }
      });
      return `{${members.join(",")}}`;
    },
  };
}

export const storageOverrideCodec: ValueCodec<StorageOverride> = {
  decode(json) {
    const slots = entriesOf(json, "storage slot").map(([key, value]) =>
      member(key, () => create(StorageSlotValueSchema, { slot: decodeData(key, WORD), value: decodeData(value, WORD) })),
    );
    return create(StorageOverrideSchema, { slots });
  },
  encode(value) {
    const keys = uniqueKeys(value.slots, "slots", (s) => s.slot, WORD.length);
    const members = value.slots.map((s, i) => {
      if (s.value.length !== WORD.length) throw new CodecError(`slots[${i}].value`, wrongByteCount(`${WORD.length} bytes`, s.value));
      return `"${keys[i]}":"${encodeData(s.value)}"`;
    });
    return `{${members.join(",")}}`;
  },
};
