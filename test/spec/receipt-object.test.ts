/**
 * The transaction receipt object, row by row, on all three doors
 * (eth_getTransactionReceipt is marked WS): receipts of a real Anvil, and a
 * pre-Byzantium receipt with root as geth answers it (execution-apis).
 */
import { encodeFunctionData, type Hex, hexToBytes, toEventSelector, toHex } from "viem";
import { afterAll, beforeAll, expect } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type TransactionReceipt, TransactionReceiptSchema } from "../../gen/nodegate/eth/v1/receipt_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type FixtureUpstream, startFixtureUpstream } from "../support/fixture-upstream.js";
import { deployProbeScenario, type ProbeScenario } from "../support/probe-scenario.js";
import { conformanceRecordings, type NetworkDoors, openLiveAndRecordedGateway, type SpecGateway } from "./harness/gateway.js";
import { expectData, expectQuantity, expectTypedCarries } from "./harness/json-forms.js";
import { nodeRpc } from "./harness/node-rpc.js";
import { specRule } from "./harness/spec-rule.js";
import { hex, u256 } from "./harness/typed-values.js";

const m = EthService.method;
/** A pre-Byzantium value transfer on the execution-apis test chain (geth's answer has root, not status). */
const PRE_BYZANTIUM_TX: Hex = "0x3fbac8b19b59077cd29bbacc3815d73577b45a4d976cae80b04c98c793684c07";

let anvil: AnvilNode;
let fixtures: FixtureUpstream;
let s: ProbeScenario;
let g: SpecGateway;
let recorded: NetworkDoors;
/** The two transactions of one block: a transfer (index 0) and a store (index 1). */
let pair: [Hex, Hex];
let failed: Hex;


const anvilRpc = (method: string, params: unknown[]): Promise<unknown> => nodeRpc(anvil.url, method, params);

beforeAll(async () => {
  anvil = await startAnvil();
  s = await deployProbeScenario(anvil.url);
  const [, payer, payee] = (await anvilRpc("eth_accounts", [])) as Hex[];
  await anvilRpc("evm_setAutomine", [false]);
  const transfer = (await anvilRpc("eth_sendTransaction", [{ from: payer, to: payee, value: "0x1" }])) as Hex;
  const storeData = encodeFunctionData({ abi: s.probe.abi, functionName: "store", args: [7n, "0x01"] });
  const store = (await anvilRpc("eth_sendTransaction", [{ from: payer, to: s.address, data: storeData }])) as Hex;
  await anvilRpc("evm_mine", []);
  await anvilRpc("evm_setAutomine", [true]);
  pair = [transfer, store];
  // A call that reverts, given enough gas to be mined anyway.
  const failData = encodeFunctionData({ abi: s.probe.abi, functionName: "fail", args: ["no"] });
  failed = (await anvilRpc("eth_sendTransaction", [{ from: payer, to: s.address, gas: "0x30000", data: failData }])) as Hex;

  fixtures = await startFixtureUpstream(conformanceRecordings(["tests/eth_getTransactionReceipt/get-legacy-receipt.io"]));
  g = await openLiveAndRecordedGateway(anvil.url, fixtures.url);
  recorded = g.on("recorded");
});

afterAll(async () => {
  await g?.close();
  await fixtures?.close();
  await anvil?.stop();
});

interface BothReceipts {
  native: Record<string, unknown>;
  typed: TransactionReceipt;
}

/** A receipt through HTTP, WebSocket (which must answer the same) and the typed door. */
async function receiptOf(hash: Hex, doors: NetworkDoors = g): Promise<BothReceipts> {
  const native = await doors.http.result("eth_getTransactionReceipt", [hash]);
  expect(await doors.ws.result("eth_getTransactionReceipt", [hash])).toEqual(native);
  const typed = await doors.eth.call(m.getTransactionReceipt, { transactionHash: hexToBytes(hash) });
  expect(native).not.toBeNull();
  return { native, typed: typed.receipt as TransactionReceipt };
}

function carried(key: string, ...receipts: BothReceipts[]): void {
  for (const r of receipts) expectTypedCarries(TransactionReceiptSchema, r.typed, key, r.native);
}

specRule("receipt.blockHash", async () => {
  const r = await receiptOf(s.firstStore.hash);
  carried("blockHash", r);
  expect(expectData(r.native.blockHash, "blockHash", 32)).toBe(s.firstStore.blockHash);
  expect(hex(r.typed.blockHash)).toBe(s.firstStore.blockHash);
});

specRule("receipt.blockNumber", async () => {
  const r = await receiptOf(s.firstStore.hash);
  carried("blockNumber", r);
  expect(expectQuantity(r.native.blockNumber, "blockNumber")).toBe(s.firstStore.blockNumber);
  expect(r.typed.blockNumber).toBe(s.firstStore.blockNumber);
});

specRule("receipt.contractAddress", async () => {
  const creation = await receiptOf(s.deploy.hash);
  const call = await receiptOf(s.firstStore.hash);
  carried("contractAddress", creation, call);
  expect(expectData(creation.native.contractAddress, "contractAddress", 20)).toBe(s.address);
  expect(hex(creation.typed.contractAddress)).toBe(s.address);
  expect(call.native.contractAddress).toBeNull();
  expect(call.typed.contractAddress).toBeUndefined();
});

specRule("receipt.cumulativeGasUsed", async () => {
  const [first, second] = [await receiptOf(pair[0]), await receiptOf(pair[1])];
  carried("cumulativeGasUsed", first, second);
  expect(expectQuantity(first.native.cumulativeGasUsed, "cumulativeGasUsed")).toBe(first.typed.gasUsed);
  expect(expectQuantity(second.native.cumulativeGasUsed, "cumulativeGasUsed")).toBe((first.typed.gasUsed ?? 0n) + (second.typed.gasUsed ?? 0n));
  expect(second.typed.cumulativeGasUsed).toBe(BigInt(second.native.cumulativeGasUsed as string));
});

