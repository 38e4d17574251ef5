/**
 * The spec's Endpoints table, row by row: each method's params in order,
 * which are required, what it returns and when it returns null; that every
 * method is served over POST and typed, and over WebSocket (marked or not);
 * and the rules for eth_getStorageAt. Ethereum methods run against a real
 * Anvil behind a recorder; uncles come from a recorded mainnet block, the
 * rollup method from the Starknet fixture node.
 */
import type { DescMessage, DescMethod, MessageInitShape } from "@bufbuild/protobuf";
import { concat, encodeFunctionData, type Hex, hexToBytes, keccak256, pad, toHex } from "viem";
import { afterAll, beforeAll, expect } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { BlockTag } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { StarknetService } from "../../gen/nodegate/starknet/v1/starknet_service_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import { conformanceCases } from "../support/conformance.js";
import { type FixtureUpstream, loadFixture, startFixtureUpstream } from "../support/fixture-upstream.js";
import { deployProbeScenario, type ProbeScenario, STORED_SLOT } from "../support/probe-scenario.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";
import { FIXTURE_BLOCK, type StarknetFixtureUpstream, startStarknetFixtureUpstream } from "../support/starknet-fixture-upstream.js";
import { Code, type TypedDoor } from "./harness/doors.js";
import { type NetworkDoors, openSpecGateway, type SpecGateway } from "./harness/gateway.js";
import { expectData, expectQuantity } from "./harness/json-forms.js";
import { specRule } from "./harness/spec-rule.js";
import { hex } from "./harness/typed-values.js";

const m = EthService.method;
const table = createMethodTable();
const UNKNOWN_HASH: Hex = `0x${"5a".repeat(32)}`;
const UNCLED_BLOCK = 0x768965n;
const UNCLED_BLOCK_HASH: Hex = "0xc48fb64230a82f65a08e7280bd8745e7fea87bc7c206309dee32209fe9a985f7";
const ROLLUP = "starknet_getTransactionByBlockIdAndIndex";
const atNumber = (n: bigint) => ({ kind: { case: "number" as const, value: n } });
const atTag = (tag: BlockTag) => ({ kind: { case: "tag" as const, value: tag } });
/** The -32602 a call gets without a required param. */
const missing = (index: number, name: string) => ({ code: -32602, message: `missing value for required argument ${index} (${name})` });

let anvil: AnvilNode;
let recorder: ProgrammableUpstream;
let fixtures: FixtureUpstream;
let starknetNode: StarknetFixtureUpstream;
let s: ProbeScenario;
let g: SpecGateway;
let recorded: NetworkDoors;
let starknet: NetworkDoors;

beforeAll(async () => {
  anvil = await startAnvil();
  s = await deployProbeScenario(anvil.url);
  [recorder, fixtures, starknetNode] = await Promise.all([
    startProgrammableUpstream(() => ({ forward: anvil.url })),
    startFixtureUpstream(loadFixture("mainnet-uncles.json").recordings),
    startStarknetFixtureUpstream(),
  ]);
  g = await openSpecGateway({
    upstreamUrl: recorder.url,
    networks: [
      { name: "ethereum", family: "eth", upstreams: [{ label: "anvil", url: recorder.url }] },
      { name: "recorded", family: "eth", upstreams: [{ label: "fixtures", url: fixtures.url }] },
      { name: "starknet", family: "starknet", upstreams: [{ label: "fixtures", url: starknetNode.url }] },
    ],
  });
  recorded = g.on("recorded");
  starknet = g.on("starknet");
});

afterAll(async () => {
  await g?.close();
  await Promise.all([recorder?.close(), fixtures?.close(), starknetNode?.close()]);
  await anvil?.stop();
});

/** One valid call of a listed method, natively and typed, on the network that serves it. */
interface MethodCall {
  method: string;
  /** Marked WS in the spec. */
  ws: boolean;
  /** The JSON-RPC params. */
  params: () => unknown;
  rpc: DescMethod;
  /** The same call as a typed request. */
  request: () => MessageInitShape<DescMessage>;
  /** The network that serves it (default: Ethereum on Anvil). */
  doors?: () => NetworkDoors;
}

