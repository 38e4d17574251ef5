/**
 * A transaction's v is uint64 on the typed door, which holds an EIP-155 v for every chain id up to EIP-2294's bound.
 * Anvil runs on any chain id up to 2^64 - 1: past the bound, a legacy transaction's v does not fit, and the typed door
 * says so (-32053) rather than cutting the number, while the native door passes the node's answer. Found from outside
 * (h98); the README says it where it lists the typed door's number types.
 */
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService, GetTransactionByHashRequestSchema, type GetTransactionByHashResponse } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { connectClient } from "../support/grpc-clients.js";
import { connectErrorOf, jsonRpcErrorOfConnect } from "../support/grpc-status.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";

const SENDER = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const RECIPIENT = "0x70997970c51812dc3a010c7d01b54e8b0e1d79c8";
const bytes = (hex: string) => Buffer.from(hex.slice(2), "hex");

let anvilBound: AnvilNode;
let anvilPast: AnvilNode;
let nodegateBound: TestNodegate;
let nodegatePast: TestNodegate;

beforeAll(async () => {
  [anvilBound, anvilPast] = await Promise.all([
    startAnvil({ args: ["--chain-id", String(2n ** 63n - 37n)] }),
    startAnvil({ args: ["--chain-id", String(2n ** 64n - 1n)] }),
  ]);
  [nodegateBound, nodegatePast] = await Promise.all([startNodegate({ upstreamUrl: anvilBound.url }), startNodegate({ upstreamUrl: anvilPast.url })]);
}, 60_000);
afterAll(async () => {
  await Promise.all([nodegateBound?.close(), nodegatePast?.close()]);
  await Promise.all([anvilBound?.stop(), anvilPast?.stop()]);
});

async function sendLegacy(anvilUrl: string): Promise<{ hash: string; direct: Record<string, string> }> {
  const sent = await post(anvilUrl, rpc("eth_sendTransaction", [{ from: SENDER, to: RECIPIENT, value: "0x1", type: "0x0", gasPrice: "0x77359400" }]));
  const hash = sent.json.result as string;
  // Read once mined: Anvil's automine can answer the hash as pending first (blockHash null), and the native door's later
  // read then saw it mined (found in CI: the two answers differed by the block fields alone).
  for (let i = 0; i < 100 && (await post(anvilUrl, rpc("eth_getTransactionReceipt", [hash]))).json.result == null; i++) await new Promise((r) => setTimeout(r, 20));
  const direct = (await post(anvilUrl, rpc("eth_getTransactionByHash", [hash]))).json.result as Record<string, string>;
  return { hash, direct };
}

it("at EIP-2294's bound on chain ids, a legacy transaction's v comes back whole on the typed door", async () => {
  const { hash, direct } = await sendLegacy(anvilBound.url);
  // EIP-155: chain id * 2 + 35 + the recovery bit; here just under 2^64.
  expect([0n, 1n]).toContain(BigInt(direct.v as string) - ((2n ** 63n - 37n) * 2n + 35n));
  const client = connectClient(nodegateBound.url, EthService, nodegateBound.key, "grpc");
  const typed = (await client.getTransactionByHash(create(GetTransactionByHashRequestSchema, { transactionHash: bytes(hash) }))) as GetTransactionByHashResponse;
  expect(typed.transaction?.v).toBe(BigInt(direct.v as string));
  expect(typed.transaction?.chainId).toBe(2n ** 63n - 37n);
});

it("past it, the typed door refuses the transaction with -32053 naming v, and the native door passes the node's answer", async () => {
  const { hash, direct } = await sendLegacy(anvilPast.url);
  expect(BigInt(direct.v as string)).toBeGreaterThan(2n ** 64n);
  const client = connectClient(nodegatePast.url, EthService, nodegatePast.key, "grpc");
  const err = await connectErrorOf(client.getTransactionByHash(create(GetTransactionByHashRequestSchema, { transactionHash: bytes(hash) })));
  expect(err.code).toBe(Code.Internal);
  const detail = jsonRpcErrorOfConnect(err);
  expect(detail.code).toBe(-32053n);
  expect(detail.message).toContain(`result.v: hex quantity "${direct.v}" exceeds 64 bits`);
  const native = await post(nodegatePast.rpcUrl, rpc("eth_getTransactionByHash", [hash]));
  expect(native.json.result).toEqual(direct);
});
