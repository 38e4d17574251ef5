/**
 * The spec's encoding conventions for eth_ methods: hex quantities, hex data
 * of fixed lengths, mixed case in requests, and the block parameter, on the
 * native and typed doors against a real Anvil.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { bytesToHex, encodeFunctionData, getAddress, type Hex, hexToBytes, toHex } from "viem";
import { afterAll, beforeAll, expect } from "vitest";
import { BlockSchema } from "../../gen/nodegate/eth/v1/block_pb.js";
import { EthService, GetTransactionByBlockNumberAndIndexRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { BlockTag, type BlockIdSchema } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import { deployProbeScenario, type ProbeScenario, STORED_SLOT } from "../support/probe-scenario.js";
import { Code } from "./harness/doors.js";
import { openSpecGateway, type SpecGateway } from "./harness/gateway.js";
import { expectData, expectQuantity, typedJson } from "./harness/json-forms.js";
import { nodeRpc } from "./harness/node-rpc.js";
import { specRule } from "./harness/spec-rule.js";

const m = EthService.method;
const table = createMethodTable();

let anvil: AnvilNode;
let s: ProbeScenario;
let g: SpecGateway;
/** A block whose number has hex letters in it (0xa or later). */
let letteredBlock: bigint;

type BlockIdInit = MessageInitShape<typeof BlockIdSchema>;
const atNumber = (n: bigint): BlockIdInit => ({ kind: { case: "number", value: n } });
const atTag = (tag: BlockTag): BlockIdInit => ({ kind: { case: "tag", value: tag } });

beforeAll(async () => {
  anvil = await startAnvil();
  s = await deployProbeScenario(anvil.url);
  // Empty blocks up to 0x10, so some block numbers have hex letters.
  await nodeRpc(anvil.url, "anvil_mine", ["0x10"]);
  letteredBlock = 0xan;
  g = await openSpecGateway({ upstreamUrl: anvil.url });
});

afterAll(async () => {
  await g?.close();
  await anvil?.stop();
});

/** Upper-cases the hex digits of a 0x string, keeping the 0x prefix. */
const shout = (hex: string): string => `0x${hex.slice(2).toUpperCase()}`;

specRule("encoding.quantity", async () => {
  const block = await g.http.result("eth_getBlockByNumber", [toHex(s.firstStore.blockNumber), true]);
  for (const key of ["number", "gasLimit", "gasUsed", "size", "timestamp", "difficulty"]) expectQuantity(block[key], `block.${key}`);
  const tx = block.transactions[0];
  for (const key of ["gas", "nonce", "value", "transactionIndex", "blockNumber"]) expectQuantity(tx[key], `transaction.${key}`);

  const typed = await g.eth.call(m.getBlockByNumber, { block: atNumber(s.firstStore.blockNumber), fullTransactions: true });
  expect(typed.block?.number).toBe(BigInt(block.number));
  expect(typed.block?.gasLimit).toBe(BigInt(block.gasLimit));
  expect(typed.block?.transactions?.full[0]?.nonce).toBe(BigInt(tx.nonce));
  expect(typedJson(BlockSchema, typed.block as never)).toEqual(block);

  // A quantity param must be 0x-prefixed hex without leading zeros.
  const at = toHex(s.firstStore.blockNumber);
  for (const [index, why] of [
    ["0", 'invalid hex quantity "0": want 0x followed by hex digits'],
    [0, "want a hex quantity string, got the number 0"],
    ["0x00", 'invalid hex quantity "0x00": leading zero digits'],
  ] as const) {
    const reply = await g.http.call("eth_getTransactionByBlockNumberAndIndex", [at, index]);
    expect(reply.error, String(index)).toEqual({ code: -32602, message: `invalid argument 1 (index): ${why}` });
  }
});