const burn3 = () => encodeFunctionData({ abi: s.probe.abi, functionName: "burn", args: [3n] });
const storedCall = () => encodeFunctionData({ abi: s.probe.abi, functionName: "stored" });
const firstStoreBlock = () => atNumber(s.firstStore.blockNumber);

const LISTED: MethodCall[] = [
  {
    method: "eth_getStorageAt",
    ws: false,
    params: () => [s.address, STORED_SLOT, "latest"],
    rpc: m.getStorageAt,
    request: () => ({ address: hexToBytes(s.address), position: hexToBytes(STORED_SLOT) }),
  },
  {
    method: "eth_getLogs",
    ws: false,
    params: () => [{ blockHash: s.firstStore.blockHash }],
    rpc: m.getLogs,
    request: () => ({ filter: { blockHash: hexToBytes(s.firstStore.blockHash) } }),
  },
  {
    method: "eth_getBlockByHash",
    ws: false,
    params: () => [s.firstStore.blockHash, true],
    rpc: m.getBlockByHash,
    request: () => ({ blockHash: hexToBytes(s.firstStore.blockHash), fullTransactions: true }),
  },
  {
    method: "eth_getBlockByNumber",
    ws: false,
    params: () => [toHex(s.firstStore.blockNumber), false],
    rpc: m.getBlockByNumber,
    request: () => ({ block: firstStoreBlock() }),
  },
  {
    method: "eth_getUncleByBlockNumberAndIndex",
    ws: true,
    params: () => [toHex(UNCLED_BLOCK), "0x0"],
    rpc: m.getUncleByBlockNumberAndIndex,
    request: () => ({ block: atNumber(UNCLED_BLOCK), index: 0n }),
    doors: () => recorded,
  },
  {
    method: "eth_getUncleByBlockHashAndIndex",
    ws: true,
    params: () => [UNCLED_BLOCK_HASH, "0x0"],
    rpc: m.getUncleByBlockHashAndIndex,
    request: () => ({ blockHash: hexToBytes(UNCLED_BLOCK_HASH), index: 0n }),
    doors: () => recorded,
  },
  {
    method: "eth_getTransactionByBlockNumberAndIndex",
    ws: false,
    params: () => [toHex(s.firstStore.blockNumber), "0x0"],
    rpc: m.getTransactionByBlockNumberAndIndex,
    request: () => ({ block: firstStoreBlock(), index: 0n }),
  },
  {
    method: ROLLUP,
    ws: false,
    params: () => ({ block_id: { block_number: FIXTURE_BLOCK.number }, index: 0 }),
    rpc: StarknetService.method.getTransactionByBlockIdAndIndex,
    request: () => ({ blockId: { kind: { case: "blockNumber", value: BigInt(FIXTURE_BLOCK.number) } }, index: 0n }),
    doors: () => starknet,
  },
  {
    method: "eth_getTransactionReceipt",
    ws: true,
    params: () => [s.firstStore.hash],
    rpc: m.getTransactionReceipt,
    request: () => ({ transactionHash: hexToBytes(s.firstStore.hash) }),
  },
  {
    method: "eth_getBlockReceipts",
    ws: false,
    params: () => [toHex(s.firstStore.blockNumber)],
    rpc: m.getBlockReceipts,
    request: () => ({ block: firstStoreBlock() }),
  },
  {
    method: "eth_estimateGas",
    ws: true,
    params: () => [{ from: s.sender, to: s.address, data: burn3() }, "latest"],
    rpc: m.estimateGas,
    request: () => ({
      transaction: { from: hexToBytes(s.sender), to: hexToBytes(s.address), data: hexToBytes(burn3()) },
      block: atTag(BlockTag.LATEST),
    }),
  },
  {
    method: "eth_call",
    ws: false,
    params: () => [{ to: s.address, data: storedCall() }, "latest"],
    rpc: m.call,
    request: () => ({ transaction: { to: hexToBytes(s.address), data: hexToBytes(storedCall()) }, block: atTag(BlockTag.LATEST) }),
  },
  {
    method: "eth_getProof",
    ws: true,
    params: () => [s.address, [STORED_SLOT], "latest"],
    rpc: m.getProof,
    request: () => ({ address: hexToBytes(s.address), storageKeys: [hexToBytes(STORED_SLOT)] }),
  },
];

