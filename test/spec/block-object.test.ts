/**
 * The block object, row by row, and the uncle block object: each field's
 * form in the native answer and the same value in the typed answer. Blocks
 * come from a real Anvil; what Anvil cannot produce (uncles, a pending block
 * with the spec's nulls, a post-merge geth block without totalDifficulty)
 * comes from recorded answers on a second network, "recorded".
 */
import { create, type DescMethod, type Message, type MessageInitShape } from "@bufbuild/protobuf";
import { encodeFunctionData, type Hex, hexToBytes, keccak256, toHex, toRlp } from "viem";
import { afterAll, beforeAll, expect } from "vitest";
import { type Block, BlockSchema } from "../../gen/nodegate/eth/v1/block_pb.js";
import {
  EthService,
  GetUncleByBlockHashAndIndexRequestSchema,
  type GetUncleByBlockHashAndIndexResponse,
  GetUncleByBlockNumberAndIndexRequestSchema,
  type GetUncleByBlockNumberAndIndexResponse,
} from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { BlockTag, type BlockIdSchema } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type FixtureUpstream, loadFixture, startFixtureUpstream } from "../support/fixture-upstream.js";
import { deployProbeScenario, type ProbeScenario } from "../support/probe-scenario.js";
import { conformanceRecordings, type NetworkDoors, openLiveAndRecordedGateway, type SpecGateway } from "./harness/gateway.js";
import { expectData, expectQuantity, expectTypedCarries, typedJson } from "./harness/json-forms.js";
import { nodeRpc } from "./harness/node-rpc.js";
import { specRule } from "./harness/spec-rule.js";
import { hex, u256 } from "./harness/typed-values.js";

const m = EthService.method;
/** Block 0x768965 of Ethereum mainnet, which has one uncle (test/fixtures/mainnet-uncles.json). */
const UNCLED_BLOCK = 0x768965n;
/** A post-merge block as geth answers it, without totalDifficulty (execution-apis get-block-prague-fork). */
const GETH_BLOCK = 0x2dn;
/** keccak256(rlp([])): sha3Uncles of a block without uncles. */
const EMPTY_UNCLES_HASH = keccak256(toRlp([]));

type BlockIdInit = MessageInitShape<typeof BlockIdSchema>;
const atNumber = (n: bigint): BlockIdInit => ({ kind: { case: "number", value: n } });
const atPending: BlockIdInit = { kind: { case: "tag", value: BlockTag.PENDING } };

let anvil: AnvilNode;
let fixtures: FixtureUpstream;
let s: ProbeScenario;
let g: SpecGateway;
let recorded: NetworkDoors;
/** A block Anvil mined with two transactions in it. */
let twoTxBlock: bigint;

const anvilRpc = (method: string, params: unknown[]): Promise<unknown> => nodeRpc(anvil.url, method, params);

beforeAll(async () => {
  anvil = await startAnvil();
  s = await deployProbeScenario(anvil.url);
  // Two stores in one block, so the block's gas is a sum.
  await anvilRpc("evm_setAutomine", [false]);
  const account = (await anvilRpc("eth_accounts", []) as Hex[])[1] as Hex;
  for (const value of [1n, 2n]) {
    const data = encodeFunctionData({ abi: s.probe.abi, functionName: "store", args: [value, "0x"] });
    await anvilRpc("eth_sendTransaction", [{ from: account, to: s.address, data, gas: "0x20000" }]);
  }
  await anvilRpc("evm_mine", []);
  await anvilRpc("evm_setAutomine", [true]);
  twoTxBlock = BigInt((await anvilRpc("eth_blockNumber", [])) as string);

  fixtures = await startFixtureUpstream([
    ...loadFixture("mainnet-uncles.json").recordings,
    ...loadFixture("spec-shapes.json").recordings,
    ...conformanceRecordings(["tests/eth_getBlockByNumber/get-block-prague-fork.io"]),
  ]);
  g = await openLiveAndRecordedGateway(anvil.url, fixtures.url);
  recorded = g.on("recorded");
});

afterAll(async () => {
  await g?.close();
  await fixtures?.close();
  await anvil?.stop();
});

interface BothBlocks {
  native: Record<string, unknown> & { transactions?: unknown[] };
  typed: Block;
}

/** A block by number through the native and typed doors of a network. */
async function blockByNumber(doors: NetworkDoors, block: BlockIdInit, param: string, full: boolean): Promise<BothBlocks> {
  const native = await doors.http.result("eth_getBlockByNumber", [param, full]);
  const typed = await doors.eth.call(m.getBlockByNumber, { block, fullTransactions: full });
  expect(native).not.toBeNull();
  return { native, typed: typed.block as Block };
}

