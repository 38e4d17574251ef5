/**
 * eth_estimateGas's block param is the one nodes do not agree on when it is
 * left out: Anvil, Erigon and older geth estimate at "pending", geth now at
 * "latest". viem leaves it out, so a native caller must get the node's own
 * default: nodegate adds the gas bound it derives from the pending block
 * (the seed's rule), but leaves the block param as the caller did. The typed
 * door's unset block is documented as latest and stays so.
 */
import { create } from "@bufbuild/protobuf";
import { createPublicClient, http } from "viem";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EstimateGasRequestSchema, type EstimateGasResponse, EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { decodeData } from "../../src/codec/hex.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type JsonRpcReply, postJson } from "../support/json-rpc.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";
import { grpcJsCaller, type TypedCaller } from "../support/typed-callers.js";

/** Code that writes 1 to storage slot 0: PUSH1 1 PUSH1 0 SSTORE STOP. A first write costs far more than a rewrite. */
const WRITE_SLOT_0 = "0x600160005500";
const TARGET = "0x00000000000000000000000000000000000c0de2";
const SENDER = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const CALL = { from: SENDER, to: TARGET };

let anvil: AnvilNode;
let upstream: ProgrammableUpstream;
let ng: TestNodegate;
let typed: TypedCaller;

async function rpc(url: string, method: string, params: unknown[]): Promise<JsonRpcReply> {
  return (await postJson(url, { jsonrpc: "2.0", id: 1, method, params })).json as JsonRpcReply;
}

beforeAll(async () => {
  anvil = await startAnvil();
  upstream = await startProgrammableUpstream(() => ({ forward: anvil.url }));
  ng = await startNodegate({ upstreamUrl: upstream.url });
  typed = grpcJsCaller(ng, EthService, ng.key);
  // A transaction left pending has written slot 0, so "pending" and "latest" estimate differently.
  await rpc(anvil.url, "anvil_setCode", [TARGET, WRITE_SLOT_0]);
  await rpc(anvil.url, "evm_setAutomine", [false]);
  expect((await rpc(anvil.url, "eth_sendTransaction", [{ ...CALL, gas: "0x186a0" }])).error).toBeUndefined();
});
afterAll(async () => {
  typed?.close();
  await ng?.close();
  await upstream?.close();
  await anvil?.stop();
});

it("native: left out, the block is the node's default, as calling the node directly (viem too)", async () => {
  const atPending = (await rpc(anvil.url, "eth_estimateGas", [CALL, "pending"])).result;
  const atLatest = (await rpc(anvil.url, "eth_estimateGas", [CALL, "latest"])).result;
  expect(atPending).not.toBe(atLatest);

  const direct = await rpc(anvil.url, "eth_estimateGas", [CALL]);
  expect(direct.result).toBe(atPending);
  const sentBefore = upstream.requests.length;
  expect(await rpc(ng.rpcUrl, "eth_estimateGas", [CALL])).toEqual(direct);
  // The gas bound is added, the block param is not.
  const sent = upstream.requests.slice(sentBefore).find((r) => r.method === "eth_estimateGas");
  expect(sent?.params).toHaveLength(1);
  expect((sent?.params as [{ gas?: string }])[0].gas).toMatch(/^0x[0-9a-f]+$/);

  const viaViem = createPublicClient({ chain: foundry, transport: http(ng.rpcUrl) });
  const viemDirect = createPublicClient({ chain: foundry, transport: http(anvil.url) });
  expect(await viaViem.estimateGas({ account: SENDER, to: TARGET })).toBe(await viemDirect.estimateGas({ account: SENDER, to: TARGET }));

  // Left to the node as null in place too, with overrides after it (found from outside: these were sent with "latest").
  for (const params of [[CALL, null], [CALL, null, {}], [CALL, null, null, {}], [CALL, null, {}, {}]]) {
    const viaNode = await rpc(anvil.url, "eth_estimateGas", params);
    expect(viaNode.result).toBe(atPending);
    expect(await rpc(ng.rpcUrl, "eth_estimateGas", params)).toEqual(viaNode);
  }

  // Named explicitly, each block is estimated where the caller said.
  expect((await rpc(ng.rpcUrl, "eth_estimateGas", [CALL, "latest"])).result).toBe(atLatest);
  expect((await rpc(ng.rpcUrl, "eth_estimateGas", [CALL, "pending"])).result).toBe(atPending);
});

it("typed: an unset block is latest, as documented", async () => {
  const atLatest = (await rpc(anvil.url, "eth_estimateGas", [CALL, "latest"])).result as string;
  const request = create(EstimateGasRequestSchema, { transaction: { from: decodeData(SENDER), to: decodeData(TARGET) } });
  const answer = (await typed.call(EthService.method.estimateGas, request)) as EstimateGasResponse;
  expect(answer.gas).toBe(BigInt(atLatest));
});
