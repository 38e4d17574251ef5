/**
 * The twelve seed methods end to end against a real node: Probe deployed on
 * Anvil, then every method called through grpc-js and connect-es (typed) and
 * viem (native), asserting the values the chain really holds. Each typed
 * answer, re-encoded with the method table's result codec, must equal what
 * Anvil itself answers for the same call: the typed path loses nothing.
 */
import { create, type DescMethod, equals, type Message, type MessageInitShape } from "@bufbuild/protobuf";
import {
  bytesToBigInt,
  bytesToHex,
  createPublicClient,
  decodeAbiParameters,
  decodeFunctionResult,
  encodeAbiParameters,
  encodeFunctionData,
  getAbiItem,
  type Hex,
  hexToBytes,
  http,
  keccak256,
  pad,
  type PublicClient,
  toEventSelector,
  toHex,
} from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockSchema, type BlockTransactions } from "../../gen/nodegate/eth/v1/block_pb.js";
import {
  CallRequestSchema,
  type CallResponse,
  EstimateGasRequestSchema,
  type EstimateGasResponse,
  EthService,
  GetBlockByHashRequestSchema,
  type GetBlockByHashResponse,
  GetBlockByNumberRequestSchema,
  type GetBlockByNumberResponse,
  GetBlockReceiptsRequestSchema,
  type GetBlockReceiptsResponse,
  GetLogsRequestSchema,
  type GetLogsResponse,
  GetProofRequestSchema,
  type GetProofResponse,
  GetStorageAtRequestSchema,
  type GetStorageAtResponse,
  GetTransactionByBlockNumberAndIndexRequestSchema,
  type GetTransactionByBlockNumberAndIndexResponse,
  GetTransactionReceiptRequestSchema,
  type GetTransactionReceiptResponse,
  GetUncleByBlockHashAndIndexRequestSchema,
  type GetUncleByBlockHashAndIndexResponse,
  GetUncleByBlockNumberAndIndexRequestSchema,
  type GetUncleByBlockNumberAndIndexResponse,
} from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import type { Log } from "../../gen/nodegate/eth/v1/log_pb.js";
import { BlockTag, type BlockIdSchema, type Uint256 } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { TransactionReceiptSchema } from "../../gen/nodegate/eth/v1/receipt_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import { postJson, resultText, rpcResult } from "../support/json-rpc.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { balanceSlot, deployProbeScenario, type ProbeScenario, STORED_SLOT } from "../support/probe-scenario.js";
import { connectCaller, grpcJsCaller, type TypedCaller } from "../support/typed-callers.js";

const SEED_METHODS = [
  "eth_getStorageAt",
  "eth_getLogs",
  "eth_getBlockByHash",
  "eth_getBlockByNumber",
  "eth_getUncleByBlockNumberAndIndex",
  "eth_getUncleByBlockHashAndIndex",
  "eth_getTransactionByBlockNumberAndIndex",
  "eth_getTransactionReceipt",
  "eth_getBlockReceipts",
  "eth_estimateGas",
  "eth_call",
  "eth_getProof",
];

const table = createMethodTable();
const m = EthService.method;

let anvil: AnvilNode;
let ng: TestNodegate;
let s: ProbeScenario;
let viem: PublicClient;
const callers = new Map<string, TypedCaller>();

beforeAll(async () => {
  anvil = await startAnvil();
  s = await deployProbeScenario(anvil.url);
  ng = await startNodegate({ upstreamUrl: anvil.url });
  callers.set("grpc-js", grpcJsCaller(ng, EthService, ng.key));
  callers.set("connect-es", connectCaller(ng, EthService, ng.key));
  viem = createPublicClient({ transport: http(ng.rpcUrl) }) as PublicClient;
});

afterAll(async () => {
  for (const caller of callers.values()) caller.close();
  await ng?.close();
  await anvil?.stop();
});