specRule("encoding.mixed-case", async () => {
  const checksummed = getAddress(s.address); // the EIP-55 mixed-case form
  expect(checksummed).not.toBe(checksummed.toLowerCase());
  const upperHashes = await g.http.post({ jsonrpc: "2.0", id: 1, method: "eth_getBlockByHash", params: [shout(s.firstStore.blockHash), false] });
  const upperNumber = await g.http.post({ jsonrpc: "2.0", id: 2, method: "eth_getBlockByNumber", params: [shout(toHex(letteredBlock)), false] });
  const storage = await g.http.post({ jsonrpc: "2.0", id: 3, method: "eth_getStorageAt", params: [checksummed, shout(STORED_SLOT), "latest"] });
  const senderTopic = shout(`0x${s.sender.slice(2).toLowerCase().padStart(64, "0")}`);
  const filter = { address: checksummed, fromBlock: "0x0", topics: [null, senderTopic] };
  const topics = await g.http.post({ jsonrpc: "2.0", id: 4, method: "eth_getLogs", params: [filter] });

  expect(upperHashes.json.result.hash).toBe(s.firstStore.blockHash);
  expect(upperNumber.json.result.number).toBe("0xa");
  expect(BigInt(storage.json.result)).toBe(s.secondStore.value);
  expect(topics.json.result.map((l: { transactionHash: string }) => l.transactionHash)).toEqual([s.firstStore.hash, s.secondStore.hash]);
  // Answers are canonical: no upper-case hex digit anywhere.
  for (const reply of [upperHashes, upperNumber, storage, topics]) expect(reply.text).not.toMatch(/0x[0-9a-f]*[A-F]/);

  // Typed callers send bytes and integers; what comes back writes out in lowercase, equal to the native answer.
  const typed = await g.eth.call(m.getBlockByHash, { blockHash: hexToBytes(s.firstStore.blockHash), fullTransactions: false });
  const text = table.byRpc(m.getBlockByHash)?.result.encode(typed) ?? "";
  expect(text).not.toMatch(/0x[0-9a-f]*[A-F]/);
  expect(JSON.parse(text)).toEqual(upperHashes.json.result);
  const typedStorage = await g.eth.call(m.getStorageAt, { address: hexToBytes(checksummed), position: hexToBytes(STORED_SLOT) });
  expect(table.byRpc(m.getStorageAt)?.result.encode(typedStorage)).toBe(`"${storage.json.result}"`);
});

specRule("encoding.data-lengths", async () => {
  const shortAddress = `0x${"11".repeat(19)}`;
  const shortHash = `0x${"22".repeat(31)}`;
  const longTopic = `0x${"33".repeat(33)}`;
  expect((await g.http.call("eth_getStorageAt", [shortAddress, "0x0", "latest"])).error).toEqual({
    code: -32602,
    message: `invalid argument 0 (address): invalid hex data "${shortAddress}": want 20 bytes, got 19`,
  });
  expect((await g.http.call("eth_getBlockByHash", [shortHash, false])).error).toEqual({
    code: -32602,
    message: `invalid argument 0 (blockHash): invalid hex data "${shortHash}": want 32 bytes, got 31`,
  });
  expect((await g.http.call("eth_getLogs", [{ topics: [longTopic] }])).error).toEqual({
    code: -32602,
    message: `invalid argument 0 (filter.topics[0]): invalid hex data "${longTopic}": want 32 bytes, got 33`,
  });
  const longHash = await g.http.call("eth_getTransactionReceipt", [`0x${"44".repeat(33)}`]);
  expect(longHash.error?.message).toMatch(/^invalid argument 0 \(transactionHash\): .*want 32 bytes, got 33$/);

  const typedAddress = await g.eth.fail(m.getStorageAt, { address: hexToBytes(shortAddress as Hex) });
  expect(typedAddress.code).toBe(Code.InvalidArgument);
  expect(typedAddress.error?.code).toBe(-32602);
  expect(typedAddress.error?.message).toMatch(/address.*want 20 bytes, got 19/);
  const typedHash = await g.eth.fail(m.getBlockByHash, { blockHash: hexToBytes(shortHash as Hex) });
  expect(typedHash.code).toBe(Code.InvalidArgument);
  expect(typedHash.error?.message).toMatch(/blockHash.*want 32 bytes, got 31/);

  // In answers: a 256-byte bloom, an 8-byte nonce, 32-byte hashes, 20-byte addresses.
  const block = await g.http.result("eth_getBlockByNumber", [toHex(s.firstStore.blockNumber), true]);
  expectData(block.logsBloom, "logsBloom", 256);
  expectData(block.nonce, "nonce", 8);
  expectData(block.hash, "hash", 32);
  expectData(block.transactions[0].from, "from", 20);
});