/** The doors of the network that serves a listed call, and its typed service there. */
function doorsOf(c: MethodCall): { doors: NetworkDoors; typed: TypedDoor } {
  const doors = c.doors?.() ?? g;
  return { doors, typed: c.rpc.parent === StarknetService ? doors.starknet : doors.eth };
}

/** The request text of a listed call, the same bytes on every door. */
const text = (c: MethodCall, id = 1): string => JSON.stringify({ jsonrpc: "2.0", id, method: c.method, params: c.params() });

specRule("endpoints.post", async () => {
  expect(LISTED).toHaveLength(13);
  for (const c of LISTED) {
    const { doors, typed: typedDoor } = doorsOf(c);
    const reply = await doors.http.post(text(c), { headers: { "content-type": "application/json" } });
    expect(reply.status, c.method).toBe(200);
    expect(reply.json.error, c.method).toBeUndefined();
    expect(reply.json.result, c.method).not.toBeNull();
    const typed = await typedDoor.call(c.rpc, c.request());
    // The typed answer, written back as JSON, is the node's answer.
    expect(JSON.parse(table.byRpc(c.rpc)?.result.encode(typed) ?? "null"), c.method).toEqual(reply.json.result);
  }
});

specRule("endpoints.ws-marked", async () => {
  const marked = LISTED.filter((c) => c.ws);
  expect(marked.map((c) => c.method)).toEqual([
    "eth_getUncleByBlockNumberAndIndex",
    "eth_getUncleByBlockHashAndIndex",
    "eth_getTransactionReceipt",
    "eth_estimateGas",
    "eth_getProof",
  ]);
  for (const c of marked) {
    const { doors } = doorsOf(c);
    const [overHttp, overWs] = [await doors.http.post(text(c, 5)), await doors.ws.send(text(c, 5))];
    expect(overWs, c.method).toBe(overHttp.text);
    expect(JSON.parse(overWs).result, c.method).not.toBeNull();
  }
});

specRule("endpoints.ws-unmarked", async () => {
  const unmarked = LISTED.filter((c) => !c.ws);
  expect(unmarked).toHaveLength(8);
  for (const c of unmarked) {
    const { doors } = doorsOf(c);
    const [overHttp, overWs] = [await doors.http.post(text(c, 6)), await doors.ws.send(text(c, 6))];
    expect(overWs, c.method).toBe(overHttp.text);
    expect(JSON.parse(overWs).result, c.method).not.toBeNull();
  }
});

specRule("endpoints.eth_getStorageAt", async () => {
  const at = toHex(s.firstStore.blockNumber);
  const value = await g.http.result("eth_getStorageAt", [s.address, "0x0", at]);
  expect(expectData(value, "value", 32)).toBe(pad(toHex(s.firstStore.value)));
  const typed = await g.eth.call(m.getStorageAt, { address: hexToBytes(s.address), position: new Uint8Array(), block: firstStoreBlock() });
  expect(typed.value).toHaveLength(32);
  expect(hex(typed.value)).toBe(value);
  // Positional, in the listed order: the address comes first.
  expect((await g.http.call("eth_getStorageAt", ["0x0", s.address, at])).error?.message).toMatch(/^invalid argument 0 \(address\)/);
  expect((await g.http.call("eth_getStorageAt", [s.address])).error).toEqual(missing(1, "position"));
  expect((await g.http.call("eth_getStorageAt", [])).error).toEqual(missing(0, "address"));
  // The keys execution-apis records geth refusing: the same code, and geth's words after where nodegate found it.
  const refused = conformanceCases().filter((c) => c.method === "eth_getStorageAt" && c.response.error !== undefined);
  expect(refused).toHaveLength(2);
  for (const c of refused) {
    const error = (await g.http.call("eth_getStorageAt", c.request.params as unknown[])).error;
    expect(error?.code, c.file).toBe(c.response.error?.code);
    expect(error?.message, c.file).toBe(`invalid argument 1 (position): ${c.response.error?.message}`);
  }
});