type BlockIdInit = MessageInitShape<typeof BlockIdSchema>;
const atNumber = (n: bigint): BlockIdInit => ({ kind: { case: "number", value: n } });
const atHash = (h: Hex): BlockIdInit => ({ kind: { case: "hash", value: hexToBytes(h) } });
const atLatest: BlockIdInit = { kind: { case: "tag", value: BlockTag.LATEST } };
const bytes = (h: Hex): Uint8Array => hexToBytes(h);
const u256 = (v: Uint256 | undefined): bigint => bytesToBigInt(v?.value ?? new Uint8Array());
const hex = (b: Uint8Array | undefined): Hex => bytesToHex(b ?? new Uint8Array());

const storedTopic = (): Hex => toEventSelector(getAbiItem({ abi: s.probe.abi, name: "Stored" }) as never);
const storeInput = (value: bigint, note: Hex): Hex => encodeFunctionData({ abi: s.probe.abi, functionName: "store", args: [value, note] });
const burnInput = (n: bigint): Hex => encodeFunctionData({ abi: s.probe.abi, functionName: "burn", args: [n] });
const noteOf = (data: Uint8Array | undefined): Hex => decodeAbiParameters([{ type: "bytes" }], hex(data))[0];

/** A Stored(who, value, note) log from the sender, as Anvil recorded it. */
function expectStoredLog(log: Log | undefined, store: { hash: Hex; value: bigint; note: Hex }): void {
  expect(log).toBeDefined();
  expect(hex(log?.address)).toBe(s.address);
  expect(log?.topics.map((t) => hex(t))).toEqual([storedTopic(), pad(s.sender.toLowerCase() as Hex), toHex(store.value, { size: 32 })]);
  expect(noteOf(log?.data)).toBe(store.note);
  expect(hex(log?.transactionHash)).toBe(store.hash);
}

function hashesOf(txs: BlockTransactions | undefined): Hex[] {
  return txs?.full.length ? txs.full.map((t) => hex(t.hash)) : (txs?.hashes ?? []).map((h) => hex(h));
}

/**
 * One call of a seed method: the typed request, the same request as the
 * JSON-RPC params Anvil is asked directly, and what the answer must hold.
 */
interface MethodCase {
  title: string;
  rpc: DescMethod;
  request(): Message;
  params(): unknown[];
  check(response: Message): void;
}

function methodCase<R extends Message>(c: Omit<MethodCase, "check"> & { check(response: R): void }): MethodCase {
  return c as MethodCase;
}

