/**
 * The log object row by row, the log filter object, the rules for
 * eth_getLogs and how logs are read (Events), on the native and typed doors.
 * Logs come from a real Anvil behind a recorder (to see what nodegate sent
 * upstream); pending logs and a removed log come from recorded answers on a
 * second network.
 */
import { equals, type MessageInitShape } from "@bufbuild/protobuf";
import { bytesToHex, decodeAbiParameters, encodeFunctionData, type Hex, hexToBytes, pad, toEventSelector, toHex } from "viem";
import { afterAll, beforeAll, expect } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type Log, type LogFilterSchema, LogSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import { BlockTag } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type FixtureUpstream, loadFixture, startFixtureUpstream } from "../support/fixture-upstream.js";
import { deployProbeScenario, type ProbeScenario } from "../support/probe-scenario.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";
import { Code } from "./harness/doors.js";
import { type NetworkDoors, openLiveAndRecordedGateway, openSpecGateway, type SpecGateway } from "./harness/gateway.js";
import { expectData, expectQuantity, expectTypedCarries } from "./harness/json-forms.js";
import { nodeRpc } from "./harness/node-rpc.js";
import { specRule } from "./harness/spec-rule.js";
import { hex } from "./harness/typed-values.js";

const m = EthService.method;
const STORED = toEventSelector("Stored(address,uint256,bytes)");
const NOBODY = `0x${"77".repeat(20)}` as Hex;
/** The block whose Stored log the recorded network reports as removed (test/fixtures/spec-shapes.json). */
const REORGED_BLOCK = "0x164294f2aaafef5c2c536fea717011df1176405d79d3f4d63d956033c8240515";

let anvil: AnvilNode;
let recorder: ProgrammableUpstream;
let fixtures: FixtureUpstream;
let s: ProbeScenario;
let g: SpecGateway;
let recorded: NetworkDoors;
/** A block with two store transactions from `payer` (a log each). */
let pairBlock: { number: bigint; hash: Hex; txs: [Hex, Hex] };
/** The latest block: storeMany(3), three logs from one transaction. */
let manyBlock: bigint;
let payer: Hex;

type FilterInit = MessageInitShape<typeof LogFilterSchema>;

const anvilRpc = (method: string, params: unknown[]): Promise<unknown> => nodeRpc(anvil.url, method, params);

beforeAll(async () => {
  anvil = await startAnvil();
  s = await deployProbeScenario(anvil.url);
  payer = ((await anvilRpc("eth_accounts", [])) as Hex[])[1] as Hex;
  await anvilRpc("evm_setAutomine", [false]);
  const send = (data: Hex) => anvilRpc("eth_sendTransaction", [{ from: payer, to: s.address, data }]) as Promise<Hex>;
  const store = (value: bigint) => send(encodeFunctionData({ abi: s.probe.abi, functionName: "store", args: [value, "0x"] }));
  const txs: [Hex, Hex] = [await store(1n), await store(2n)];
  await anvilRpc("evm_mine", []);
  await anvilRpc("evm_setAutomine", [true]);
  const number = BigInt((await anvilRpc("eth_blockNumber", [])) as string);
  pairBlock = { number, hash: ((await anvilRpc("eth_getBlockByNumber", [toHex(number), false])) as { hash: Hex }).hash, txs };
  await send(encodeFunctionData({ abi: s.probe.abi, functionName: "storeMany", args: [3n] }));
  manyBlock = number + 1n;

  recorder = await startProgrammableUpstream(() => ({ forward: anvil.url }));
  fixtures = await startFixtureUpstream(loadFixture("spec-shapes.json").recordings);
  g = await openLiveAndRecordedGateway(recorder.url, fixtures.url);
  recorded = g.on("recorded");
});

afterAll(async () => {
  await g?.close();
  await Promise.all([fixtures?.close(), recorder?.close()]);
  await anvil?.stop();
});

interface BothLogs {
  native: Record<string, unknown>[];
  typed: Log[];
}