specRule("endpoints.eth_getLogs", async () => {
  const logs = await g.http.result("eth_getLogs", [{ blockHash: s.firstStore.blockHash }]);
  expect(logs.map((l: { transactionHash: string }) => l.transactionHash)).toEqual([s.firstStore.hash]);
  const none = await g.http.post({ jsonrpc: "2.0", id: 1, method: "eth_getLogs", params: [{ blockHash: s.deploy.blockHash }] });
  expect(none.text).toBe('{"jsonrpc":"2.0","id":1,"result":[]}');
  const typed = await g.eth.call(m.getLogs, { filter: { blockHash: hexToBytes(s.deploy.blockHash) } });
  expect(typed.logs).toEqual([]);
  expect((await g.http.call("eth_getLogs", [])).error).toEqual(missing(0, "filter"));
});

specRule("endpoints.eth_getBlockByHash", async () => {
  const full = await g.http.result("eth_getBlockByHash", [s.firstStore.blockHash, true]);
  const hashes = await g.http.result("eth_getBlockByHash", [s.firstStore.blockHash, false]);
  expect(full.transactions[0].hash).toBe(s.firstStore.hash);
  expect(hashes.transactions).toEqual([s.firstStore.hash]);
  expect(await g.http.result("eth_getBlockByHash", [UNKNOWN_HASH, true])).toBeNull();
  expect((await g.http.call("eth_getBlockByHash", [s.firstStore.blockHash])).error).toEqual(missing(1, "fullTransactions"));
  const notBoolean = await g.http.call("eth_getBlockByHash", [s.firstStore.blockHash, "true"]);
  expect(notBoolean.error?.message).toMatch(/^invalid argument 1 \(fullTransactions\): want a boolean/);
  const typed = await g.eth.call(m.getBlockByHash, { blockHash: hexToBytes(s.firstStore.blockHash), fullTransactions: true });
  expect(typed.block?.transactions?.full.map((t) => hex(t.hash))).toEqual([s.firstStore.hash]);
  const notFound = await g.eth.call(m.getBlockByHash, { blockHash: hexToBytes(UNKNOWN_HASH) });
  expect(notFound.block).toBeUndefined();
});

specRule("endpoints.eth_getBlockByNumber", async () => {
  const at = toHex(s.secondStore.blockNumber);
  expect((await g.http.result("eth_getBlockByNumber", [at, true])).transactions[0].hash).toBe(s.secondStore.hash);
  expect((await g.http.result("eth_getBlockByNumber", [at, false])).transactions).toEqual([s.secondStore.hash]);
  expect(await g.http.result("eth_getBlockByNumber", ["0xffffff", false])).toBeNull();
  expect((await g.http.call("eth_getBlockByNumber", [at])).error).toEqual(missing(1, "fullTransactions"));
  const typed = await g.eth.call(m.getBlockByNumber, { block: atNumber(s.secondStore.blockNumber), fullTransactions: false });
  expect(typed.block?.transactions?.hashes.map((h) => hex(h))).toEqual([s.secondStore.hash]);
  const future = await g.eth.call(m.getBlockByNumber, { block: atNumber(0xffffffn) });
  expect(future.block).toBeUndefined();
});

/** An uncle lookup's answer on HTTP and WebSocket (the same). */
async function uncleNative(method: string, params: unknown[]): Promise<unknown> {
  const overHttp = await recorded.http.result(method, params);
  expect(await recorded.ws.result(method, params)).toEqual(overHttp);
  return overHttp;
}

