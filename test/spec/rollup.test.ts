/**
 * The rollup method and its transaction object: the spec's
 * rollup_getTransactionByBlockIdAndIndex is the Starknet network's
 * starknet_getTransactionByBlockIdAndIndex. No Starknet node installs from
 * the registries we reach, so the network is the Starknet fixture upstream
 * (test/support/starknet-fixture-upstream.ts), which answers as pathfinder
 * and juno do; Ethereum is served too, to show the families stay apart.
 */
import { type MessageInitShape } from "@bufbuild/protobuf";
import { afterAll, beforeAll, expect } from "vitest";
import { BlockTag, type BlockIdSchema } from "../../gen/nodegate/starknet/v1/primitives_pb.js";
import { StarknetService } from "../../gen/nodegate/starknet/v1/starknet_service_pb.js";
import type { InvokeTransactionV0, InvokeTransactionV1, TransactionWithHash } from "../../gen/nodegate/starknet/v1/transaction_pb.js";
import { decodeFelt } from "../../src/codec/hex.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import {
  FIXTURE_BLOCK,
  type StarknetBlock,
  type StarknetFixtureUpstream,
  startStarknetFixtureUpstream,
} from "../support/starknet-fixture-upstream.js";
import { STARKNET_FIXTURES, starknetFixture } from "../support/starknet-fixtures.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";
import { Code } from "./harness/doors.js";
import { type NetworkDoors, openSpecGateway, type SpecGateway } from "./harness/gateway.js";
import { specRule } from "./harness/spec-rule.js";

const METHOD = "starknet_getTransactionByBlockIdAndIndex";
const rpc = StarknetService.method.getTransactionByBlockIdAndIndex;
const resultCodec = createMethodTable().byRpc(rpc)?.result;
const HEX = /^0x[0-9a-f]+$/;

/** A block from a node on a newer spec: an INVOKE version nodegate does not model. */
const FUTURE_BLOCK: StarknetBlock = { hash: "0x7e57", number: 7, transactions: [{ ...starknetFixture("invoke-v1").json, version: "0x4" }] };

let starknetNode: StarknetFixtureUpstream;
let ethereumNode: ProgrammableUpstream;
let g: SpecGateway;
let starknet: NetworkDoors;

type BlockIdInit = MessageInitShape<typeof BlockIdSchema>;
const atNumber = (n: number): BlockIdInit => ({ kind: { case: "blockNumber", value: BigInt(n) } });
const indexOf = (name: string): number => STARKNET_FIXTURES.findIndex((f) => f.name === name);

beforeAll(async () => {
  starknetNode = await startStarknetFixtureUpstream({ blocks: [FIXTURE_BLOCK, FUTURE_BLOCK] });
  ethereumNode = await startProgrammableUpstream(() => ({ result: "0x1" }));
  g = await openSpecGateway({
    upstreamUrl: ethereumNode.url,
    networks: [
      { name: "ethereum", family: "eth", upstreams: [{ label: "eth", url: ethereumNode.url }] },
      { name: "starknet", family: "starknet", upstreams: [{ label: "fixtures", url: starknetNode.url }] },
    ],
  });
  starknet = g.on("starknet");
});

afterAll(async () => {
  await g?.close();
  await Promise.all([starknetNode?.close(), ethereumNode?.close()]);
});

/** One transaction through both doors; the typed answer written back is the native answer. */
async function transactionAt(
  blockId: unknown,
  typedBlock: BlockIdInit,
  index: number,
): Promise<{ native: Record<string, unknown>; typed: TransactionWithHash }> {
  const native = await starknet.http.result(METHOD, { block_id: blockId, index });
  const typed = await starknet.starknet.call(rpc, { blockId: typedBlock, index: BigInt(index) });
  expect(JSON.parse(resultCodec?.encode(typed) ?? "null")).toEqual(native);
  return { native, typed: typed.transaction as TransactionWithHash };
}

specRule("rollup.invoke-fields", async () => {
  const v0 = await transactionAt({ block_number: FIXTURE_BLOCK.number }, atNumber(FIXTURE_BLOCK.number), indexOf("invoke-v0"));
  const v1 = await transactionAt({ block_number: FIXTURE_BLOCK.number }, atNumber(FIXTURE_BLOCK.number), indexOf("invoke-v1"));
  expect(v0.native.type).toBe("INVOKE");
  for (const key of ["transaction_hash", "max_fee", "version", "contract_address", "entry_point_selector"]) expect(v0.native[key], key).toMatch(HEX);
  for (const key of ["signature", "calldata"]) {
    expect(Array.isArray(v0.native[key]), key).toBe(true);
    for (const item of v0.native[key] as unknown[]) expect(item, key).toMatch(HEX);
  }
  expect(v1.native.type).toBe("INVOKE");
  expect(v1.native.nonce).toMatch(HEX);

  expect(v0.typed.variant.case).toBe("invokeV0");
  const invoke = v0.typed.variant.value as InvokeTransactionV0;
  expect(invoke.contractAddress).toEqual(decodeFelt(v0.native.contract_address));
  expect(invoke.entryPointSelector).toEqual(decodeFelt(v0.native.entry_point_selector));
  expect(invoke.calldata.length).toBe((v0.native.calldata as unknown[]).length);
  expect(v0.typed.transactionHash).toEqual(decodeFelt(v0.native.transaction_hash));
  expect(v1.typed.variant.case).toBe("invokeV1");
  expect((v1.typed.variant.value as InvokeTransactionV1).nonce).toEqual(decodeFelt(v1.native.nonce));
});