/** eth_getLogs through the native and typed doors of a network. */
async function logsOf(filter: Record<string, unknown>, typedFilter: FilterInit, doors: NetworkDoors = g): Promise<BothLogs> {
  const native = await doors.http.result("eth_getLogs", [filter]);
  const typed = await doors.eth.call(m.getLogs, { filter: typedFilter });
  const nativeHashes = native.map((l: { transactionHash: string | null }) => l.transactionHash ?? "0x");
  expect(typed.logs.map((l) => bytesToHex(l.transactionHash ?? new Uint8Array()))).toEqual(nativeHashes);
  return { native, typed: typed.logs };
}

const atNumber = (n: bigint) => ({ kind: { case: "number" as const, value: n } });
const PENDING = { kind: { case: "tag" as const, value: BlockTag.PENDING } };
const inPair = () => logsOf({ blockHash: pairBlock.hash }, { blockHash: hexToBytes(pairBlock.hash) });
const pendingLogs = () =>
  logsOf({ fromBlock: "pending", toBlock: "pending" }, { fromBlock: PENDING, toBlock: PENDING }, recorded);

/** A log row: every log carries the key in its typed form; then null on the pending log when the spec says so. */
async function row(key: string, check: (logs: BothLogs) => void, nullWhenPending = false): Promise<void> {
  const logs = await inPair();
  expect(logs.native).toHaveLength(2);
  logs.native.forEach((native, i) => expectTypedCarries(LogSchema, logs.typed[i], key, native));
  check(logs);
  if (nullWhenPending) {
    const p = await pendingLogs();
    expect(p.native).toHaveLength(1);
    expect(p.native[0]?.[key], `${key} of a pending log`).toBeNull();
    expectTypedCarries(LogSchema, p.typed[0], key, p.native[0] as Record<string, unknown>);
  }
}

specRule("log.removed", async () => {
  await row("removed", ({ native, typed }) => {
    expect(native.map((l) => l.removed)).toEqual([false, false]);
    expect(typed.map((l) => l.removed)).toEqual([false, false]);
  });
  const reorged = await logsOf({ blockHash: REORGED_BLOCK }, { blockHash: hexToBytes(REORGED_BLOCK) }, recorded);
  expect(reorged.native.map((l) => l.removed)).toEqual([true]);
  expect(reorged.typed.map((l) => l.removed)).toEqual([true]);
  expectTypedCarries(LogSchema, reorged.typed[0], "removed", reorged.native[0] as Record<string, unknown>);
});

specRule("log.logIndex", () =>
  row(
    "logIndex",
    ({ native, typed }) => {
      // Positions in the block, not in the transaction: the second transaction's only log is 0x1.
      expect(native.map((l) => expectQuantity(l.logIndex, "logIndex"))).toEqual([0n, 1n]);
      expect(typed.map((l) => l.logIndex)).toEqual([0n, 1n]);
    },
    true,
  ),
);

specRule("log.transactionIndex", () =>
  row(
    "transactionIndex",
    ({ native, typed }) => {
      expect(native.map((l) => expectQuantity(l.transactionIndex, "transactionIndex"))).toEqual([0n, 1n]);
      expect(typed.map((l) => l.transactionIndex)).toEqual([0n, 1n]);
    },
    true,
  ),
);

specRule("log.transactionHash", () =>
  row(
    "transactionHash",
    ({ native, typed }) => {
      expect(native.map((l) => expectData(l.transactionHash, "transactionHash", 32))).toEqual(pairBlock.txs);
      expect(typed.map((l) => hex(l.transactionHash))).toEqual(pairBlock.txs);
    },
    true,
  ),
);

specRule("log.blockHash", () =>
  row(
    "blockHash",
    ({ native, typed }) => {
      expect(native.map((l) => expectData(l.blockHash, "blockHash", 32))).toEqual([pairBlock.hash, pairBlock.hash]);
      expect(typed.map((l) => hex(l.blockHash))).toEqual([pairBlock.hash, pairBlock.hash]);
    },
    true,
  ),
);

