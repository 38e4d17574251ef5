/**
 * State overrides, eth_call's and eth_estimateGas's optional third param (as
 * viem's `stateOverride` sends it), and block overrides, the fourth (viem's
 * `blockOverrides`): the native door takes them and the typed door models
 * them, both answering what Anvil answers for the same override; a malformed
 * override is -32602 naming where, before the node is called.
 */
import { create } from "@bufbuild/protobuf";
import { status as GrpcStatus } from "@grpc/grpc-js";
import { createPublicClient, type Hex, http, type PublicClient } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CallRequestSchema, type CallResponse, EstimateGasRequestSchema, type EstimateGasResponse, EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { decodeData } from "../../src/codec/hex.js";
import { grpcErrorOf, jsonRpcErrorOfGrpc } from "../support/grpc-status.js";
import { type JsonRpcReply, postJson } from "../support/json-rpc.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";
import { grpcJsCaller, type TypedCaller } from "../support/typed-callers.js";

/** Code that returns storage slot 0 as one 32-byte word: PUSH1 0 SLOAD PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN. */
const RETURN_SLOT_0 = "0x60005460005260206000f3" as const;
const TARGET = "0x00000000000000000000000000000000000c0de1";
const EMPTY_ACCOUNT = "0x000000000000000000000000000000000000beef";
const SLOT_0 = `0x${"00".repeat(32)}`;
const WORD_42 = `0x${"00".repeat(31)}2a`;
const overrideJson = { [TARGET]: { code: RETURN_SLOT_0, stateDiff: { [SLOT_0]: WORD_42 } } };

let anvil: AnvilNode;
let upstream: ProgrammableUpstream;
let ng: TestNodegate;
let typed: TypedCaller;

async function direct(method: string, params: unknown[]): Promise<JsonRpcReply> {
  return (await postJson(anvil.url, { jsonrpc: "2.0", id: 1, method, params })).json as JsonRpcReply;
}

async function native(method: string, params: unknown[]): Promise<JsonRpcReply> {
  return (await postJson(ng.rpcUrl, { jsonrpc: "2.0", id: 1, method, params })).json as JsonRpcReply;
}

beforeAll(async () => {
  anvil = await startAnvil();
  upstream = await startProgrammableUpstream(() => ({ forward: anvil.url }));
  ng = await startNodegate({ upstreamUrl: upstream.url });
  typed = grpcJsCaller(ng, EthService, ng.key);
});
afterAll(async () => {
  typed?.close();
  await ng?.close();
  await upstream?.close();
  await anvil?.stop();
});

const typedOverride = () => ({
  accounts: [
    {
      address: decodeData(TARGET),
      override: { code: decodeData(RETURN_SLOT_0), stateDiff: { slots: [{ slot: decodeData(SLOT_0), value: decodeData(WORD_42) }] } },
    },
  ],
});

describe("state overrides reach the node on both doors", () => {
  it("native eth_call: the answer Anvil gives for the same override (code and a storage slot)", async () => {
    const params = [{ to: TARGET }, "latest", overrideJson];
    const expected = await direct("eth_call", params);
    expect(expected.result).toBe(WORD_42);
    expect(await native("eth_call", params)).toEqual(expected);
    // Without the override the account has no code.
    expect((await native("eth_call", [{ to: TARGET }, "latest"])).result).toBe("0x");
  });

  it("viem's call and estimateGas with stateOverride work unchanged through nodegate", async () => {
    const viem = createPublicClient({ transport: http(ng.rpcUrl) }) as PublicClient;
    const { data } = await viem.call({ to: TARGET, stateOverride: [{ address: TARGET, code: RETURN_SLOT_0, stateDiff: [{ slot: SLOT_0 as Hex, value: WORD_42 as Hex }] }] });
    expect(data).toBe(WORD_42);
    // With code at the target, the estimate covers running it (Anvil's own figure for the same override).
    const expected = BigInt((await direct("eth_estimateGas", [{ to: TARGET }, "latest", { [TARGET]: { code: RETURN_SLOT_0 } }])).result as string);
    expect(expected).toBeGreaterThan(21000n);
    expect(await viem.estimateGas({ to: TARGET, stateOverride: [{ address: TARGET, code: RETURN_SLOT_0 }] })).toBe(expected);
    expect(await viem.estimateGas({ to: TARGET })).toBe(21000n);
  });

  it("typed Call and EstimateGas: the override is written as the node's JSON and answered alike", async () => {
    const call = await typed.call<CallResponse>(EthService.method.call, create(CallRequestSchema, { transaction: { to: decodeData(TARGET) }, stateOverride: typedOverride() }));
    expect(`0x${Buffer.from(call.data ?? []).toString("hex")}`).toBe(WORD_42);
    const estimate = await typed.call<EstimateGasResponse>(
      EthService.method.estimateGas,
      create(EstimateGasRequestSchema, {
        transaction: { from: decodeData(EMPTY_ACCOUNT), to: decodeData(TARGET), value: { value: decodeData("0x0de0b6b3a7640000") } },
        stateOverride: { accounts: [{ address: decodeData(EMPTY_ACCOUNT), override: { balance: { value: decodeData("0x1bc16d674ec80000") } } }] },
      }),
    );
    expect(estimate.gas).toBe(21000n);
    const sentCall = upstream.requests.filter((r) => r.method === "eth_call").at(-1);
    expect(sentCall?.params).toEqual([{ to: TARGET }, "latest", overrideJson]);
    const sentEstimate = upstream.requests.filter((r) => r.method === "eth_estimateGas").at(-1);
    expect((sentEstimate?.params as unknown[])[2]).toEqual({ [EMPTY_ACCOUNT]: { balance: "0x1bc16d674ec80000" } });
  });

  it("an override leaves later calls alone", async () => {
    expect((await native("eth_call", [{ to: TARGET }, "latest"])).result).toBe("0x");
  });
});

