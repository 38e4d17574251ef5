/**
 * The spec's states: what is null while a block, transaction or log is
 * pending, that a pending transaction has no receipt, that
 * eth_getBlockReceipts treats pending as latest, and that a transition shows
 * at once. A real Anvil with automine off holds a transaction in its pool;
 * the pending block and log with the spec's nulls (which Anvil fills in) are
 * recorded answers on a second network.
 */
import { encodeFunctionData, type Hex, hexToBytes, toHex } from "viem";
import { afterAll, beforeAll, expect } from "vitest";
import { type Block, BlockSchema } from "../../gen/nodegate/eth/v1/block_pb.js";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { LogSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import { BlockTag } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { TransactionSchema } from "../../gen/nodegate/eth/v1/transaction_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import { type FixtureUpstream, loadFixture, startFixtureUpstream } from "../support/fixture-upstream.js";
import { deployProbeScenario, type ProbeScenario } from "../support/probe-scenario.js";
import { type NetworkDoors, openLiveAndRecordedGateway, type SpecGateway } from "./harness/gateway.js";
import { typedJson } from "./harness/json-forms.js";
import { nodeRpc } from "./harness/node-rpc.js";
import { specRule } from "./harness/spec-rule.js";

const m = EthService.method;
const table = createMethodTable();
const PENDING = { kind: { case: "tag" as const, value: BlockTag.PENDING } };
const LATEST = { kind: { case: "tag" as const, value: BlockTag.LATEST } };

let anvil: AnvilNode;
let fixtures: FixtureUpstream;
let s: ProbeScenario;
let g: SpecGateway;
let recorded: NetworkDoors;
let pendingHash: Hex;

const anvilRpc = (method: string, params: unknown[]): Promise<unknown> => nodeRpc(anvil.url, method, params);

beforeAll(async () => {
  anvil = await startAnvil();
  s = await deployProbeScenario(anvil.url);
  await anvilRpc("evm_setAutomine", [false]);
  const store = encodeFunctionData({ abi: s.probe.abi, functionName: "store", args: [43n, "0xcafe"] });
  pendingHash = (await anvilRpc("eth_sendTransaction", [{ from: s.sender, to: s.address, data: store }])) as Hex;
  fixtures = await startFixtureUpstream(loadFixture("spec-shapes.json").recordings);
  g = await openLiveAndRecordedGateway(anvil.url, fixtures.url);
  recorded = g.on("recorded");
});

afterAll(async () => {
  await g?.close();
  await fixtures?.close();
  await anvil?.stop();
});

/** The keys of an object whose value is null. */
const nullKeys = (o: Record<string, unknown>): string[] => Object.keys(o).filter((k) => o[k] === null).sort();

specRule("state.pending-nulls", async () => {
  // The pending block: hash, logsBloom, nonce, number; its transactions: blockHash, blockNumber, transactionIndex.
  const block = await recorded.http.result("eth_getBlockByNumber", ["pending", true]);
  expect(nullKeys(block)).toEqual(["hash", "logsBloom", "nonce", "number"]);
  for (const tx of block.transactions) expect(nullKeys(tx)).toEqual(["blockHash", "blockNumber", "transactionIndex"]);
  const typedBlock = (await recorded.eth.call(m.getBlockByNumber, { block: PENDING, fullTransactions: true })).block as Block;
  expect([...(typedBlock.jsonExtras?.nullKeys ?? [])].sort()).toEqual(["hash", "logsBloom", "nonce", "number"]);
  expect([typedBlock.hash, typedBlock.logsBloom, typedBlock.nonce, typedBlock.number]).toEqual([undefined, undefined, undefined, undefined]);
  expect(typedJson(BlockSchema, typedBlock)).toEqual(block);

  // A transaction in the node's pool (a real Anvil answer).
  const tx = await g.http.result("eth_getTransactionByHash", [pendingHash]);
  expect(nullKeys(tx)).toEqual(["blockHash", "blockNumber", "transactionIndex"]);
  const typedTx = (await g.eth.call(m.getTransactionByHash, { transactionHash: hexToBytes(pendingHash) })).transaction;
  expect([...(typedTx?.jsonExtras?.nullKeys ?? [])].sort()).toEqual(["blockHash", "blockNumber", "transactionIndex"]);
  expect(typedJson(TransactionSchema, typedTx as never)).toEqual(tx);

  // A log of the pending block: logIndex, transactionIndex, transactionHash, blockHash, blockNumber.
  const logs = await recorded.http.result("eth_getLogs", [{ fromBlock: "pending", toBlock: "pending" }]);
  expect(logs).toHaveLength(1);
  expect(nullKeys(logs[0])).toEqual(["blockHash", "blockNumber", "logIndex", "transactionHash", "transactionIndex"]);
  const typedLogs = await recorded.eth.call(m.getLogs, { filter: { fromBlock: PENDING, toBlock: PENDING } });
  const typedNulls = [...(typedLogs.logs[0]?.jsonExtras?.nullKeys ?? [])].sort();
  expect(typedNulls).toEqual(["blockHash", "blockNumber", "logIndex", "transactionHash", "transactionIndex"]);
  expect(typedJson(LogSchema, typedLogs.logs[0] as never)).toEqual(logs[0]);
});

specRule("state.pending-receipt", async () => {
  const overHttp = await g.http.post({ jsonrpc: "2.0", id: 1, method: "eth_getTransactionReceipt", params: [pendingHash] });
  expect(overHttp.text).toBe('{"jsonrpc":"2.0","id":1,"result":null}');
  expect(await g.ws.result("eth_getTransactionReceipt", [pendingHash])).toBeNull();
  const typed = await g.eth.call(m.getTransactionReceipt, { transactionHash: hexToBytes(pendingHash) });
  expect(typed.receipt).toBeUndefined();
  // It is pending, not unknown: the node has the transaction.
  expect((await g.http.result("eth_getTransactionByHash", [pendingHash])).hash).toBe(pendingHash);
});

specRule("state.pending-block-receipts", async () => {
  const latest = await g.http.result("eth_getBlockReceipts", ["latest"]);
  expect(latest.map((r: { transactionHash: string }) => r.transactionHash)).toEqual([s.anonymous.hash]);
  expect(await g.http.result("eth_getBlockReceipts", ["pending"])).toEqual(latest);
  const typedPending = await g.eth.call(m.getBlockReceipts, { block: PENDING });
  const typedLatest = await g.eth.call(m.getBlockReceipts, { block: LATEST });
  expect(table.byRpc(m.getBlockReceipts)?.result.encode(typedPending)).toBe(table.byRpc(m.getBlockReceipts)?.result.encode(typedLatest));
  expect(typedPending.blockReceipts?.receipts).toHaveLength(1);
});

// Last in the file: it mines the pending transaction.
specRule("state.transitions", async () => {
  expect(await g.http.result("eth_getTransactionReceipt", [pendingHash])).toBeNull();
  await anvilRpc("evm_mine", []);
  const mined = BigInt((await anvilRpc("eth_blockNumber", [])) as string);
  const receipt = await g.http.result("eth_getTransactionReceipt", [pendingHash]);
  expect(receipt.blockNumber).toBe(toHex(mined));
  const typed = await g.eth.call(m.getTransactionReceipt, { transactionHash: hexToBytes(pendingHash) });
  expect(typed.receipt?.blockNumber).toBe(mined);
  const tx = await g.http.result("eth_getTransactionByHash", [pendingHash]);
  expect(tx.blockNumber).toBe(toHex(mined));
});