specRule("log.blockNumber", () =>
  row(
    "blockNumber",
    ({ native, typed }) => {
      expect(native.map((l) => expectQuantity(l.blockNumber, "blockNumber"))).toEqual([pairBlock.number, pairBlock.number]);
      expect(typed.map((l) => l.blockNumber)).toEqual([pairBlock.number, pairBlock.number]);
    },
    true,
  ),
);

specRule("log.address", () =>
  row("address", ({ native, typed }) => {
    expect(native.map((l) => expectData(l.address, "address", 20))).toEqual([s.address, s.address]);
    expect(typed.map((l) => hex(l.address))).toEqual([s.address, s.address]);
  }),
);

specRule("log.data", async () => {
  await row("data", ({ native, typed }) => {
    for (const l of native) expect((expectData(l.data, "data").length - 2) % 64).toBe(0);
    // Stored's one non-indexed argument, the note bytes (empty here), ABI-encoded in 32-byte words.
    expect(typed.map((l) => decodeAbiParameters([{ type: "bytes" }], hex(l.data))[0])).toEqual(["0x", "0x"]);
  });
  const anonymous = await logsOf({ blockHash: s.anonymous.blockHash }, { blockHash: hexToBytes(s.anonymous.blockHash) });
  expect(expectData(anonymous.native[0]?.data, "data", 32)).toBe(pad(toHex(s.anonymous.value)));
  expect(hex(anonymous.typed[0]?.data)).toBe(pad(toHex(s.anonymous.value)));
});

specRule("log.topics", async () => {
  const stored = await inPair();
  const anonymous = await logsOf({ blockHash: s.anonymous.blockHash }, { blockHash: hexToBytes(s.anonymous.blockHash) });
  for (const logs of [stored, anonymous]) {
    logs.native.forEach((native, i) => {
      expectTypedCarries(LogSchema, logs.typed[i], "topics", native);
      const topics = native.topics as unknown[];
      expect(topics.length).toBeLessThanOrEqual(4);
      for (const t of topics) expectData(t, "topic", 32);
    });
  }
  // Stored(address indexed who, uint256 indexed value, bytes note): the signature, then the indexed arguments.
  expect(stored.native[1]?.topics).toEqual([STORED, pad(payer.toLowerCase() as Hex), pad(toHex(2n))]);
  expect(stored.typed[1]?.topics.map((t) => hex(t))).toEqual([STORED, pad(payer.toLowerCase() as Hex), pad(toHex(2n))]);
  // An anonymous event has no signature topic (and Anonymous has no indexed argument).
  expect(anonymous.native[0]?.topics).toEqual([]);
  expect(anonymous.typed[0]?.topics).toEqual([]);
});

specRule("filter.address", async () => {
  const range = { fromBlock: "0x0", toBlock: "latest" };
  const one = await logsOf({ ...range, address: s.address }, { fromBlock: atNumber(0n), address: [hexToBytes(s.address)] });
  const list = await logsOf(
    { ...range, address: [NOBODY, s.address] },
    { fromBlock: atNumber(0n), address: [hexToBytes(NOBODY), hexToBytes(s.address)] },
  );
  const nobody = await logsOf({ ...range, address: NOBODY }, { fromBlock: atNumber(0n), address: [hexToBytes(NOBODY)] });
  expect(one.native.length).toBe(8); // two scenario stores, the anonymous event, the pair, storeMany's three
  expect(list.native).toEqual(one.native);
  expect(one.native.every((l) => l.address === s.address)).toBe(true);
  expect(nobody.native).toEqual([]);
  expect(nobody.typed).toEqual([]);
  // A typed address list goes upstream as the spec's list form.
  const sent = recorder.requests.filter((r) => r.method === "eth_getLogs").at(-1);
  expect((sent?.params as [{ address: unknown }])[0].address).toEqual([NOBODY]);
});