describe("malformed overrides are -32602 naming where, and never reach the node", () => {
  it.each([
    ["not an object", [], "invalid argument 2 (stateOverride): want an object keyed by account address"],
    ["a key that is not an address", { "0x12": {} }, 'invalid argument 2 (stateOverride["0x12"]): invalid hex data "0x12": want 20 bytes, got 1'],
    ["a bad balance", { [TARGET]: { balance: "0x01" } }, `invalid argument 2 (stateOverride["${TARGET}"].balance): invalid hex quantity`],
    ["a short storage slot", { [TARGET]: { state: { "0x01": WORD_42 } } }, `invalid argument 2 (stateOverride["${TARGET}"].state["0x01"]): invalid hex data "0x01": want 32 bytes, got 1`],
  ])("native: %s", async (_, override, message) => {
    const before = upstream.requests.length;
    const reply = await native("eth_call", [{ to: TARGET }, "latest", override]);
    expect(reply.error?.code).toBe(-32602);
    expect(reply.error?.message.startsWith(message)).toBe(true);
    expect(upstream.requests.length).toBe(before);
  });

  it("typed: the same account twice is INVALID_ARGUMENT", async () => {
    const before = upstream.requests.length;
    const account = typedOverride().accounts[0];
    const err = await grpcErrorOf(typed.call(EthService.method.call, create(CallRequestSchema, { transaction: { to: decodeData(TARGET) }, stateOverride: { accounts: [account, account] } })));
    expect(err.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(jsonRpcErrorOfGrpc(err).message).toContain("stateOverride.accounts[1]");
    expect(upstream.requests.length).toBe(before);
  });
});

/** Code that returns the block number and timestamp: NUMBER PUSH1 0 MSTORE TIMESTAMP PUSH1 32 MSTORE PUSH1 64 PUSH1 0 RETURN. */
const RETURN_NUMBER_AND_TIME = "0x436000524260205260406000f3";
const word = (n: number) => n.toString(16).padStart(64, "0");

describe("block overrides (the fourth param) reach the node on both doors", () => {
  const codeAt = { [TARGET]: { code: RETURN_NUMBER_AND_TIME } };

  it("native eth_call: the answer Anvil gives for the same block overrides, and viem's blockOverrides works", async () => {
    // Found from outside: the fourth param was "too many arguments, want at most 3", so viem's blockOverrides failed.
    const params = [{ to: TARGET }, "latest", codeAt, { number: "0x1234", time: "0x5678" }];
    const expected = await direct("eth_call", params);
    expect(expected.result).toBe(`0x${word(0x1234)}${word(0x5678)}`);
    expect(await native("eth_call", params)).toEqual(expected);
    const viem = createPublicClient({ transport: http(ng.rpcUrl) }) as PublicClient;
    const { data } = await viem.call({ to: TARGET, stateOverride: [{ address: TARGET, code: RETURN_NUMBER_AND_TIME as Hex }], blockOverrides: { number: 0x99n, time: 0x77n } });
    expect(data).toBe(`0x${word(0x99)}${word(0x77)}`);
    expect((await native("eth_estimateGas", params)).result).toBe((await direct("eth_estimateGas", params)).result);
  });

  it("typed Call: block_overrides is written as the node's JSON; with no state override set, {} goes in its place", async () => {
    const call = await typed.call<CallResponse>(
      EthService.method.call,
      create(CallRequestSchema, {
        transaction: { to: decodeData(TARGET) },
        stateOverride: { accounts: [{ address: decodeData(TARGET), override: { code: decodeData(RETURN_NUMBER_AND_TIME) } }] },
        blockOverrides: { number: { value: decodeData("0x1234") }, time: 0x5678n },
      }),
    );
    expect(`0x${Buffer.from(call.data ?? []).toString("hex")}`).toBe(`0x${word(0x1234)}${word(0x5678)}`);
    expect(upstream.requests.filter((r) => r.method === "eth_call").at(-1)?.params).toEqual([{ to: TARGET }, "latest", codeAt, { number: "0x1234", time: "0x5678" }]);
    await typed.call<CallResponse>(EthService.method.call, create(CallRequestSchema, { transaction: { to: decodeData(TARGET) }, blockOverrides: { time: 1n } }));
    expect(upstream.requests.filter((r) => r.method === "eth_call").at(-1)?.params).toEqual([{ to: TARGET }, "latest", {}, { time: "0x1" }]);
  });

  it("a malformed block override is -32602 naming it, before the node is called", async () => {
    const before = upstream.requests.length;
    const reply = await native("eth_call", [{ to: TARGET }, "latest", {}, { feeRecipient: "0x12" }]);
    expect(reply.error?.code).toBe(-32602);
    expect(reply.error?.message).toContain("blockOverrides.feeRecipient");
    expect(upstream.requests.length).toBe(before);
  });
});