specRule("endpoints.eth_getUncleByBlockNumberAndIndex", async () => {
  const method = "eth_getUncleByBlockNumberAndIndex";
  const uncle = (await uncleNative(method, [toHex(UNCLED_BLOCK), "0x0"])) as { number: string };
  expect(BigInt(uncle.number)).toBe(UNCLED_BLOCK - 1n);
  expect(await uncleNative(method, [toHex(UNCLED_BLOCK), "0x1"])).toBeNull();
  const noIndex = await recorded.http.call(method, [toHex(UNCLED_BLOCK)]);
  expect(noIndex.error).toEqual(missing(1, "index"));
  expect((await recorded.ws.call(method, [toHex(UNCLED_BLOCK), 0])).error?.message).toMatch(/^invalid argument 1 \(index\): want a hex quantity/);
  const typed = await recorded.eth.call(m.getUncleByBlockNumberAndIndex, { block: atNumber(UNCLED_BLOCK), index: 0n });
  expect(typed.uncle?.number).toBe(UNCLED_BLOCK - 1n);
  const past = await recorded.eth.call(m.getUncleByBlockNumberAndIndex, { block: atNumber(UNCLED_BLOCK), index: 1n });
  expect(past.uncle).toBeUndefined();
});

specRule("endpoints.eth_getUncleByBlockHashAndIndex", async () => {
  const method = "eth_getUncleByBlockHashAndIndex";
  const uncle = (await uncleNative(method, [UNCLED_BLOCK_HASH, "0x0"])) as { number: string };
  expect(BigInt(uncle.number)).toBe(UNCLED_BLOCK - 1n);
  expect(await uncleNative(method, [UNCLED_BLOCK_HASH, "0x1"])).toBeNull();
  expect((await recorded.http.call(method, [toHex(UNCLED_BLOCK), "0x0"])).error?.message).toMatch(/^invalid argument 0 \(blockHash\)/);
  const typed = await recorded.eth.call(m.getUncleByBlockHashAndIndex, { blockHash: hexToBytes(UNCLED_BLOCK_HASH), index: 0n });
  expect(typed.uncle?.number).toBe(UNCLED_BLOCK - 1n);
  const past = await recorded.eth.call(m.getUncleByBlockHashAndIndex, { blockHash: hexToBytes(UNCLED_BLOCK_HASH), index: 1n });
  expect(past.uncle).toBeUndefined();
});

specRule("endpoints.eth_getTransactionByBlockNumberAndIndex", async () => {
  const at = toHex(s.anonymous.blockNumber);
  expect((await g.http.result("eth_getTransactionByBlockNumberAndIndex", [at, "0x0"])).hash).toBe(s.anonymous.hash);
  expect(await g.http.result("eth_getTransactionByBlockNumberAndIndex", [at, "0x1"])).toBeNull();
  expect((await g.http.call("eth_getTransactionByBlockNumberAndIndex", [at])).error).toEqual(missing(1, "index"));
  const typed = await g.eth.call(m.getTransactionByBlockNumberAndIndex, { block: atNumber(s.anonymous.blockNumber), index: 0n });
  expect(hex(typed.transaction?.hash)).toBe(s.anonymous.hash);
  const past = await g.eth.call(m.getTransactionByBlockNumberAndIndex, { block: atNumber(s.anonymous.blockNumber), index: 1n });
  expect(past.transaction).toBeUndefined();
});

specRule("endpoints.eth_getTransactionReceipt", async () => {
  for (const door of [g.http, g.ws]) {
    expect((await door.result("eth_getTransactionReceipt", [s.deploy.hash])).contractAddress).toBe(s.address);
    expect(await door.result("eth_getTransactionReceipt", [UNKNOWN_HASH])).toBeNull();
    expect((await door.call("eth_getTransactionReceipt", [])).error).toEqual(missing(0, "transactionHash"));
  }
  const typed = await g.eth.call(m.getTransactionReceipt, { transactionHash: hexToBytes(s.deploy.hash) });
  expect(hex(typed.receipt?.contractAddress)).toBe(s.address);
  const unknown = await g.eth.call(m.getTransactionReceipt, { transactionHash: hexToBytes(UNKNOWN_HASH) });
  expect(unknown.receipt).toBeUndefined();
});