const mined = (full = true) => blockByNumber(g, atNumber(twoTxBlock), toHex(twoTxBlock), full);
const pending = (full = true) => blockByNumber(recorded, atPending, "pending", full);

/** The row's checks on a mined block, then null on the pending block when the spec says so. */
async function row(key: string, check: (b: BothBlocks) => void | Promise<void>, nullWhenPending = false): Promise<void> {
  const b = await mined();
  expectTypedCarries(BlockSchema, b.typed, key, b.native);
  await check(b);
  if (nullWhenPending) {
    const p = await pending();
    expect(p.native[key], `${key} of the pending block`).toBeNull();
    expectTypedCarries(BlockSchema, p.typed, key, p.native);
  }
}

specRule("block.difficulty", () =>
  row("difficulty", async ({ native, typed }) => {
    expect(u256(typed.difficulty)).toBe(expectQuantity(native.difficulty, "difficulty"));
    // A proof-of-work block's difficulty, far from zero.
    const old = await blockByNumber(recorded, atNumber(UNCLED_BLOCK), toHex(UNCLED_BLOCK), false);
    expect(u256(old.typed.difficulty)).toBe(expectQuantity(old.native.difficulty, "difficulty"));
    expect(u256(old.typed.difficulty)).toBeGreaterThan(10n ** 15n);
  }),
);

specRule("block.extraData", () =>
  row("extraData", async ({ native, typed }) => {
    expect(hex(typed.extraData)).toBe(expectData(native.extraData, "extraData"));
    const old = await blockByNumber(recorded, atNumber(UNCLED_BLOCK), toHex(UNCLED_BLOCK), false);
    expect(old.native.extraData).not.toBe("0x");
    expect(hex(old.typed.extraData)).toBe(expectData(old.native.extraData, "extraData"));
  }),
);

specRule("block.gasLimit", () =>
  row("gasLimit", ({ native, typed }) => {
    expect(typed.gasLimit).toBe(expectQuantity(native.gasLimit, "gasLimit"));
    expect(typed.gasLimit).toBeGreaterThan(typed.gasUsed ?? 0n);
  }),
);

specRule("block.gasUsed", () =>
  row("gasUsed", async ({ native, typed }) => {
    const receipts = (await g.http.result("eth_getBlockReceipts", [toHex(twoTxBlock)])) as { gasUsed: string }[];
    expect(receipts).toHaveLength(2);
    const sum = receipts.reduce((n, r) => n + BigInt(r.gasUsed), 0n);
    expect(expectQuantity(native.gasUsed, "gasUsed")).toBe(sum);
    expect(typed.gasUsed).toBe(sum);
  }),
);

specRule("block.hash", () =>
  row(
    "hash",
    async ({ native, typed }) => {
      expect(hex(typed.hash)).toBe(expectData(native.hash, "hash", 32));
      const byHash = await g.eth.call(m.getBlockByHash, { blockHash: typed.hash as Uint8Array });
      expect(byHash.block?.number).toBe(twoTxBlock);
    },
    true,
  ),
);

specRule("block.logsBloom", () =>
  row(
    "logsBloom",
    async ({ native, typed }) => {
      expect(hex(typed.logsBloom)).toBe(expectData(native.logsBloom, "logsBloom", 256));
      // A block with a Stored log has bits set in its bloom.
      const withLog = await blockByNumber(g, atNumber(s.firstStore.blockNumber), toHex(s.firstStore.blockNumber), false);
      expect(BigInt(expectData(withLog.native.logsBloom, "logsBloom", 256))).toBeGreaterThan(0n);
    },
    true,
  ),
);

specRule("block.miner", () => row("miner", ({ native, typed }) => expect(hex(typed.miner)).toBe(expectData(native.miner, "miner", 20))));

specRule("block.mixHash", () =>
  row("mixHash", async ({ native, typed }) => {
    expect(hex(typed.mixHash)).toBe(expectData(native.mixHash, "mixHash", 32));
    const old = await blockByNumber(recorded, atNumber(UNCLED_BLOCK), toHex(UNCLED_BLOCK), false);
    expect(hex(old.typed.mixHash)).toBe(expectData(old.native.mixHash, "mixHash", 32));
  }),
);

specRule("block.nonce", () =>
  row(
    "nonce",
    async ({ native, typed }) => {
      expect(hex(typed.nonce)).toBe(expectData(native.nonce, "nonce", 8));
      // A proof-of-work nonce keeps its 8 bytes, leading zeros and all.
      const old = await blockByNumber(recorded, atNumber(UNCLED_BLOCK), toHex(UNCLED_BLOCK), false);
      expect(typed.nonce).toHaveLength(8);
      expect(hex(old.typed.nonce)).toBe(expectData(old.native.nonce, "nonce", 8));
    },
    true,
  ),
);