specRule("rollup.other-variants", async () => {
  for (const name of ["l1-handler", "declare-v3", "deploy-account-v3"]) {
    const f = starknetFixture(name);
    const t = await transactionAt({ block_number: FIXTURE_BLOCK.number }, atNumber(FIXTURE_BLOCK.number), indexOf(name));
    expect(t.native).toEqual(f.json);
    expect(t.typed.variant.case, name).toBe(f.variant);
  }
  // A variant nodegate does not model: forwarded untouched natively; typed callers are told it does not fit.
  const future = await starknet.http.result(METHOD, { block_id: { block_number: FUTURE_BLOCK.number }, index: 0 });
  expect(future).toEqual(FUTURE_BLOCK.transactions[0]);
  const typed = await starknet.starknet.fail(rpc, { blockId: atNumber(FUTURE_BLOCK.number), index: 0n });
  expect(typed.code).toBe(Code.Internal);
  expect(typed.error?.code).toBe(-32053);
});

specRule("endpoints.rollup_getTransactionByBlockIdAndIndex", async () => {
  const expected = FIXTURE_BLOCK.transactions[1];
  expect(await starknet.http.result(METHOD, { block_id: { block_number: FIXTURE_BLOCK.number }, index: 1 })).toEqual(expected);
  // Named: their order does not matter.
  expect(await starknet.http.result(METHOD, { index: 1, block_id: { block_number: FIXTURE_BLOCK.number } })).toEqual(expected);
  for (const [params, message] of [
    [{ block_id: { block_number: FIXTURE_BLOCK.number }, index: "0x2" }, 'invalid argument 1 (index): want a non-negative JSON integer, got "0x2"'],
    [{ block_id: { block_number: FIXTURE_BLOCK.number }, index: 2.5 }, "invalid argument 1 (index): want a non-negative JSON integer, got number 2.5"],
    [{ index: 2 }, "missing value for required argument 0 (block_id)"],
    [{ block_id: "latest" }, "missing value for required argument 1 (index)"],
    [{ block_id: "latest", index: 2, position: 1 }, 'invalid params: unknown param "position", want block_id, index, response_flags'],
  ] as const) {
    expect((await starknet.http.call(METHOD, params)).error, JSON.stringify(params)).toEqual({ code: -32602, message });
  }
  const typed = await starknet.starknet.call(rpc, { blockId: atNumber(FIXTURE_BLOCK.number), index: 1n });
  expect(JSON.parse(resultCodec?.encode(typed) ?? "null")).toEqual(expected);
  const unset = await starknet.starknet.fail(rpc, { index: 2n });
  expect(unset.code).toBe(Code.InvalidArgument);
  expect(unset.error?.message).toMatch(/block_id/);
});

specRule("endpoints.rollup-method-name", async () => {
  expect((await starknet.http.call("rollup_getTransactionByBlockIdAndIndex", { block_id: "latest", index: 0 })).error).toEqual({
    code: -32601,
    message: "the method rollup_getTransactionByBlockIdAndIndex does not exist/is not available",
  });
  expect(await starknet.http.result(METHOD, { block_id: "latest", index: 0 })).toEqual(FIXTURE_BLOCK.transactions[0]);
  // On the Ethereum network the Starknet method is not served, and the error says where it is.
  const onEthereum = await g.http.call(METHOD, { block_id: "latest", index: 0 });
  expect(onEthereum.error?.code).toBe(-32601);
  expect(onEthereum.error?.message).toContain(`send it to /starknet/v3/<KEY>`);
  const typedOnEthereum = await g.starknet.fail(rpc, { blockId: { kind: { case: "tag", value: BlockTag.LATEST } }, index: 0n });
  expect(typedOnEthereum.code).toBe(Code.InvalidArgument);
  expect(typedOnEthereum.error?.message).toContain('set the x-nodegate-network header to "starknet"');
});

specRule("endpoints.block_id", async () => {
  const index = indexOf("l1-handler");
  const expected = FIXTURE_BLOCK.transactions[index];
  const forms: [unknown, BlockIdInit][] = [
    [{ block_hash: FIXTURE_BLOCK.hash }, { kind: { case: "blockHash", value: decodeFelt(FIXTURE_BLOCK.hash) } }],
    [{ block_number: FIXTURE_BLOCK.number }, atNumber(FIXTURE_BLOCK.number)],
  ];
  for (const [blockId, typedBlock] of forms) {
    const t = await transactionAt(blockId, typedBlock, index);
    expect(t.native, JSON.stringify(blockId)).toEqual(expected);
  }
  // latest and pending name the fixture node's highest block.
  for (const [tag, typedTag] of [
    ["latest", BlockTag.LATEST],
    ["pending", BlockTag.PENDING],
  ] as const) {
    const t = await transactionAt(tag, { kind: { case: "tag", value: typedTag } }, 0);
    expect(t.native, tag).toEqual(FIXTURE_BLOCK.transactions[0]);
  }
  for (const [blockId, message] of [
    [{ block_hash: FIXTURE_BLOCK.hash, block_number: FIXTURE_BLOCK.number }, "invalid argument 0 (block_id): want {\"block_hash\": felt}, {\"block_number\": integer} or a tag"],
    [{ block_number: "0x1" }, 'invalid argument 0 (block_id.block_number): want a JSON integer (Starknet block numbers are not hex), got "0x1"'],
    ["earliest", 'invalid argument 0 (block_id): unknown block tag "earliest"'],
  ] as const) {
    const reply = await starknet.http.call(METHOD, { block_id: blockId, index: 0 });
    expect(reply.error?.code, JSON.stringify(blockId)).toBe(-32602);
    expect(reply.error?.message, JSON.stringify(blockId)).toContain(message);
  }
});
