/**
 * The transaction object, row by row, on the native and typed doors, with
 * one transaction of each kind from a real Anvil: a legacy store, an EIP-1559
 * creation and call, an EIP-2930 call with an access list, a block with two
 * transactions (a value transfer and a call), and a transaction left pending.
 */
import { create } from "@bufbuild/protobuf";
import { encodeFunctionData, type Hex, hexToBytes, toHex } from "viem";
import { afterAll, beforeAll, expect } from "vitest";
import { EthService, GetTransactionByBlockNumberAndIndexRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import type { Uint256 } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { type Transaction, TransactionSchema } from "../../gen/nodegate/eth/v1/transaction_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { deployProbeScenario, type Mined, type ProbeScenario, STORED_SLOT } from "../support/probe-scenario.js";
import { openSpecGateway, type SpecGateway } from "./harness/gateway.js";
import { expectData, expectQuantity, expectTypedCarries, QUANTITY } from "./harness/json-forms.js";
import { nodeRpc } from "./harness/node-rpc.js";
import { specRule } from "./harness/spec-rule.js";
import { hex, u256 } from "./harness/typed-values.js";

const m = EthService.method;
const CHAIN_ID = 31337n;
const TRANSFERRED = 12_345n;

let anvil: AnvilNode;
let s: ProbeScenario;
let g: SpecGateway;
/** The block with a value transfer (index 0) and a store call (index 1). */
let pairBlock: bigint;
let pendingHash: Hex;
let payer: Hex;


const anvilRpc = (method: string, params: unknown[]): Promise<unknown> => nodeRpc(anvil.url, method, params);

beforeAll(async () => {
  anvil = await startAnvil();
  s = await deployProbeScenario(anvil.url);
  const accounts = (await anvilRpc("eth_accounts", [])) as Hex[];
  payer = accounts[1] as Hex;
  await anvilRpc("evm_setAutomine", [false]);
  await anvilRpc("eth_sendTransaction", [{ from: payer, to: accounts[2], value: toHex(TRANSFERRED) }]);
  const store = (value: bigint) => encodeFunctionData({ abi: s.probe.abi, functionName: "store", args: [value, "0x"] });
  await anvilRpc("eth_sendTransaction", [{ from: payer, to: s.address, data: store(7n) }]);
  await anvilRpc("evm_mine", []);
  pairBlock = BigInt((await anvilRpc("eth_blockNumber", [])) as string);
  // Left in the pool for the whole file: automine stays off.
  pendingHash = (await anvilRpc("eth_sendTransaction", [{ from: payer, to: s.address, data: store(8n) }])) as Hex;
  g = await openSpecGateway({ upstreamUrl: anvil.url });
});

afterAll(async () => {
  await g?.close();
  await anvil?.stop();
});

interface BothTransactions {
  native: Record<string, unknown>;
  typed: Transaction;
}

/** The transaction at an index of a block, through the native and typed doors. */
async function txAt(block: bigint, index = 0n): Promise<BothTransactions> {
  const native = await g.http.result("eth_getTransactionByBlockNumberAndIndex", [toHex(block), toHex(index)]);
  const typed = await g.eth.call(
    m.getTransactionByBlockNumberAndIndex,
    create(GetTransactionByBlockNumberAndIndexRequestSchema, { block: { kind: { case: "number", value: block } }, index }),
  );
  expect(native).not.toBeNull();
  return { native, typed: typed.transaction as Transaction };
}

const of = (mined: Mined) => txAt(mined.blockNumber);

/** The pending transaction (by hash: its block does not exist yet), through both doors. */
async function pendingTx(): Promise<BothTransactions> {
  const native = await g.http.result("eth_getTransactionByHash", [pendingHash]);
  const typed = await g.eth.call(m.getTransactionByHash, { transactionHash: hexToBytes(pendingHash) });
  return { native, typed: typed.transaction as Transaction };
}

/** Checks a row on the given transactions: the typed field holds each node value. */
function carried(key: string, ...txs: BothTransactions[]): void {
  for (const t of txs) expectTypedCarries(TransactionSchema, t.typed, key, t.native);
}

specRule("tx.accessList", async () => {
  const accessListTx = await of(s.anonymous);
  const legacy = await of(s.firstStore);
  carried("accessList", accessListTx, legacy, await of(s.secondStore));
  expect(accessListTx.native.accessList).toEqual([{ address: s.address, storageKeys: [STORED_SLOT] }]);
  expect(accessListTx.typed.accessList.map((e) => [hex(e.address), e.storageKeys.map((k) => hex(k))])).toEqual([[s.address, [STORED_SLOT]]]);
  expect(legacy.native).not.toHaveProperty("accessList");
  expect(legacy.typed.accessList).toEqual([]);
});

specRule("tx.blockHash", async () => {
  const t = await of(s.firstStore);
  const p = await pendingTx();
  carried("blockHash", t, p);
  expect(expectData(t.native.blockHash, "blockHash", 32)).toBe(s.firstStore.blockHash);
  expect(hex(t.typed.blockHash)).toBe(s.firstStore.blockHash);
  expect(p.native.blockHash).toBeNull();
});

specRule("tx.blockNumber", async () => {
  const t = await of(s.firstStore);
  const p = await pendingTx();
  carried("blockNumber", t, p);
  expect(expectQuantity(t.native.blockNumber, "blockNumber")).toBe(s.firstStore.blockNumber);
  expect(t.typed.blockNumber).toBe(s.firstStore.blockNumber);
  expect(p.native.blockNumber).toBeNull();
  expect(p.typed.blockNumber).toBeUndefined();
});

specRule("tx.chainID", async () => {
  const eip1559 = await of(s.secondStore);
  carried("chainId", eip1559);
  expect(eip1559.native).not.toHaveProperty("chainID");
  expect(expectQuantity(eip1559.native.chainId, "chainId")).toBe(CHAIN_ID);
  expect(eip1559.typed.chainId).toBe(CHAIN_ID);
  expect(TransactionSchema.fields.find((f) => f.name === "chain_id")?.jsonName).toBe("chainId");
});

specRule("tx.from", async () => {
  const t = await of(s.firstStore);
  const paid = await txAt(pairBlock, 0n);
  carried("from", t, paid);
  expect(expectData(t.native.from, "from", 20)).toBe(s.sender.toLowerCase());
  expect(hex(paid.typed.from)).toBe(payer.toLowerCase());
});

specRule("tx.gas", async () => {
  const transfer = await txAt(pairBlock, 0n);
  const call = await txAt(pairBlock, 1n);
  carried("gas", transfer, call);
  expect(expectQuantity(transfer.native.gas, "gas")).toBe(21_000n); // what Anvil fills in for a plain transfer
  expect(call.typed.gas).toBe(expectQuantity(call.native.gas, "gas"));
  expect(call.typed.gas).toBeGreaterThan(21_000n);
});

specRule("tx.gasPrice", async () => {
  const legacy = await of(s.firstStore);
  const eip1559 = await of(s.secondStore);
  carried("gasPrice", legacy, eip1559);
  expect(u256(legacy.typed.gasPrice)).toBe(expectQuantity(legacy.native.gasPrice, "gasPrice"));
  expect(u256(legacy.typed.gasPrice)).toBeGreaterThan(0n);
  expect(u256(eip1559.typed.gasPrice)).toBe(expectQuantity(eip1559.native.gasPrice, "gasPrice"));
});

specRule("tx.hash", async () => {
  for (const mined of [s.deploy, s.firstStore, s.secondStore, s.anonymous]) {
    const t = await of(mined);
    carried("hash", t);
    expect(expectData(t.native.hash, "hash", 32)).toBe(mined.hash);
    expect(hex(t.typed.hash)).toBe(mined.hash);
  }
});

specRule("tx.input", async () => {
  const t = await of(s.firstStore);
  const transfer = await txAt(pairBlock, 0n);
  carried("input", t, transfer);
  const sent = encodeFunctionData({ abi: s.probe.abi, functionName: "store", args: [s.firstStore.value, s.firstStore.note] });
  expect(expectData(t.native.input, "input")).toBe(sent);
  expect(hex(t.typed.input)).toBe(sent);
  expect(transfer.native.input).toBe("0x");
});

specRule("tx.maxPriorityFeePerGas", async () => {
  const eip1559 = await of(s.secondStore);
  const legacy = await of(s.firstStore);
  const accessList = await of(s.anonymous);
  carried("maxPriorityFeePerGas", eip1559, legacy, accessList);
  expect(u256(eip1559.typed.maxPriorityFeePerGas)).toBe(expectQuantity(eip1559.native.maxPriorityFeePerGas, "maxPriorityFeePerGas"));
  expect(legacy.native).not.toHaveProperty("maxPriorityFeePerGas");
  expect(accessList.native).not.toHaveProperty("maxPriorityFeePerGas");
});

specRule("tx.maxFeePerGas", async () => {
  const eip1559 = await of(s.secondStore);
  const legacy = await of(s.firstStore);
  carried("maxFeePerGas", eip1559, legacy);
  const maxFee = expectQuantity(eip1559.native.maxFeePerGas, "maxFeePerGas");
  expect(u256(eip1559.typed.maxFeePerGas)).toBe(maxFee);
  expect(maxFee).toBeGreaterThanOrEqual(u256(eip1559.typed.maxPriorityFeePerGas));
  expect(legacy.typed.maxFeePerGas).toBeUndefined();
});

specRule("tx.nonce", async () => {
  // The sender's transactions in order: the deployment, two stores, the access-list call.
  const nonces: bigint[] = [];
  for (const mined of [s.deploy, s.firstStore, s.secondStore, s.anonymous]) {
    const t = await of(mined);
    carried("nonce", t);
    expect(t.typed.nonce).toBe(expectQuantity(t.native.nonce, "nonce"));
    nonces.push(t.typed.nonce ?? -1n);
  }
  expect(nonces).toEqual([0n, 1n, 2n, 3n]);
});

/** r and s: quantities of at most 32 bytes (64 hex digits), as nodes write them. */
function signaturePart(key: "r" | "s", t: BothTransactions, typedValue: Uint256 | undefined): void {
  carried(key, t);
  expect(t.native[key]).toMatch(QUANTITY);
  expect((t.native[key] as string).length).toBeLessThanOrEqual(66);
  expect(u256(typedValue)).toBe(BigInt(t.native[key] as string));
  expect(u256(typedValue)).toBeGreaterThan(0n);
}

specRule("tx.r", async () => {
  for (const mined of [s.firstStore, s.secondStore, s.anonymous]) {
    const t = await of(mined);
    signaturePart("r", t, t.typed.r);
  }
});

specRule("tx.s", async () => {
  for (const mined of [s.firstStore, s.secondStore, s.anonymous]) {
    const t = await of(mined);
    signaturePart("s", t, t.typed.s);
  }
});

specRule("tx.to", async () => {
  const creation = await of(s.deploy);
  const call = await of(s.secondStore);
  carried("to", creation, call);
  expect(creation.native.to).toBeNull();
  expect(creation.typed.to).toBeUndefined();
  expect(expectData(call.native.to, "to", 20)).toBe(s.address);
  expect(hex(call.typed.to)).toBe(s.address);
});

specRule("tx.transactionIndex", async () => {
  const first = await txAt(pairBlock, 0n);
  const second = await txAt(pairBlock, 1n);
  const p = await pendingTx();
  carried("transactionIndex", first, second, p);
  expect([first, second].map((t) => expectQuantity(t.native.transactionIndex, "transactionIndex"))).toEqual([0n, 1n]);
  expect([first.typed.transactionIndex, second.typed.transactionIndex]).toEqual([0n, 1n]);
  expect(p.native.transactionIndex).toBeNull();
});

specRule("tx.type", async () => {
  const kinds: [Mined, bigint][] = [
    [s.firstStore, 0n],
    [s.anonymous, 1n],
    [s.secondStore, 2n],
  ];
  for (const [mined, type] of kinds) {
    const t = await of(mined);
    carried("type", t);
    expect(expectQuantity(t.native.type, "type")).toBe(type);
    expect(t.typed.type).toBe(type);
  }
});

specRule("tx.v", async () => {
  const legacy = await of(s.firstStore);
  const eip1559 = await of(s.secondStore);
  carried("v", legacy, eip1559);
  const v = expectQuantity(legacy.native.v, "v");
  // EIP-155: v is chainId * 2 + 35 or + 36.
  expect([CHAIN_ID * 2n + 35n, CHAIN_ID * 2n + 36n]).toContain(v);
  expect(legacy.typed.v).toBe(v);
  // Typed transactions: v is the y parity, 0 or 1.
  expect([0n, 1n]).toContain(expectQuantity(eip1559.native.v, "v"));
  expect(eip1559.typed.v).toBe(BigInt(eip1559.native.v as string));
});

specRule("tx.value", async () => {
  const transfer = await txAt(pairBlock, 0n);
  const call = await txAt(pairBlock, 1n);
  carried("value", transfer, call);
  expect(expectQuantity(transfer.native.value, "value")).toBe(TRANSFERRED);
  expect(u256(transfer.typed.value)).toBe(TRANSFERRED);
  expect(u256(call.typed.value)).toBe(0n);
});