specRule("block.number", () =>
  row(
    "number",
    ({ native, typed }) => {
      expect(expectQuantity(native.number, "number")).toBe(twoTxBlock);
      expect(typed.number).toBe(twoTxBlock);
    },
    true,
  ),
);

specRule("block.parentHash", () =>
  row("parentHash", async ({ native, typed }) => {
    const parent = await blockByNumber(g, atNumber(twoTxBlock - 1n), toHex(twoTxBlock - 1n), false);
    expect(expectData(native.parentHash, "parentHash", 32)).toBe(parent.native.hash);
    expect(hex(typed.parentHash)).toBe(hex(parent.typed.hash));
  }),
);

specRule("block.receiptsRoot", () =>
  row("receiptsRoot", ({ native, typed }) => expect(hex(typed.receiptsRoot)).toBe(expectData(native.receiptsRoot, "receiptsRoot", 32))),
);

specRule("block.sha3Uncles", () =>
  row("sha3Uncles", async ({ native, typed }) => {
    expect(expectData(native.sha3Uncles, "sha3Uncles", 32)).toBe(EMPTY_UNCLES_HASH);
    expect(hex(typed.sha3Uncles)).toBe(EMPTY_UNCLES_HASH);
    const old = await blockByNumber(recorded, atNumber(UNCLED_BLOCK), toHex(UNCLED_BLOCK), false);
    expect(hex(old.typed.sha3Uncles)).toBe(expectData(old.native.sha3Uncles, "sha3Uncles", 32));
    expect(old.native.sha3Uncles).not.toBe(EMPTY_UNCLES_HASH);
  }),
);

specRule("block.size", () =>
  row("size", ({ native, typed }) => {
    expect(typed.size).toBe(expectQuantity(native.size, "size"));
    expect(typed.size).toBeGreaterThan(500n);
  }),
);

specRule("block.stateRoot", () =>
  row("stateRoot", ({ native, typed }) => expect(hex(typed.stateRoot)).toBe(expectData(native.stateRoot, "stateRoot", 32))),
);

specRule("block.timestamp", () =>
  row("timestamp", async ({ native, typed }) => {
    const parent = await blockByNumber(g, atNumber(twoTxBlock - 1n), toHex(twoTxBlock - 1n), false);
    expect(typed.timestamp).toBe(expectQuantity(native.timestamp, "timestamp"));
    expect(typed.timestamp).toBeGreaterThanOrEqual(parent.typed.timestamp ?? 0n);
    expect(typed.timestamp).toBeGreaterThan(1_500_000_000n); // Unix seconds, not milliseconds or a height
    expect(typed.timestamp).toBeLessThan(10_000_000_000n);
  }),
);

specRule("block.totalDifficulty", () =>
  row("totalDifficulty", async ({ native, typed }) => {
    expect(u256(typed.totalDifficulty)).toBe(expectQuantity(native.totalDifficulty, "totalDifficulty"));
    const old = await blockByNumber(recorded, atNumber(UNCLED_BLOCK), toHex(UNCLED_BLOCK), false);
    expect(u256(old.typed.totalDifficulty)).toBeGreaterThan(u256(old.typed.difficulty));
    // geth after the merge leaves it out: no key natively, the typed field unset.
    const merged = await blockByNumber(recorded, atNumber(GETH_BLOCK), toHex(GETH_BLOCK), false);
    expect(merged.native).not.toHaveProperty("totalDifficulty");
    expectTypedCarries(BlockSchema, merged.typed, "totalDifficulty", merged.native);
    expect(typedJson(BlockSchema, merged.typed)).toEqual(merged.native);
  }),
);

specRule("block.transactions", async () => {
  const full = await mined(true);
  const hashes = await mined(false);
  expectTypedCarries(BlockSchema, full.typed, "transactions", full.native);
  expectTypedCarries(BlockSchema, hashes.typed, "transactions", hashes.native);
  const objects = full.native.transactions as { hash: string; blockNumber: string }[];
  expect(objects).toHaveLength(2);
  expect(objects.map((t) => t.blockNumber)).toEqual([toHex(twoTxBlock), toHex(twoTxBlock)]);
  expect(hashes.native.transactions).toEqual(objects.map((t) => t.hash));
  for (const h of hashes.native.transactions as unknown[]) expectData(h, "transaction hash", 32);
  expect(full.typed.transactions?.full.map((t) => hex(t.hash))).toEqual(objects.map((t) => t.hash));
  expect(full.typed.transactions?.hashes).toEqual([]);
  expect(hashes.typed.transactions?.hashes.map((h) => hex(h))).toEqual(objects.map((t) => t.hash));
  expect(hashes.typed.transactions?.full).toEqual([]);
});