specRule("receipt.effectiveGasPrice", async () => {
  const legacy = await receiptOf(s.firstStore.hash);
  const eip1559 = await receiptOf(s.secondStore.hash);
  carried("effectiveGasPrice", legacy, eip1559);
  const legacyTx = await g.http.result("eth_getTransactionByHash", [s.firstStore.hash]);
  expect(expectQuantity(legacy.native.effectiveGasPrice, "effectiveGasPrice")).toBe(BigInt(legacyTx.gasPrice));
  expect(u256(legacy.typed.effectiveGasPrice)).toBe(BigInt(legacyTx.gasPrice));
  // EIP-1559: the base fee plus the tip the fee cap leaves room for.
  const tx = await g.http.result("eth_getTransactionByHash", [s.secondStore.hash]);
  const block = await g.http.result("eth_getBlockByNumber", [toHex(s.secondStore.blockNumber), false]);
  const baseFee = BigInt(block.baseFeePerGas);
  const [priority, room] = [BigInt(tx.maxPriorityFeePerGas), BigInt(tx.maxFeePerGas) - baseFee];
  const tip = priority < room ? priority : room;
  expect(u256(eip1559.typed.effectiveGasPrice)).toBe(baseFee + tip);
  expect(expectQuantity(eip1559.native.effectiveGasPrice, "effectiveGasPrice")).toBe(baseFee + tip);
});

specRule("receipt.from", async () => {
  const r = await receiptOf(s.firstStore.hash);
  carried("from", r);
  expect(expectData(r.native.from, "from", 20)).toBe(s.sender.toLowerCase());
});

specRule("receipt.gasUsed", async () => {
  const transfer = await receiptOf(pair[0]);
  const store = await receiptOf(pair[1]);
  carried("gasUsed", transfer, store);
  expect(expectQuantity(transfer.native.gasUsed, "gasUsed")).toBe(21_000n);
  expect(transfer.typed.gasUsed).toBe(21_000n);
  expect(store.typed.gasUsed).toBeGreaterThan(21_000n);
});

specRule("receipt.logs", async () => {
  const store = await receiptOf(s.firstStore.hash);
  const creation = await receiptOf(s.deploy.hash);
  carried("logs", store, creation);
  const logs = store.native.logs as { address: string; topics: string[]; transactionHash: string }[];
  expect(logs.map((l) => [l.address, l.topics[0], l.transactionHash])).toEqual([
    [s.address, toEventSelector("Stored(address,uint256,bytes)"), s.firstStore.hash],
  ]);
  expect(store.typed.logs.map((l) => hex(l.transactionHash))).toEqual([s.firstStore.hash]);
  expect(creation.native.logs).toEqual([]);
});

specRule("receipt.logsBloom", async () => {
  const store = await receiptOf(s.firstStore.hash);
  const transfer = await receiptOf(pair[0]);
  carried("logsBloom", store, transfer);
  expect(BigInt(expectData(store.native.logsBloom, "logsBloom", 256))).toBeGreaterThan(0n);
  expect(BigInt(expectData(transfer.native.logsBloom, "logsBloom", 256))).toBe(0n);
  expect(hex(store.typed.logsBloom)).toBe(store.native.logsBloom);
});

specRule("receipt.root", async () => {
  const old = await receiptOf(PRE_BYZANTIUM_TX, recorded);
  carried("root", old);
  carried("status", old);
  expect(hex(old.typed.root)).toBe(expectData(old.native.root, "root", 32));
  expect(old.native).not.toHaveProperty("status");
  expect(old.typed.status).toBeUndefined();
});

specRule("receipt.status", async () => {
  const ok = await receiptOf(s.firstStore.hash);
  const bad = await receiptOf(failed);
  carried("status", ok, bad);
  carried("root", ok, bad);
  expect([ok.native.status, bad.native.status]).toEqual(["0x1", "0x0"]);
  expect([ok.typed.status, bad.typed.status]).toEqual([1n, 0n]);
  expect(ok.native).not.toHaveProperty("root");
  expect(ok.typed.root).toBeUndefined();
});

specRule("receipt.to", async () => {
  const creation = await receiptOf(s.deploy.hash);
  const call = await receiptOf(s.firstStore.hash);
  carried("to", creation, call);
  expect(creation.native.to).toBeNull();
  expect(creation.typed.to).toBeUndefined();
  expect(expectData(call.native.to, "to", 20)).toBe(s.address);
});

specRule("receipt.transactionHash", async () => {
  const r = await receiptOf(s.secondStore.hash);
  carried("transactionHash", r);
  expect(expectData(r.native.transactionHash, "transactionHash", 32)).toBe(s.secondStore.hash);
  expect(hex(r.typed.transactionHash)).toBe(s.secondStore.hash);
});

specRule("receipt.transactionIndex", async () => {
  const [first, second] = [await receiptOf(pair[0]), await receiptOf(pair[1])];
  carried("transactionIndex", first, second);
  expect([first, second].map((r) => expectQuantity(r.native.transactionIndex, "transactionIndex"))).toEqual([0n, 1n]);
  expect([first.typed.transactionIndex, second.typed.transactionIndex]).toEqual([0n, 1n]);
});

specRule("receipt.type", async () => {
  for (const [mined, type] of [
    [s.firstStore, 0n],
    [s.anonymous, 1n],
    [s.secondStore, 2n],
  ] as const) {
    const r = await receiptOf(mined.hash);
    carried("type", r);
    expect(expectQuantity(r.native.type, "type")).toBe(type);
    expect(r.typed.type).toBe(type);
  }
});