const cases: MethodCase[] = [
  methodCase<GetStorageAtResponse>({
    title: "eth_getStorageAt: slot 0 (short position 0x0) at the first store's block holds 42",
    rpc: m.getStorageAt,
    request: () =>
      create(GetStorageAtRequestSchema, { address: bytes(s.address), position: new Uint8Array(0), block: atNumber(s.firstStore.blockNumber) }),
    params: () => [s.address, "0x0", toHex(s.firstStore.blockNumber)],
    check: (res) => {
      expect(res.value?.length).toBe(32);
      expect(bytesToBigInt(res.value ?? new Uint8Array())).toBe(s.firstStore.value);
    },
  }),
  methodCase<GetStorageAtResponse>({
    title: "eth_getStorageAt: the balances[sender] mapping slot (keccak position) at latest holds 99",
    rpc: m.getStorageAt,
    request: () => create(GetStorageAtRequestSchema, { address: bytes(s.address), position: bytes(balanceSlot(s.sender)) }),
    params: () => [s.address, balanceSlot(s.sender), "latest"],
    check: (res) => expect(bytesToBigInt(res.value ?? new Uint8Array())).toBe(s.secondStore.value),
  }),
  methodCase<GetStorageAtResponse>({
    title: "eth_getStorageAt: slot 0 at the deployment block (by block hash) holds the constructor's 7",
    rpc: m.getStorageAt,
    request: () => create(GetStorageAtRequestSchema, { address: bytes(s.address), position: bytes(STORED_SLOT), block: atHash(s.deploy.blockHash) }),
    params: () => [s.address, STORED_SLOT, { blockHash: s.deploy.blockHash }],
    check: (res) => expect(bytesToBigInt(res.value ?? new Uint8Array())).toBe(s.initialValue),
  }),
  methodCase<GetLogsResponse>({
    title: "eth_getLogs: Stored events of Probe over the whole chain",
    rpc: m.getLogs,
    request: () =>
      create(GetLogsRequestSchema, {
        filter: { address: [bytes(s.address)], fromBlock: atNumber(0n), toBlock: atLatest, topics: [{ anyOf: [bytes(storedTopic())] }] },
      }),
    params: () => [{ address: [s.address], fromBlock: "0x0", toBlock: "latest", topics: [storedTopic()] }],
    check: (res) => {
      expect(res.logs).toHaveLength(2);
      expectStoredLog(res.logs[0], s.firstStore);
      expectStoredLog(res.logs[1], s.secondStore);
      expect(res.logs[0]?.blockNumber).toBe(s.firstStore.blockNumber);
      expect(res.logs[0]?.removed).toBe(false);
    },
  }),
  methodCase<GetLogsResponse>({
    title: "eth_getLogs: by blockHash, the anonymous event (no topics at all)",
    rpc: m.getLogs,
    request: () => create(GetLogsRequestSchema, { filter: { blockHash: bytes(s.anonymous.blockHash) } }),
    params: () => [{ blockHash: s.anonymous.blockHash }],
    check: (res) => {
      expect(res.logs).toHaveLength(1);
      expect(res.logs[0]?.topics).toEqual([]);
      expect(hex(res.logs[0]?.data)).toBe(encodeAbiParameters([{ type: "uint256" }], [s.anonymous.value]));
      expect(hex(res.logs[0]?.blockHash)).toBe(s.anonymous.blockHash);
    },
  }),
  methodCase<GetBlockByHashResponse>({
    title: "eth_getBlockByHash: the first store's block with full transactions (a legacy type 0x0)",
    rpc: m.getBlockByHash,
    request: () => create(GetBlockByHashRequestSchema, { blockHash: bytes(s.firstStore.blockHash), fullTransactions: true }),
    params: () => [s.firstStore.blockHash, true],
    check: (res) => {
      expect(hex(res.block?.hash)).toBe(s.firstStore.blockHash);
      expect(res.block?.number).toBe(s.firstStore.blockNumber);
      const tx = res.block?.transactions?.full[0];
      expect(hex(tx?.hash)).toBe(s.firstStore.hash);
      expect(tx?.type).toBe(0n);
      expect(u256(tx?.gasPrice)).toBeGreaterThan(0n);
      expect(tx?.maxFeePerGas).toBeUndefined();
      expect(hex(tx?.input)).toBe(storeInput(s.firstStore.value, s.firstStore.note));
    },
  }),
  methodCase<GetBlockByHashResponse>({
    title: "eth_getBlockByHash: the deployment block with full transactions (an EIP-1559 creation, to null)",
    rpc: m.getBlockByHash,
    request: () => create(GetBlockByHashRequestSchema, { blockHash: bytes(s.deploy.blockHash), fullTransactions: true }),
    params: () => [s.deploy.blockHash, true],
    check: (res) => {
      const tx = res.block?.transactions?.full[0];
      expect(hex(tx?.hash)).toBe(s.deploy.hash);
      expect(tx?.type).toBe(2n);
      expect(tx?.to).toBeUndefined();
      expect(tx?.jsonExtras?.nullKeys).toContain("to");
      expect(u256(tx?.maxFeePerGas)).toBeGreaterThan(0n);
      expect(hex(tx?.input).startsWith(s.probe.bytecode)).toBe(true);
    },
  }),
  methodCase<GetBlockByHashResponse>({
    title: "eth_getBlockByHash: the access-list block with transaction hashes only",
    rpc: m.getBlockByHash,
    request: () => create(GetBlockByHashRequestSchema, { blockHash: bytes(s.anonymous.blockHash), fullTransactions: false }),
    params: () => [s.anonymous.blockHash, false],
    check: (res) => {
      expect(res.block?.transactions?.full).toEqual([]);
      expect(hashesOf(res.block?.transactions)).toEqual([s.anonymous.hash]);
    },
  }),
  methodCase<GetBlockByNumberResponse>({
    title: "eth_getBlockByNumber: the second store's block with full transactions (an EIP-1559 call)",
    rpc: m.getBlockByNumber,
    request: () => create(GetBlockByNumberRequestSchema, { block: atNumber(s.secondStore.blockNumber), fullTransactions: true }),
    params: () => [toHex(s.secondStore.blockNumber), true],
    check: (res) => {
      expect(hex(res.block?.hash)).toBe(s.secondStore.blockHash);
      const tx = res.block?.transactions?.full[0];
      expect(hex(tx?.hash)).toBe(s.secondStore.hash);
      expect(tx?.type).toBe(2n);
      expect(hex(tx?.to)).toBe(s.address);
      expect(u256(tx?.maxPriorityFeePerGas)).toBeGreaterThan(0n);
    },
  }),
  methodCase<GetBlockByNumberResponse>({
    title: "eth_getBlockByNumber: latest is the access-list block",
    rpc: m.getBlockByNumber,
    request: () => create(GetBlockByNumberRequestSchema, { block: atLatest }),
    params: () => ["latest", false],
    check: (res) => {
      expect(res.block?.number).toBe(s.anonymous.blockNumber);
      expect(hashesOf(res.block?.transactions)).toEqual([s.anonymous.hash]);
    },
  }),
  methodCase<GetUncleByBlockNumberAndIndexResponse>({
    // Anvil never has uncles; test/e2e/uncles.test.ts reads real ones from a recorded node.
    title: "eth_getUncleByBlockNumberAndIndex: a post-merge block has no uncle (null)",
    rpc: m.getUncleByBlockNumberAndIndex,
    request: () => create(GetUncleByBlockNumberAndIndexRequestSchema, { block: atNumber(s.firstStore.blockNumber), index: 0n }),
    params: () => [toHex(s.firstStore.blockNumber), "0x0"],
    check: (res) => expect(res.uncle).toBeUndefined(),
  }),
  methodCase<GetUncleByBlockHashAndIndexResponse>({
    title: "eth_getUncleByBlockHashAndIndex: a post-merge block has no uncle (null)",
    rpc: m.getUncleByBlockHashAndIndex,
    request: () => create(GetUncleByBlockHashAndIndexRequestSchema, { blockHash: bytes(s.firstStore.blockHash), index: 0n }),
    params: () => [s.firstStore.blockHash, "0x0"],
    check: (res) => expect(res.uncle).toBeUndefined(),
  }),
  methodCase<GetTransactionByBlockNumberAndIndexResponse>({
    title: "eth_getTransactionByBlockNumberAndIndex: index 0 of the first store's block is the sent store(42)",
    rpc: m.getTransactionByBlockNumberAndIndex,
    request: () => create(GetTransactionByBlockNumberAndIndexRequestSchema, { block: atNumber(s.firstStore.blockNumber), index: 0n }),
    params: () => [toHex(s.firstStore.blockNumber), "0x0"],
    check: (res) => {
      const tx = res.transaction;
      expect(hex(tx?.hash)).toBe(s.firstStore.hash);
      expect(hex(tx?.from)).toBe(s.sender.toLowerCase());
      expect(hex(tx?.to)).toBe(s.address);
      expect(tx?.nonce).toBe(1n);
      expect(tx?.transactionIndex).toBe(0n);
      expect(hex(tx?.input)).toBe(storeInput(s.firstStore.value, s.firstStore.note));
    },
  }),
  methodCase<GetTransactionByBlockNumberAndIndexResponse>({
    title: "eth_getTransactionByBlockNumberAndIndex: the EIP-2930 transaction carries its access list",
    rpc: m.getTransactionByBlockNumberAndIndex,
    request: () => create(GetTransactionByBlockNumberAndIndexRequestSchema, { block: atNumber(s.anonymous.blockNumber), index: 0n }),
    params: () => [toHex(s.anonymous.blockNumber), "0x0"],
    check: (res) => {
      const tx = res.transaction;
      expect(hex(tx?.hash)).toBe(s.anonymous.hash);
      expect(tx?.type).toBe(1n);
      expect(tx?.accessList.map((e) => [hex(e.address), e.storageKeys.map((k) => hex(k))])).toEqual([[s.address, [STORED_SLOT]]]);
    },
  }),
  methodCase<GetTransactionReceiptResponse>({
    title: "eth_getTransactionReceipt: the deployment succeeded and names the contract address",
    rpc: m.getTransactionReceipt,
    request: () => create(GetTransactionReceiptRequestSchema, { transactionHash: bytes(s.deploy.hash) }),
    params: () => [s.deploy.hash],
    check: (res) => {
      expect(res.receipt?.status).toBe(1n);
      expect(hex(res.receipt?.contractAddress)).toBe(s.address);
      expect(res.receipt?.to).toBeUndefined();
      expect(res.receipt?.type).toBe(2n);
      expect(res.receipt?.logs).toEqual([]);
    },
  }),
  methodCase<GetTransactionReceiptResponse>({
    title: "eth_getTransactionReceipt: store(42) succeeded and emitted Stored",
    rpc: m.getTransactionReceipt,
    request: () => create(GetTransactionReceiptRequestSchema, { transactionHash: bytes(s.firstStore.hash) }),
    params: () => [s.firstStore.hash],
    check: (res) => {
      expect(res.receipt?.status).toBe(1n);
      expect(res.receipt?.contractAddress).toBeUndefined();
      expect(res.receipt?.gasUsed).toBeGreaterThan(21_000n);
      expect(res.receipt?.logs).toHaveLength(1);
      expectStoredLog(res.receipt?.logs[0], s.firstStore);
    },
  }),
  methodCase<GetBlockReceiptsResponse>({
    title: "eth_getBlockReceipts: the second store's block by number",
    rpc: m.getBlockReceipts,
    request: () => create(GetBlockReceiptsRequestSchema, { block: atNumber(s.secondStore.blockNumber) }),
    params: () => [toHex(s.secondStore.blockNumber)],
    check: (res) => {
      const receipts = res.blockReceipts?.receipts ?? [];
      expect(receipts.map((r) => hex(r.transactionHash))).toEqual([s.secondStore.hash]);
      expectStoredLog(receipts[0]?.logs[0], s.secondStore);
    },
  }),
  methodCase<GetBlockReceiptsResponse>({
    title: "eth_getBlockReceipts: the deployment block by hash",
    rpc: m.getBlockReceipts,
    request: () => create(GetBlockReceiptsRequestSchema, { block: atHash(s.deploy.blockHash) }),
    params: () => [s.deploy.blockHash],
    check: (res) => {
      const receipts = res.blockReceipts?.receipts ?? [];
      expect(receipts.map((r) => hex(r.contractAddress))).toEqual([s.address]);
    },
  }),
  methodCase<EstimateGasResponse>({
    title: "eth_estimateGas: burn(1) costs more than a plain transfer",
    rpc: m.estimateGas,
    request: () => create(EstimateGasRequestSchema, { transaction: { from: bytes(s.sender), to: bytes(s.address), input: bytes(burnInput(1n)) } }),
    params: () => [{ from: s.sender, to: s.address, input: burnInput(1n) }, "latest"],
    check: (res) => expect(res.gas).toBeGreaterThan(21_000n),
  }),
  methodCase<CallResponse>({
    title: "eth_call: stored() at latest returns 99",
    rpc: m.call,
    request: () =>
      create(CallRequestSchema, {
        transaction: { to: bytes(s.address), data: bytes(encodeFunctionData({ abi: s.probe.abi, functionName: "stored" })) },
        block: atLatest,
      }),
    params: () => [{ to: s.address, data: encodeFunctionData({ abi: s.probe.abi, functionName: "stored" }) }, "latest"],
    check: (res) => expect(decodeFunctionResult({ abi: s.probe.abi, functionName: "stored", data: hex(res.data) })).toBe(s.secondStore.value),
  }),
  methodCase<CallResponse>({
    title: "eth_call: balances(sender) at the first store's block returns 42",
    rpc: m.call,
    request: () =>
      create(CallRequestSchema, {
        transaction: { to: bytes(s.address), input: bytes(encodeFunctionData({ abi: s.probe.abi, functionName: "balances", args: [s.sender] })) },
        block: atNumber(s.firstStore.blockNumber),
      }),
    params: () => [
      { to: s.address, input: encodeFunctionData({ abi: s.probe.abi, functionName: "balances", args: [s.sender] }) },
      toHex(s.firstStore.blockNumber),
    ],
    check: (res) =>
      expect(decodeFunctionResult({ abi: s.probe.abi, functionName: "balances", data: hex(res.data) })).toBe(s.firstStore.value),
  }),
  methodCase<GetProofResponse>({
    title: "eth_getProof: Probe's account and its two written slots at the second store's block",
    rpc: m.getProof,
    request: () =>
      create(GetProofRequestSchema, {
        address: bytes(s.address),
        storageKeys: [bytes(STORED_SLOT), bytes(balanceSlot(s.sender))],
        block: atNumber(s.secondStore.blockNumber),
      }),
    params: () => [s.address, [STORED_SLOT, balanceSlot(s.sender)], toHex(s.secondStore.blockNumber)],
    check: (res) => {
      const proof = res.proof;
      expect(hex(proof?.address)).toBe(s.address);
      expect(proof?.nonce).toBe(1n);
      expect(proof?.accountProof.length).toBeGreaterThan(0);
      expect(proof?.storageProof.map((p) => [hex(p.key), u256(p.value)])).toEqual([
        [STORED_SLOT, s.secondStore.value],
        [balanceSlot(s.sender), s.secondStore.value],
      ]);
      expect(proof?.storageProof[0]?.proof.length).toBeGreaterThan(0);
    },
  }),
];