specRule("block.transactionsRoot", () =>
  row("transactionsRoot", ({ native, typed }) => {
    expect(hex(typed.transactionsRoot)).toBe(expectData(native.transactionsRoot, "transactionsRoot", 32));
  }),
);

specRule("block.uncles", () =>
  row("uncles", async ({ native, typed }) => {
    expect(native.uncles).toEqual([]);
    expect(typed.uncles).toEqual([]);
    const old = await blockByNumber(recorded, atNumber(UNCLED_BLOCK), toHex(UNCLED_BLOCK), false);
    expectTypedCarries(BlockSchema, old.typed, "uncles", old.native);
    const uncle = await recorded.http.result("eth_getUncleByBlockNumberAndIndex", [toHex(UNCLED_BLOCK), "0x0"]);
    expect(old.native.uncles).toEqual([uncle.hash]);
    expect(old.typed.uncles.map((u) => hex(u))).toEqual([expectData(uncle.hash, "uncle hash", 32)]);
  }),
);

/** An uncle through all three doors of the recorded network; WebSocket and HTTP must answer the same. */
async function uncleOn(rpc: DescMethod, params: unknown[], request: Message): Promise<{ native: Record<string, unknown>; typed: Block }> {
  const method = rpc === m.getUncleByBlockHashAndIndex ? "eth_getUncleByBlockHashAndIndex" : "eth_getUncleByBlockNumberAndIndex";
  const native = await recorded.http.result(method, params);
  expect(await recorded.ws.result(method, params)).toEqual(native);
  const typed = (await recorded.eth.call(rpc, request)) as GetUncleByBlockNumberAndIndexResponse | GetUncleByBlockHashAndIndexResponse;
  expect(native).not.toBeNull();
  return { native, typed: typed.uncle as Block };
}

const minedUncle = () =>
  uncleOn(
    m.getUncleByBlockNumberAndIndex,
    [toHex(UNCLED_BLOCK), "0x0"],
    create(GetUncleByBlockNumberAndIndexRequestSchema, { block: atNumber(UNCLED_BLOCK), index: 0n }),
  );
const pendingUncle = () =>
  uncleOn(m.getUncleByBlockNumberAndIndex, ["pending", "0x0"], create(GetUncleByBlockNumberAndIndexRequestSchema, { block: atPending, index: 0n }));

specRule("uncle.fields", async () => {
  const { native, typed } = await minedUncle();
  const block = await recorded.http.result("eth_getBlockByNumber", [toHex(UNCLED_BLOCK), false]);
  expect(Object.keys(native).sort()).toEqual(Object.keys(block).filter((k) => k !== "transactions").sort());
  expect(native).not.toHaveProperty("transactions");
  expect(typed.transactions).toBeUndefined();
  expect(typedJson(BlockSchema, typed)).toEqual(native);
  // The same uncle by the including block's hash.
  const byHash = await uncleOn(
    m.getUncleByBlockHashAndIndex,
    [block.hash, "0x0"],
    create(GetUncleByBlockHashAndIndexRequestSchema, { blockHash: hexToBytes(block.hash), index: 0n }),
  );
  expect(byHash.native).toEqual(native);
});

specRule("uncle.totalDifficulty-null", async () => {
  const { native, typed } = await pendingUncle();
  expect(native.totalDifficulty).toBeNull();
  expectTypedCarries(BlockSchema, typed, "totalDifficulty", native);
  const known = await minedUncle();
  expect(u256(known.typed.totalDifficulty)).toBe(expectQuantity(known.native.totalDifficulty, "totalDifficulty"));
});

specRule("uncle.pending-nulls", async () => {
  const { native, typed } = await pendingUncle();
  for (const key of ["number", "hash", "nonce", "logsBloom"]) {
    expect(native[key], key).toBeNull();
    expectTypedCarries(BlockSchema, typed, key, native);
  }
  expect(typedJson(BlockSchema, typed)).toEqual(native);
});

specRule("uncle.mixHash", async () => {
  const { native, typed } = await minedUncle();
  expectTypedCarries(BlockSchema, typed, "mixHash", native);
  expect(hex(typed.mixHash)).toBe(expectData(native.mixHash, "mixHash", 32));
});