specRule("encoding.block-parameter", async () => {
  // Anvil puts safe 32 and finalized 64 blocks below the head: with 100 more blocks every tag names its own block.
  await nodeRpc(anvil.url, "anvil_mine", ["0x64"]);
  const latest = BigInt(await g.http.result("eth_blockNumber", []));
  const tags: [string, BlockTag][] = [
    ["latest", BlockTag.LATEST],
    ["earliest", BlockTag.EARLIEST],
    ["pending", BlockTag.PENDING],
    ["safe", BlockTag.SAFE],
    ["finalized", BlockTag.FINALIZED],
  ];
  // The typed enum has exactly the five tags.
  expect(Object.values(BlockTag).filter((v) => typeof v === "number" && v !== BlockTag.UNSPECIFIED)).toHaveLength(5);
  for (const [name, tag] of tags) {
    const native = await g.http.result("eth_getBlockByNumber", [name, false]);
    expect(native, name).not.toBeNull();
    const typed = await g.eth.call(m.getBlockByNumber, { block: atTag(tag) });
    expect(bytesToHex(typed.block?.parentHash ?? new Uint8Array()), name).toBe(native.parentHash);
  }
  const numbers = new Map<string, bigint>();
  for (const [name, tag] of tags) {
    const native = BigInt((await g.http.result("eth_getBlockByNumber", [name, false])).number);
    const typed = (await g.eth.call(m.getBlockByNumber, { block: atTag(tag) })).block?.number;
    expect(typed, name).toBe(native);
    numbers.set(name, native);
  }
  expect(Object.fromEntries(numbers)).toEqual({ latest, earliest: 0n, pending: latest + 1n, safe: latest - 32n, finalized: latest - 64n });
  expect(BigInt((await g.http.result("eth_getBlockByNumber", [toHex(s.deploy.blockNumber), false])).number)).toBe(s.deploy.blockNumber);
  for (const bad of ["newest", "LATEST", "Latest"]) {
    expect((await g.http.call("eth_getBlockByNumber", [bad, false])).error, bad).toEqual({
      code: -32602,
      message: `invalid argument 0 (block): want a block number or tag, got "${bad}"`,
    });
  }
  const unsetTag = await g.eth.fail(m.getBlockByNumber, { block: atTag(BlockTag.UNSPECIFIED) });
  expect(unsetTag.code).toBe(Code.InvalidArgument);
});

specRule("encoding.block-parameter-required", async () => {
  for (const [method, params] of [
    ["eth_getBlockByNumber", []],
    ["eth_getUncleByBlockNumberAndIndex", []],
    ["eth_getTransactionByBlockNumberAndIndex", []],
    ["eth_getBlockReceipts", []],
  ] as const) {
    expect((await g.http.call(method, params)).error, method).toEqual({ code: -32602, message: "missing value for required argument 0 (block)" });
  }
  // A required param sent as null is a value of the wrong kind, named as such (nodes refuse it too).
  expect((await g.http.call("eth_getBlockByNumber", [null, false])).error).toEqual({
    code: -32602,
    message: "invalid argument 0 (block): want a block number or tag, got null",
  });
  // Left out where every node defaults it to latest: the latest state.
  expect(BigInt(await g.http.result("eth_getStorageAt", [s.address, STORED_SLOT]))).toBe(s.secondStore.value);
  const stored = await g.http.result("eth_call", [{ to: s.address, data: encodeFunctionData({ abi: s.probe.abi, functionName: "stored" }) }]);
  expect(BigInt(stored)).toBe(s.secondStore.value);

  // A typed request that leaves the block unset asks for latest.
  const latest = await g.http.result("eth_getBlockByNumber", ["latest", false]);
  const typed = await g.eth.call(m.getBlockByNumber, {});
  expect(typed.block?.number).toBe(BigInt(latest.number));
  const tx = await g.eth.call(
    m.getTransactionByBlockNumberAndIndex,
    create(GetTransactionByBlockNumberAndIndexRequestSchema, { index: 0n }),
  );
  expect(tx.transaction).toBeUndefined(); // the latest block is an empty one Anvil mined
  const receipts = await g.eth.call(m.getBlockReceipts, {});
  expect(table.byRpc(m.getBlockReceipts)?.result.encode(receipts)).toBe("[]");
});