specRule("endpoints.eth_getBlockReceipts", async () => {
  const n = s.secondStore.blockNumber;
  const expected = await g.http.result("eth_getBlockReceipts", [toHex(n)]);
  expect(expected.map((r: { transactionHash: string }) => r.transactionHash)).toEqual([s.secondStore.hash]);
  for (const form of [Number(n), String(n), s.secondStore.blockHash]) {
    expect(await g.http.result("eth_getBlockReceipts", [form]), String(form)).toEqual(expected);
  }
  // A decimal number goes to the node as hex.
  await g.http.result("eth_getBlockReceipts", [Number(n)]);
  expect(JSON.parse(recorder.requests.filter((r) => r.method === "eth_getBlockReceipts").at(-1)?.body ?? "{}").params).toEqual([toHex(n)]);
  for (const tag of ["latest", "earliest", "pending", "finalized", "safe"]) {
    expect(Array.isArray(await g.http.result("eth_getBlockReceipts", [tag])), tag).toBe(true);
  }
  expect(await g.http.result("eth_getBlockReceipts", ["0xffffff"])).toBeNull();
  expect((await g.http.call("eth_getBlockReceipts", ["0x"])).error?.code).toBe(-32602);
  // Found from outside: "0X" was refused (the spec accepts mixed-case hex, geth's hexutil reads it), and a JSON
  // number past 2^53 was quoted back as JSON.parse had rounded it, a number the caller never sent.
  expect(await g.http.result("eth_getBlockReceipts", [`0X${n.toString(16)}`])).toEqual(expected);
  const unsafe = await g.http.call("eth_getBlockReceipts", [2 ** 60 + 1]);
  expect(unsafe.error).toEqual({ code: -32602, message: "invalid argument 0 (block): a JSON integer above 9007199254740991 (2^53 - 1) cannot be read exactly: send the block number as hex" });

  const typed = await g.eth.call(m.getBlockReceipts, { block: atNumber(n) });
  expect(JSON.parse(table.byRpc(m.getBlockReceipts)?.result.encode(typed) ?? "null")).toEqual(expected);
  for (const tag of [BlockTag.LATEST, BlockTag.EARLIEST, BlockTag.PENDING, BlockTag.FINALIZED, BlockTag.SAFE]) {
    const byTag = await g.eth.call(m.getBlockReceipts, { block: atTag(tag) });
    expect(byTag.blockReceipts, BlockTag[tag]).toBeDefined();
  }
  const future = await g.eth.call(m.getBlockReceipts, { block: atNumber(0xffffffn) });
  expect(future.blockReceipts).toBeUndefined();
});

specRule("endpoints.eth_estimateGas", async () => {
  const data = encodeFunctionData({ abi: s.probe.abi, functionName: "burn", args: [3n] });
  for (const door of [g.http, g.ws]) {
    const withBlock = expectQuantity(await door.result("eth_estimateGas", [{ from: s.sender, to: s.address, data }, "latest"]), "estimate");
    const withoutBlock = expectQuantity(await door.result("eth_estimateGas", [{ from: s.sender, to: s.address, data }]), "estimate");
    expect(withBlock).toBeGreaterThan(21_000n);
    expect(withoutBlock).toBe(withBlock);
    expect((await door.call("eth_estimateGas", [])).error).toEqual(missing(0, "transaction"));
  }
  const typed = await g.eth.call(m.estimateGas, { transaction: { from: hexToBytes(s.sender), to: hexToBytes(s.address), data: hexToBytes(data) } });
  expect(typed.gas).toBe(BigInt(await g.http.result("eth_estimateGas", [{ from: s.sender, to: s.address, data }, "latest"])));
});

