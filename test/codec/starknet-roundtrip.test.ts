/**
 * Every Starknet fixture goes JSON -> proto -> JSON exactly (minimal-hex
 * felts, u64/u128 hex, the NUM_AS_HEX nonce as sent), through the same
 * result codec the typed path uses; plus the edges the fixtures do not show.
 */
import { create, equals, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { type GetTransactionByBlockIdAndIndexResponse, GetTransactionByBlockIdAndIndexResponseSchema } from "../../gen/nodegate/starknet/v1/starknet_service_pb.js";
import {
  InvokeTransactionV1Schema,
  type InvokeTransactionV3,
  type L1HandlerTransaction,
  TransactionWithHashSchema,
} from "../../gen/nodegate/starknet/v1/transaction_pb.js";
import { CodecError } from "../../src/codec/codec-error.js";
import { bigintToBytes, decodeFelt } from "../../src/codec/hex.js";
import { uint128 } from "../../src/codec/starknet-types.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import { STARKNET_FIXTURES, starknetFixture } from "../support/starknet-fixtures.js";

const spec = createMethodTable().byJsonRpc("starknet_getTransactionByBlockIdAndIndex");
if (spec === undefined) throw new Error("starknet_getTransactionByBlockIdAndIndex is not in the method table");
const result = spec.result;

function decode(json: unknown): GetTransactionByBlockIdAndIndexResponse {
  return result.decode(json) as GetTransactionByBlockIdAndIndexResponse;
}

function roundTrip(json: unknown): string {
  return result.encode(decode(json));
}

function codecError(run: () => unknown): CodecError {
  try {
    run();
  } catch (err) {
    if (err instanceof CodecError) return err;
    throw err;
  }
  throw new Error("expected a CodecError");
}

const QUERY_BIT = 1n << 128n;

describe("every Starknet TXN variant round-trips exactly", () => {
  for (const f of STARKNET_FIXTURES) {
    it(`${f.name} -> ${f.variant} -> the same JSON text`, () => {
      const message = decode(f.json);
      expect(message.transaction?.variant.case).toBe(f.variant);
      const text = result.encode(message);
      expect(JSON.parse(text)).toStrictEqual(f.json);
      // Field order follows the spec's key order, so even the text is the node's.
      expect(text).toBe(JSON.stringify(f.json));
    });

    it(`${f.name} survives the protobuf wire format`, () => {
      const message = decode(f.json);
      const copy = fromBinary(GetTransactionByBlockIdAndIndexResponseSchema, toBinary(GetTransactionByBlockIdAndIndexResponseSchema, message));
      expect(equals(GetTransactionByBlockIdAndIndexResponseSchema, copy, message)).toBe(true);
      expect(result.encode(copy)).toBe(JSON.stringify(f.json));
    });

    it(`${f.name} models every key (nothing lands in json_extras)`, () => {
      const value = decode(f.json).transaction?.variant.value;
      expect(value?.jsonExtras).toBeUndefined();
    });

    if (f.variant !== "deploy") {
      it(`${f.name} with the query version 2^128 + N decodes to the same variant and keeps the version`, () => {
        const version = `0x${(QUERY_BIT + BigInt(f.version)).toString(16)}`;
        const query = { ...f.json, version };
        expect(decode(query).transaction?.variant.case).toBe(f.variant);
        expect(JSON.parse(roundTrip(query))).toStrictEqual(query);
      });
    }
  }
});

describe("typed values of the round trip", () => {
  it("reads felts, u64 and u128 as numbers, and DA modes as enums", () => {
    const message = decode(starknetFixture("declare-v3").json).transaction;
    if (message?.variant.case !== "declareV3") throw new Error("want declareV3");
    const txn = message.variant.value;
    expect(txn.tip).toBe(0n);
    expect(txn.resourceBounds?.l2Gas?.maxPricePerUnit).toEqual(uint128((1n << 128n) - 1n));
    expect(txn.resourceBounds?.l1Gas?.maxAmount).toBe(0x1en);
    expect(txn.nonce).toEqual(bigintToBytes(0x12n));
    expect(txn.nonceDataAvailabilityMode).toBe(2);
    expect(txn.feeDataAvailabilityMode).toBe(1);
  });

  it("keeps the L1 handler nonce's leading zeros (NUM_AS_HEX)", () => {
    const txn = decode(starknetFixture("l1-handler").json).transaction?.variant.value as L1HandlerTransaction;
    expect(txn.nonce).toBe("0x000000000000000000000000000000000000000000000000000000000019ac1f");
    expect(BigInt(txn.nonce as string)).toBe(0x19ac1fn);
  });

  it("keeps a NUM_AS_HEX nonce's case too, and rejects text that is not NUM_AS_HEX", () => {
    const mixed = { ...starknetFixture("l1-handler").json, nonce: "0x00Ab" };
    expect(JSON.parse(roundTrip(mixed))).toStrictEqual(mixed);
    const bad = codecError(() => decode({ ...mixed, nonce: "171" }));
    expect(bad.path).toBe("result.nonce");
    expect(bad.reason).toMatch(/NUM_AS_HEX/);
  });

  it("decodes a null result as an unset transaction and writes null back", () => {
    const message = decode(null);
    expect(message.transaction).toBeUndefined();
    expect(result.encode(message)).toBe("null");
  });
});

describe("shapes the fixtures do not show", () => {
  const invokeV3 = starknetFixture("invoke-v3").json;

  it("leaves proof_facts out when the node did (no INCLUDE_PROOF_FACTS) and keeps [] when it sent []", () => {
    const { proof_facts: _omitted, ...without } = invokeV3;
    expect(roundTrip(without)).toBe(JSON.stringify(without));
    const empty = { ...invokeV3, proof_facts: [] };
    expect(roundTrip(empty)).toBe(JSON.stringify(empty));
    expect((decode(empty).transaction?.variant.value as InvokeTransactionV3).proofFacts).toEqual([]);
  });

  it("round-trips spec 0.7 resource bounds, which have no l1_data_gas", () => {
    const { l1_data_gas: _none, ...bounds } = invokeV3.resource_bounds as Record<string, unknown>;
    const old = { ...invokeV3, resource_bounds: bounds };
    expect(JSON.parse(roundTrip(old))).toStrictEqual(old);
  });

  it("carries a key a newer spec adds (json_extras) and writes it back", () => {
    const newer = { ...invokeV3, future_field: { a: [1, "0x2"] } };
    const value = decode(newer).transaction?.variant.value;
    expect(value?.jsonExtras?.unknownFields.future_field).toBe('{"a":[1,"0x2"]}');
    expect(JSON.parse(roundTrip(newer))).toStrictEqual(newer);
  });

  it("a \"__proto__\" key is a key like any other: kept whole in json_extras, nothing else appears", () => {
    // Found from outside: it was lost, and the keys of its value turned up as unknown fields of their own.
    const text = JSON.stringify(invokeV3).replace(/^\{/, '{"__proto__":{"polluted":true},');
    const value = decode(JSON.parse(text)).transaction?.variant.value;
    expect(Object.entries(value?.jsonExtras?.unknownFields ?? {})).toEqual([["__proto__", '{"polluted":true}']]);
    const copy = fromBinary(GetTransactionByBlockIdAndIndexResponseSchema, toBinary(GetTransactionByBlockIdAndIndexResponseSchema, decode(JSON.parse(text))));
    expect(JSON.parse(result.encode(copy))).toStrictEqual(JSON.parse(text));
  });

  it("reads upper-case hex and leading zeros and writes the value as the spec spells it (what is not kept)", () => {
    const upper = { ...starknetFixture("invoke-v1").json, nonce: "0x2F" };
    expect(JSON.parse(roundTrip(upper)).nonce).toBe("0x2f");
    const padded = { ...starknetFixture("invoke-v1").json, nonce: `0x${"2f".padStart(64, "0")}` };
    expect(JSON.parse(roundTrip(padded)).nonce).toBe("0x2f");
  });
});

// Found from outside: the spec's example of this method's INVOKE result (spec 0.2-0.4 nodes) has a nonce, which the
// typed result carried only as unmodelled text in json_extras.
describe("the spec's INVOKE example (version 0 with a nonce, as spec 0.2-0.4 nodes write it)", () => {
  const example = {
    type: "INVOKE",
    transaction_hash: starknetFixture("invoke-v0").json.transaction_hash,
    max_fee: "0x0",
    version: "0x0",
    signature: starknetFixture("invoke-v0").json.signature,
    nonce: "0x1f",
    contract_address: starknetFixture("invoke-v0").json.contract_address,
    entry_point_selector: starknetFixture("invoke-v0").json.entry_point_selector,
    calldata: starknetFixture("invoke-v0").json.calldata,
  };

  it("types the nonce and gives the node's text back", () => {
    const message = decode(example);
    const variant = message.transaction?.variant;
    expect(variant?.case).toBe("invokeV0");
    if (variant?.case !== "invokeV0") return;
    expect(variant.value.nonce).toEqual(decodeFelt("0x1f"));
    expect(variant.value.jsonExtras?.unknownFields ?? {}).toEqual({});
    expect(JSON.parse(roundTrip(example))).toStrictEqual(example);
  });

  it("a version 0 without a nonce (later nodes) leaves it unset and writes none", () => {
    const message = decode(starknetFixture("invoke-v0").json);
    const variant = message.transaction?.variant;
    expect(variant?.case === "invokeV0" && variant.value.nonce).toBeUndefined();
  });
});

describe("answers the typed path cannot represent are CodecErrors naming the key", () => {
  const invokeV1 = starknetFixture("invoke-v1").json;

  it.each([
    ["an unknown type", { ...invokeV1, type: "INVOKE_FUNCTION" }, "result.type", /unknown transaction type "INVOKE_FUNCTION"/],
    ["a missing type", { ...invokeV1, type: undefined }, "result.type", /unknown transaction type/],
    ["an unknown version of a known type", { ...invokeV1, version: "0x2" }, "result.version", /no INVOKE transaction has version 0x2 \(known: 0x0, 0x1, 0x3\)/],
    ["an L1 handler of version 1", { ...starknetFixture("l1-handler").json, version: "0x1" }, "result.version", /no L1_HANDLER transaction has version 0x1/],
    ["a query bit on top of another high bit", { ...invokeV1, version: `0x${((1n << 129n) + QUERY_BIT + 1n).toString(16)}` }, "result.version", /no INVOKE/],
    ["a felt of 65 digits, however many are leading zeros", { ...invokeV1, nonce: `0x${"2f".padStart(65, "0")}` }, "result.nonce", /invalid felt/],
    ["a felt of 64 digits", { ...invokeV1, sender_address: `0x${"f".repeat(64)}` }, "result.sender_address", /invalid felt/],
    ["a missing transaction_hash", { ...invokeV1, transaction_hash: undefined }, "result.transaction_hash", /felt/],
    // Found from outside: this read "want a felt hex string, got undefined".
    ["a missing version", { ...invokeV1, version: undefined }, "result.version", /^want a felt hex string, got nothing \(the key is missing\)$/],
    ["a u64 tip above 64 bits", { ...invokeV3Fixture(), tip: "0x10000000000000000" }, "result.tip", /64 bits/],
    [
      "a u128 price above 128 bits",
      { ...invokeV3Fixture(), resource_bounds: { ...bounds(), l1_gas: { max_amount: "0x0", max_price_per_unit: `0x1${"0".repeat(32)}` } } },
      "result.resource_bounds.l1_gas.max_price_per_unit",
      /128 bits/,
    ],
    ["an unknown DA mode", { ...invokeV3Fixture(), fee_data_availability_mode: "L3" }, "result.fee_data_availability_mode", /want one of L1, L2/],
    ["a signature that is not a list", { ...invokeV1, signature: "0x1" }, "result.signature", /want an array/],
  ])("%s", (_name, json, path, reason) => {
    const err = codecError(() => decode(JSON.parse(JSON.stringify(json))));
    expect(err.path).toBe(path);
    expect(err.reason).toMatch(reason);
  });

  function invokeV3Fixture(): Record<string, unknown> {
    return { ...starknetFixture("invoke-v3").json };
  }
  function bounds(): Record<string, unknown> {
    return { ...(starknetFixture("invoke-v3").json.resource_bounds as Record<string, unknown>) };
  }
});

describe("encoding a typed transaction refuses what no node would send", () => {
  const hash = decodeFelt("0x1234");

  it("needs a variant", () => {
    const message = create(GetTransactionByBlockIdAndIndexResponseSchema, { transaction: { transactionHash: hash } });
    expect(() => result.encode(message)).toThrow(/variant is unset/);
  });

  it("needs the variant's own version (or its query form)", () => {
    const invoke = create(InvokeTransactionV1Schema, { version: bigintToBytes(3n) });
    const message = create(GetTransactionByBlockIdAndIndexResponseSchema, {
      transaction: create(TransactionWithHashSchema, { transactionHash: hash, variant: { case: "invokeV1", value: invoke } }),
    });
    expect(() => result.encode(message)).toThrow(/INVOKE invokeV1 transaction has version 0x1 or its query form, got 0x3/);
  });

  it("refuses a felt at or above 2^252 and a u128 above 16 bytes", () => {
    const tooBig = new Uint8Array(32).fill(0xff);
    const message = create(GetTransactionByBlockIdAndIndexResponseSchema, {
      transaction: { transactionHash: tooBig, variant: { case: "invokeV1", value: { version: bigintToBytes(1n) } } },
    });
    expect(() => result.encode(message)).toThrow(/at most 63 hex digits/);
    const decoded = decode(starknetFixture("invoke-v3").json);
    const txn = decoded.transaction?.variant.value as InvokeTransactionV3;
    const l1Gas = txn.resourceBounds?.l1Gas;
    if (l1Gas?.maxPricePerUnit === undefined) throw new Error("fixture has l1_gas.max_price_per_unit");
    l1Gas.maxPricePerUnit.value = new Uint8Array(17).fill(1);
    expect(() => result.encode(decoded)).toThrow(/u128 has at most 16 significant bytes/);
  });
});