it("the cases cover all twelve seed methods", () => {
  const covered = new Set(cases.map((c) => table.byRpc(c.rpc)?.jsonrpcMethod));
  expect([...covered].sort()).toEqual([...SEED_METHODS].sort());
});

for (const clientName of ["grpc-js", "connect-es"]) {
  describe(`typed path through ${clientName}`, () => {
    const call = <R extends Message>(rpc: DescMethod, request: Message) => (callers.get(clientName) as TypedCaller).call<R>(rpc, request);

    for (const c of cases) {
      it(c.title, async () => {
        const response = await call(c.rpc, c.request());
        c.check(response);
        const spec = table.byRpc(c.rpc);
        const reEncoded = JSON.parse(spec?.result.encode(response) ?? "") as unknown;
        expect(reEncoded).toEqual(await rpcResult(anvil.url, spec?.jsonrpcMethod ?? "", c.params()));
      });
    }

    it("eth_getBlockByNumber and eth_getBlockByHash return the same block", async () => {
      const byNumber = await call<GetBlockByNumberResponse>(
        m.getBlockByNumber,
        create(GetBlockByNumberRequestSchema, { block: atNumber(s.firstStore.blockNumber), fullTransactions: true }),
      );
      const byHash = await call<GetBlockByHashResponse>(
        m.getBlockByHash,
        create(GetBlockByHashRequestSchema, { blockHash: bytes(s.firstStore.blockHash), fullTransactions: true }),
      );
      expect(byNumber.block).toBeDefined();
      expect(equals(BlockSchema, byNumber.block as never, byHash.block as never)).toBe(true);
    });

    it("eth_getBlockReceipts contains the receipt eth_getTransactionReceipt returns", async () => {
      const single = await call<GetTransactionReceiptResponse>(
        m.getTransactionReceipt,
        create(GetTransactionReceiptRequestSchema, { transactionHash: bytes(s.firstStore.hash) }),
      );
      const all = await call<GetBlockReceiptsResponse>(
        m.getBlockReceipts,
        create(GetBlockReceiptsRequestSchema, { block: atHash(s.firstStore.blockHash) }),
      );
      const match = all.blockReceipts?.receipts.find((r) => hex(r.transactionHash) === s.firstStore.hash);
      expect(match).toBeDefined();
      expect(equals(TransactionReceiptSchema, match as never, single.receipt as never)).toBe(true);
    });

    it("eth_estimateGas grows with the work the call does", async () => {
      const estimate = async (n: bigint) =>
        (
          await call<EstimateGasResponse>(
            m.estimateGas,
            create(EstimateGasRequestSchema, { transaction: { from: bytes(s.sender), to: bytes(s.address), input: bytes(burnInput(n)) } }),
          )
        ).gas ?? 0n;
      const small = await estimate(1n);
      const large = await estimate(64n);
      expect(small).toBeGreaterThan(21_000n);
      expect(large).toBeGreaterThan(small);
    });

    // Found from outside: a Go client's value from FillBytes(make([]byte, 32)) was INVALID_ARGUMENT.
    it("a Uint256 padded with leading zero bytes is read as the value it pads", async () => {
      const withValue = async (value: Uint8Array) =>
        (
          await call<EstimateGasResponse>(
            m.estimateGas,
            create(EstimateGasRequestSchema, { transaction: { from: bytes(s.sender), to: bytes(s.sender), value: { value } } }),
          )
        ).gas;
      const padded = new Uint8Array(32);
      padded[31] = 7;
      expect(await withValue(padded)).toBe(await withValue(new Uint8Array([7])));
    });
  });
}