specRule("endpoints.eth_call", async () => {
  const stored = await g.http.result("eth_call", [{ to: s.address, data: storedCall() }, "latest"]);
  expect(BigInt(expectData(stored, "result", 32))).toBe(s.secondStore.value);
  // A call that returns nothing: 0x.
  const nothing = await g.http.post({ jsonrpc: "2.0", id: 1, method: "eth_call", params: [{ to: `0x${"77".repeat(20)}` }, "latest"] });
  expect(nothing.text).toBe('{"jsonrpc":"2.0","id":1,"result":"0x"}');
  const typed = await g.eth.call(m.call, { transaction: { to: hexToBytes(`0x${"77".repeat(20)}`) }, block: atTag(BlockTag.LATEST) });
  expect(typed.data).toHaveLength(0);
  expect(table.byRpc(m.call)?.result.encode(typed)).toBe('"0x"');
  expect((await g.http.call("eth_call", [])).error).toEqual(missing(0, "transaction"));
});

specRule("endpoints.eth_getProof", async () => {
  for (const door of [g.http, g.ws]) {
    const proof = await door.result("eth_getProof", [s.address, [STORED_SLOT], toHex(s.firstStore.blockNumber)]);
    expect(proof.address).toBe(s.address);
    expect(BigInt(proof.storageProof[0].value)).toBe(s.firstStore.value);
    const longKey = await door.call("eth_getProof", [s.address, [`0x${"00".repeat(33)}`], "latest"]);
    expect(longKey.error?.message).toMatch(/^invalid argument 1 \(storageKeys\[0\]\): storage key too long/);
  }
  const typed = await g.eth.call(m.getProof, { address: hexToBytes(s.address), storageKeys: [hexToBytes(STORED_SLOT)], block: firstStoreBlock() });
  expect(hex(typed.proof?.address)).toBe(s.address);
  expect(typed.proof?.storageProof.map((p) => hex(p.key))).toEqual([STORED_SLOT]);
  const tooLong = await g.eth.fail(m.getProof, { address: hexToBytes(s.address), storageKeys: [new Uint8Array(33)] });
  expect(tooLong.code).toBe(Code.InvalidArgument);
});

specRule("storage.plain-slot", async () => {
  // Probe.stored is slot 0: read it at each block it changed, with position 0 as a quantity.
  for (const [block, value] of [
    [s.deploy.blockNumber, s.initialValue],
    [s.firstStore.blockNumber, s.firstStore.value],
    [s.secondStore.blockNumber, s.secondStore.value],
  ] as const) {
    expect(BigInt(await g.http.result("eth_getStorageAt", [s.address, "0x0", toHex(block)]))).toBe(value);
    const typed = await g.eth.call(m.getStorageAt, { address: hexToBytes(s.address), position: new Uint8Array(), block: atNumber(block) });
    expect(BigInt(hex(typed.value))).toBe(value);
  }
  // Slot 1 is the mapping's own slot, which holds nothing.
  expect(BigInt(await g.http.result("eth_getStorageAt", [s.address, "0x1", "latest"]))).toBe(0n);
});

specRule("storage.mapping-slot", async () => {
  // balances is at slot 1: balances[sender] lives at keccak(pad32(sender) ++ pad32(1)).
  const position = keccak256(concat([pad(s.sender), pad(toHex(1))]));
  const native = BigInt(await g.http.result("eth_getStorageAt", [s.address, position, "latest"]));
  const typed = await g.eth.call(m.getStorageAt, { address: hexToBytes(s.address), position: hexToBytes(position) });
  const balanceCall = encodeFunctionData({ abi: s.probe.abi, functionName: "balances", args: [s.sender] });
  const viaContract = BigInt(await g.http.result("eth_call", [{ to: s.address, data: balanceCall }, "latest"]));
  expect(native).toBe(s.secondStore.value);
  expect(BigInt(hex(typed.value))).toBe(s.secondStore.value);
  expect(viaContract).toBe(native);
  // Another key's element is elsewhere, and empty.
  const other = keccak256(concat([pad(`0x${"77".repeat(20)}`), pad(toHex(1))]));
  expect(BigInt(await g.http.result("eth_getStorageAt", [s.address, other, "latest"]))).toBe(0n);
});