specRule("filter.fromBlock", async () => {
  const logs = await logsOf({ toBlock: "latest" }, { toBlock: { kind: { case: "tag", value: BlockTag.LATEST } } });
  expect(logs.native.map((l) => BigInt(l.blockNumber as string))).toEqual([manyBlock, manyBlock, manyBlock]);
  expect(logs.typed.map((l) => l.blockNumber)).toEqual([manyBlock, manyBlock, manyBlock]);
  const none = await logsOf({}, {});
  expect(none.native).toEqual(logs.native);
});

specRule("filter.toBlock", async () => {
  const logs = await logsOf({ fromBlock: toHex(pairBlock.number) }, { fromBlock: atNumber(pairBlock.number) });
  expect(logs.native.map((l) => BigInt(l.blockNumber as string))).toEqual([pairBlock.number, pairBlock.number, manyBlock, manyBlock, manyBlock]);
  expect(logs.typed).toHaveLength(5);
});

specRule("filter.topics", async () => {
  const range = { fromBlock: toHex(pairBlock.number), toBlock: toHex(pairBlock.number) };
  const typedRange = { fromBlock: atNumber(pairBlock.number), toBlock: atNumber(pairBlock.number) };
  const who = pad(payer.toLowerCase() as Hex);
  const bySignature = await logsOf({ ...range, topics: [STORED] }, { ...typedRange, topics: [{ anyOf: [hexToBytes(STORED)] }] });
  const bySender = await logsOf({ ...range, topics: [null, who] }, { ...typedRange, topics: [{ anyOf: [] }, { anyOf: [hexToBytes(who)] }] });
  const wrongPlace = await logsOf({ ...range, topics: [who] }, { ...typedRange, topics: [{ anyOf: [hexToBytes(who)] }] });
  const either = await logsOf({ ...range, topics: [null, null, [pad(toHex(2n)), pad(toHex(9n))]] }, {
    ...typedRange,
    topics: [{ anyOf: [] }, { anyOf: [] }, { anyOf: [hexToBytes(pad(toHex(2n))), hexToBytes(pad(toHex(9n)))] }],
  });
  expect(bySignature.native).toHaveLength(2);
  expect(bySender.native).toEqual(bySignature.native);
  expect(wrongPlace.native).toEqual([]); // the same topic in another position matches nothing
  expect(either.native.map((l) => l.transactionHash)).toEqual([pairBlock.txs[1]]);
  expect(either.typed.map((l) => hex(l.transactionHash))).toEqual([pairBlock.txs[1]]);
});

specRule("filter.blockHash", async () => {
  const byHash = await inPair();
  const byRange = await logsOf(
    { fromBlock: toHex(pairBlock.number), toBlock: toHex(pairBlock.number) },
    { fromBlock: atNumber(pairBlock.number), toBlock: atNumber(pairBlock.number) },
  );
  expect(byHash.native).toHaveLength(2);
  expect(byHash.native).toEqual(byRange.native);
  byHash.typed.forEach((l, i) => expect(equals(LogSchema, l, byRange.typed[i] as Log)).toBe(true));
});

specRule("filter.blockHash-excludes-range", async () => {
  const before = recorder.requests.length;
  for (const filter of [{ blockHash: pairBlock.hash, fromBlock: "0x1" }, { blockHash: pairBlock.hash, toBlock: "latest" }]) {
    expect((await g.http.call("eth_getLogs", [filter])).error).toEqual({
      code: -32602,
      message: "invalid argument 0 (filter): cannot specify both blockHash and fromBlock/toBlock, choose one or the other",
    });
  }
  const typed = await g.eth.fail(m.getLogs, { filter: { blockHash: hexToBytes(pairBlock.hash), fromBlock: atNumber(1n) } });
  expect(typed.code).toBe(Code.InvalidArgument);
  expect(typed.error?.code).toBe(-32602);
  expect(typed.error?.message).toMatch(/cannot specify both block_hash and from_block\/to_block/);
  expect(recorder.requests.length).toBe(before);
});