describe("native path through viem", () => {
  it("eth_getStorageAt: slot 0 per block and the mapping slot", async () => {
    const at = async (blockNumber: bigint) => BigInt((await viem.getStorageAt({ address: s.address, slot: "0x0", blockNumber })) ?? "0x");
    expect(await at(s.deploy.blockNumber)).toBe(s.initialValue);
    expect(await at(s.firstStore.blockNumber)).toBe(s.firstStore.value);
    expect(await at(s.secondStore.blockNumber)).toBe(s.secondStore.value);
    expect(BigInt((await viem.getStorageAt({ address: s.address, slot: balanceSlot(s.sender) })) ?? "0x")).toBe(s.secondStore.value);
  });

  it("eth_getLogs: the Stored events, decoded by viem", async () => {
    const event = getAbiItem({ abi: s.probe.abi, name: "Stored" }) as never;
    const logs = (await viem.getLogs({ address: s.address, event, fromBlock: 0n, toBlock: "latest" })) as unknown as {
      args: { who: Hex; value: bigint; note: Hex };
      transactionHash: Hex;
      topics: Hex[];
    }[];
    expect(logs.map((l) => [l.transactionHash, l.args.who, l.args.value, l.args.note])).toEqual([
      [s.firstStore.hash, s.sender, s.firstStore.value, s.firstStore.note],
      [s.secondStore.hash, s.sender, s.secondStore.value, s.secondStore.note],
    ]);
    expect(logs[0]?.topics[0]).toBe(storedTopic());
  });

  it("eth_getBlockByHash and eth_getBlockByNumber: the same block, with typed transactions", async () => {
    const byHash = await viem.getBlock({ blockHash: s.firstStore.blockHash, includeTransactions: true });
    const byNumber = await viem.getBlock({ blockNumber: s.firstStore.blockNumber, includeTransactions: true });
    expect(byHash.hash).toBe(s.firstStore.blockHash);
    expect(byNumber).toEqual(byHash);
    expect(byHash.transactions.map((t) => [t.hash, t.type])).toEqual([[s.firstStore.hash, "legacy"]]);
    const deployBlock = await viem.getBlock({ blockNumber: s.deploy.blockNumber, includeTransactions: true });
    expect(deployBlock.transactions.map((t) => [t.hash, t.type, t.to])).toEqual([[s.deploy.hash, "eip1559", null]]);
  });

  it("eth_getUncleByBlockNumberAndIndex and eth_getUncleByBlockHashAndIndex: null on a post-merge chain", async () => {
    const byNumber = await viem.request({
      method: "eth_getUncleByBlockNumberAndIndex" as never,
      params: [toHex(s.firstStore.blockNumber), "0x0"] as never,
    });
    const byHash = await viem.request({ method: "eth_getUncleByBlockHashAndIndex" as never, params: [s.firstStore.blockHash, "0x0"] as never });
    expect(byNumber).toBeNull();
    expect(byHash).toBeNull();
  });

  it("eth_getTransactionByBlockNumberAndIndex: the sent transaction", async () => {
    const tx = await viem.getTransaction({ blockNumber: s.anonymous.blockNumber, index: 0 });
    expect(tx.hash).toBe(s.anonymous.hash);
    expect(tx.type).toBe("eip2930");
    expect(tx.accessList).toEqual([{ address: s.address, storageKeys: [STORED_SLOT] }]);
  });

  it("eth_getTransactionReceipt: status success and the created contract's address", async () => {
    const receipt = await viem.getTransactionReceipt({ hash: s.deploy.hash });
    expect(receipt.status).toBe("success");
    expect(receipt.contractAddress).toBe(s.address);
    const store = await viem.getTransactionReceipt({ hash: s.firstStore.hash });
    expect(store.logs.map((l) => l.topics)).toEqual([[storedTopic(), pad(s.sender.toLowerCase() as Hex), toHex(s.firstStore.value, { size: 32 })]]);
  });

  it("eth_getBlockReceipts: contains the store's receipt", async () => {
    const receipts = await viem.getBlockReceipts({ blockNumber: s.secondStore.blockNumber });
    const single = await viem.getTransactionReceipt({ hash: s.secondStore.hash });
    expect(receipts).toEqual([single]);
  });

  it("eth_estimateGas: above 21000 and growing with the work", async () => {
    const small = await viem.estimateGas({ account: s.sender, to: s.address, data: burnInput(1n) });
    const large = await viem.estimateGas({ account: s.sender, to: s.address, data: burnInput(64n) });
    expect(small).toBeGreaterThan(21_000n);
    expect(large).toBeGreaterThan(small);
  });

  it("eth_call: reads stored() and balances() per block", async () => {
    const stored = await viem.readContract({ address: s.address, abi: s.probe.abi, functionName: "stored" });
    const earlier = await viem.readContract({
      address: s.address,
      abi: s.probe.abi,
      functionName: "balances",
      args: [s.sender],
      blockNumber: s.firstStore.blockNumber,
    });
    expect(stored).toBe(s.secondStore.value);
    expect(earlier).toBe(s.firstStore.value);
  });

  it("eth_getProof: the account and the storage value", async () => {
    const proof = await viem.getProof({ address: s.address, storageKeys: [STORED_SLOT], blockNumber: s.firstStore.blockNumber });
    expect(proof.address).toBe(s.address);
    expect(proof.storageProof.map((p) => [p.key, p.value])).toEqual([[STORED_SLOT, s.firstStore.value]]);
    const code = await viem.getCode({ address: s.address });
    expect(proof.codeHash).toBe(keccak256(code ?? "0x"));
  });
});

describe("native path forwards the node's result byte for byte", () => {
  for (const c of cases) {
    it(c.title, async () => {
      const method = table.byRpc(c.rpc)?.jsonrpcMethod;
      const body = { jsonrpc: "2.0", id: 7, method, params: c.params() };
      const [direct, viaNodegate] = await Promise.all([postJson(anvil.url, body), postJson(ng.rpcUrl, body)]);
      expect(viaNodegate.status).toBe(200);
      expect(resultText(viaNodegate.text)).toBe(resultText(direct.text));
    });
  }
});
