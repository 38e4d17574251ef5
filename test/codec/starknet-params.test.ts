/**
 * The params of starknet_getTransactionByBlockIdAndIndex: the BLOCK_ID
 * forms of both spec generations, named and positional params on the native
 * path, and what the typed path sends upstream.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { GetBalanceRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { BlockTag } from "../../gen/nodegate/starknet/v1/primitives_pb.js";
import {
  type GetTransactionByBlockIdAndIndexRequest,
  GetTransactionByBlockIdAndIndexRequestSchema,
  TransactionResponseFlag,
} from "../../gen/nodegate/starknet/v1/starknet_service_pb.js";
import { CodecError } from "../../src/codec/codec-error.js";
import { decodeFelt } from "../../src/codec/hex.js";
import { starknetBlockIdCodec } from "../../src/codec/starknet-types.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import { InvalidParamsError, type ParamsCodec } from "../../src/methods/params-codec.js";

const table = createMethodTable();
const spec = table.byJsonRpc("starknet_getTransactionByBlockIdAndIndex");
if (spec === undefined) throw new Error("starknet_getTransactionByBlockIdAndIndex is not in the method table");
const params = spec.params as ParamsCodec<GetTransactionByBlockIdAndIndexRequest>;

const HASH = "0x3f1c8a6b2e4d7a90c5b1e2f3a4d5c6b7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b";

function invalid(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    if (err instanceof InvalidParamsError || err instanceof CodecError) return err.message;
    throw err;
  }
  throw new Error("expected the params to be rejected");
}

describe("BLOCK_ID", () => {
  it.each([
    ["a block hash", { block_hash: HASH }, { case: "blockHash", value: decodeFelt(HASH) }],
    ["block number 0", { block_number: 0 }, { case: "blockNumber", value: 0n }],
    ["a block number (a JSON integer)", { block_number: 812345 }, { case: "blockNumber", value: 812345n }],
    ["latest", "latest", { case: "tag", value: BlockTag.LATEST }],
    ["pending (before spec 0.9)", "pending", { case: "tag", value: BlockTag.PENDING }],
    ["pre_confirmed (spec 0.9 on)", "pre_confirmed", { case: "tag", value: BlockTag.PRE_CONFIRMED }],
    ["l1_accepted (spec 0.9 on)", "l1_accepted", { case: "tag", value: BlockTag.L1_ACCEPTED }],
  ])("reads and writes %s", (_name, json, kind) => {
    const id = starknetBlockIdCodec.decode(json);
    expect(id.kind).toEqual(kind);
    expect(starknetBlockIdCodec.encode(id)).toBe(JSON.stringify(json));
  });

  it.each([
    ["a hex block number", { block_number: "0x1" }, /block_number: want a JSON integer \(Starknet block numbers are not hex\)/],
    ["a negative block number", { block_number: -1 }, /block_number: want a non-negative JSON integer/],
    ["a fractional block number", { block_number: 1.5 }, /block_number: want a non-negative JSON integer/],
    ["a block number past 2^53 (not quoted back: JSON.parse has rounded it)", { block_number: 2 ** 60 + 1 }, /^[^0-9]*a JSON integer above 9007199254740991 \(2\^53 - 1\) cannot be read exactly$/],
    ["a hash of 65 digits", { block_hash: `0x0${HASH.slice(2).padStart(64, "0")}` }, /block_hash: invalid felt/],
    ["both a hash and a number", { block_hash: HASH, block_number: 1 }, /want \{"block_hash": felt\}, \{"block_number": integer\} or a tag/],
    ["the Ethereum spelling", { blockHash: HASH }, /want \{"block_hash": felt\}/],
    ["an Ethereum-only tag", "earliest", /unknown block tag "earliest"/],
    ["a bare hex number", "0x10", /unknown block tag "0x10"/],
    ["null", null, /got null/],
  ])("rejects %s", (_name, json, message) => {
    expect(() => starknetBlockIdCodec.decode(json)).toThrow(message);
  });
});

describe("native params: named (the provider's example) and positional (the spec's other form)", () => {
  const expected = create(GetTransactionByBlockIdAndIndexRequestSchema, {
    blockId: { kind: { case: "blockNumber", value: 812345n } },
    index: 3n,
  });

  it("reads named params", () => {
    const { request, rewritten } = params.decode({ block_id: { block_number: 812345 }, index: 3 });
    expect(request).toEqual(expected);
    // The caller's text goes upstream as written.
    expect(rewritten).toBeUndefined();
  });

  // Found from outside: explorers show block hashes padded to 64 digits, which Starknet nodes accept; nodegate refused them.
  it("reads a block hash padded with zeros to 64 digits, and sends it as written", () => {
    const padded = `0x${HASH.slice(2).padStart(64, "0")}`;
    const { request, rewritten } = params.decode({ block_id: { block_hash: padded }, index: 3 });
    expect(request.blockId?.kind).toEqual({ case: "blockHash", value: decodeFelt(HASH) });
    expect(rewritten).toBeUndefined();
  });

  it("reads positional params", () => {
    expect(params.decode([{ block_number: 812345 }, 3]).request).toEqual(expected);
  });

  it("reads response_flags in both styles", () => {
    const flags = [TransactionResponseFlag.INCLUDE_PROOF_FACTS];
    expect(params.decode({ block_id: "latest", index: 0, response_flags: ["INCLUDE_PROOF_FACTS"] }).request.responseFlags).toEqual(flags);
    expect(params.decode(["latest", 0, ["INCLUDE_PROOF_FACTS"]]).request.responseFlags).toEqual(flags);
  });

  it.each([
    ["a missing index", { block_id: "latest" }, "missing value for required argument 1 (index)"],
    ["a missing block_id", [], "missing value for required argument 0 (block_id)"],
    ["an Ethereum-style param name", { blockId: "latest", index: 0 }, 'invalid params: unknown param "blockId", want block_id, index, response_flags'],
    ["a hex index", ["latest", "0x1"], "invalid argument 1 (index): want a non-negative JSON integer, got \"0x1\""],
    ["an unknown response flag", ["latest", 0, ["INCLUDE_TRACES"]], "invalid argument 2 (response_flags[0]): want one of INCLUDE_PROOF_FACTS, got \"INCLUDE_TRACES\""],
    ["too many params", ["latest", 0, [], 1], "too many arguments, want at most 3"],
  ])("rejects %s, naming the param", (_name, json, message) => {
    expect(invalid(() => params.decode(json))).toBe(message);
  });
});

describe("typed params: what goes upstream", () => {
  it("sends block_id and index named, leaving out unset response_flags for nodes before spec 0.10.1", () => {
    const request = create(GetTransactionByBlockIdAndIndexRequestSchema, {
      blockId: { kind: { case: "blockHash", value: decodeFelt(HASH) } },
      index: 7n,
    });
    expect(params.encode(request)).toBe(`{"block_id":{"block_hash":"${HASH}"},"index":7}`);
  });

  it("sends response_flags when set", () => {
    const request = create(GetTransactionByBlockIdAndIndexRequestSchema, {
      blockId: { kind: { case: "tag", value: BlockTag.PRE_CONFIRMED } },
      responseFlags: [TransactionResponseFlag.INCLUDE_PROOF_FACTS],
    });
    expect(params.encode(request)).toBe('{"block_id":"pre_confirmed","index":0,"response_flags":["INCLUDE_PROOF_FACTS"]}');
  });

  it("refuses an unset block_id rather than guessing a block", () => {
    expect(invalid(() => params.encode(create(GetTransactionByBlockIdAndIndexRequestSchema, { index: 1n })))).toBe("block_id: required, but unset");
  });

  it("still fills an Ethereum block param a typed caller left unset with latest", () => {
    const ethSpec = table.byJsonRpc("eth_getBalance");
    const request = create(GetBalanceRequestSchema, { address: new Uint8Array(20).fill(0xab) });
    expect(ethSpec?.params.encode(request)).toBe(`["0x${"ab".repeat(20)}","latest"]`);
  });
});