specRule("filter.blockhash-spelling", async () => {
  const canonical = await inPair();
  const seedSpelling = await g.http.result("eth_getLogs", [{ blockhash: pairBlock.hash }]);
  expect(seedSpelling).toEqual(canonical.native);
  const sent = recorder.requests.filter((r) => r.method === "eth_getLogs").at(-1);
  expect(JSON.parse(sent?.body ?? "{}").params).toEqual([{ blockHash: pairBlock.hash }]);
  expect((await g.http.call("eth_getLogs", [{ blockhash: pairBlock.hash, blockHash: pairBlock.hash }])).error).toEqual({
    code: -32602,
    message: "invalid argument 0 (filter): blockhash and blockHash are the same field; send one",
  });
  // The typed field is block_hash, written upstream as blockHash.
  await g.eth.call(m.getLogs, { filter: { blockHash: hexToBytes(pairBlock.hash) } });
  const typedSent = recorder.requests.filter((r) => r.method === "eth_getLogs").at(-1);
  expect(Object.keys((typedSent?.params as [Record<string, unknown>])[0])).toEqual(["blockHash"]);
});

specRule("getLogs.narrow-range", async () => {
  // The same chain with a limit of two logs: the scenario's three single-log blocks make a query too big.
  const narrow = await openSpecGateway({ upstreamUrl: anvil.url, config: { limits: { ...g.ng.gateway.limits, getLogsMaxResults: 2 } } });
  try {
    const from = s.firstStore.blockNumber;
    const to = s.anonymous.blockNumber;
    const native = await narrow.http.call("eth_getLogs", [{ fromBlock: toHex(from), toBlock: toHex(to) }]);
    const suggested = { limit: 2, from: toHex(from), to: toHex(s.secondStore.blockNumber) };
    expect(native.error).toEqual({ code: -32005, message: "query returned more than 2 results", data: suggested });
    const typed = await narrow.eth.fail(m.getLogs, { filter: { fromBlock: atNumber(from), toBlock: atNumber(to) } });
    expect(typed.code).toBe(Code.ResourceExhausted);
    expect(JSON.parse(typed.error?.data ?? "null")).toEqual(suggested);
    // The suggested range answers.
    const within = await narrow.http.result("eth_getLogs", [{ fromBlock: suggested.from, toBlock: suggested.to }]);
    expect(within.map((l: { transactionHash: string }) => l.transactionHash)).toEqual([s.firstStore.hash, s.secondStore.hash]);
    const typedWithin = await narrow.eth.call(m.getLogs, { filter: { fromBlock: atNumber(from), toBlock: atNumber(BigInt(suggested.to)) } });
    expect(typedWithin.logs).toHaveLength(2);
  } finally {
    await narrow.close();
  }
});

specRule("events.logs-by-polling", async () => {
  for (const hash of pairBlock.txs) {
    const receipt = await g.http.result("eth_getTransactionReceipt", [hash]);
    const inBlock: { transactionHash: string }[] = await g.http.result("eth_getLogs", [{ blockHash: pairBlock.hash }]);
    const polled = inBlock.filter((l) => l.transactionHash === hash);
    expect(polled).toHaveLength(1);
    expect(receipt.logs).toEqual(polled);
    const typedReceipt = await g.eth.call(m.getTransactionReceipt, { transactionHash: hexToBytes(hash) });
    const typedLogs = await g.eth.call(m.getLogs, { filter: { blockHash: hexToBytes(pairBlock.hash) } });
    const match = typedLogs.logs.filter((l) => hex(l.transactionHash) === hash);
    expect(typedReceipt.receipt?.logs).toHaveLength(1);
    expect(equals(LogSchema, typedReceipt.receipt?.logs[0] as Log, match[0] as Log)).toBe(true);
  }
});
