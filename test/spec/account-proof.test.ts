/**
 * The account proof object of eth_getProof (marked WS), row by row, on all
 * three doors: proofs of the Probe contract and its storage on a real Anvil,
 * whose first nodes hash to the roots the spec says they start at, and an
 * empty storage proof as geth answers it (recorded).
 */
import { create } from "@bufbuild/protobuf";
import { type Hex, hexToBytes, keccak256, toHex } from "viem";
import { afterAll, beforeAll, expect } from "vitest";
import { EthService, GetProofRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type AccountProof, AccountProofSchema, StorageProofSchema } from "../../gen/nodegate/eth/v1/proof_pb.js";
import { bytesToBigint } from "../../src/codec/hex.js";
import { BlockTag } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type FixtureUpstream, loadFixture, startFixtureUpstream } from "../support/fixture-upstream.js";
import { balanceSlot, deployProbeScenario, type ProbeScenario, STORED_SLOT } from "../support/probe-scenario.js";
import { type NetworkDoors, openLiveAndRecordedGateway, type SpecGateway } from "./harness/gateway.js";
import { expectData, expectQuantity, expectTypedCarries } from "./harness/json-forms.js";
import { specRule } from "./harness/spec-rule.js";
import { hex } from "./harness/typed-values.js";

const m = EthService.method;
/** A slot Probe never writes. */
const UNUSED_SLOT: Hex = toHex(5, { size: 32 });
/** keccak256 of no code: the codeHash of an account without code. */
const EMPTY_CODE_HASH = keccak256("0x");

let anvil: AnvilNode;
let fixtures: FixtureUpstream;
let s: ProbeScenario;
let g: SpecGateway;
let recorded: NetworkDoors;
/** The recorded eth_getProof of an account without storage (test/fixtures/spec-shapes.json). */
let emptyStorage: { address: Hex; keys: Hex[] };

beforeAll(async () => {
  anvil = await startAnvil();
  s = await deployProbeScenario(anvil.url);
  const recordings = loadFixture("spec-shapes.json").recordings;
  const proof = recordings.find((r) => r.method === "eth_getProof");
  emptyStorage = { address: proof?.params[0] as Hex, keys: proof?.params[1] as Hex[] };
  fixtures = await startFixtureUpstream(recordings);
  g = await openLiveAndRecordedGateway(anvil.url, fixtures.url);
  recorded = g.on("recorded");
});

afterAll(async () => {
  await g?.close();
  await fixtures?.close();
  await anvil?.stop();
});

interface BothProofs {
  native: Record<string, unknown> & { storageProof: Record<string, unknown>[] };
  typed: AccountProof;
}

/** eth_getProof through HTTP, WebSocket (the same answer) and the typed door. */
async function proofOf(address: Hex, keys: Hex[], block: bigint | "latest", doors: NetworkDoors = g): Promise<BothProofs> {
  const params = [address, keys, block === "latest" ? "latest" : toHex(block)];
  const native = await doors.http.result("eth_getProof", params);
  expect(await doors.ws.result("eth_getProof", params)).toEqual(native);
  const typed = await doors.eth.call(
    m.getProof,
    create(GetProofRequestSchema, {
      address: hexToBytes(address),
      storageKeys: keys.map((k) => hexToBytes(k)),
      block: block === "latest" ? { kind: { case: "tag", value: BlockTag.LATEST } } : { kind: { case: "number", value: block } },
    }),
  );
  return { native, typed: typed.proof as AccountProof };
}

const probeProof = () => proofOf(s.address, [STORED_SLOT, balanceSlot(s.sender), UNUSED_SLOT], s.secondStore.blockNumber);

specRule("proof.address", async () => {
  const p = await probeProof();
  expectTypedCarries(AccountProofSchema, p.typed, "address", p.native);
  expect(expectData(p.native.address, "address", 20)).toBe(s.address);
  expect(hex(p.typed.address)).toBe(s.address);
});

specRule("proof.balance", async () => {
  const p = await proofOf(s.sender, [], "latest");
  expectTypedCarries(AccountProofSchema, p.typed, "balance", p.native);
  const balance = BigInt(await g.http.result("eth_getBalance", [s.sender, "latest"]));
  expect(expectQuantity(p.native.balance, "balance")).toBe(balance);
  expect(bytesToBigint(p.typed.balance?.value ?? new Uint8Array())).toBe(balance);
  expect(balance).toBeGreaterThan(10n ** 18n); // wei, not ether
});

specRule("proof.codeHash", async () => {
  const p = await probeProof();
  const eoa = await proofOf(s.sender, [], "latest");
  expectTypedCarries(AccountProofSchema, p.typed, "codeHash", p.native);
  const code = await g.http.result("eth_getCode", [s.address, toHex(s.secondStore.blockNumber)]);
  expect(expectData(p.native.codeHash, "codeHash", 32)).toBe(keccak256(code));
  expect(hex(p.typed.codeHash)).toBe(keccak256(code));
  expect(eoa.native.codeHash).toBe(EMPTY_CODE_HASH);
});

specRule("proof.nonce", async () => {
  const contract = await probeProof();
  const sender = await proofOf(s.sender, [], s.secondStore.blockNumber);
  expectTypedCarries(AccountProofSchema, contract.typed, "nonce", contract.native);
  // EIP-161: a contract starts at nonce 1. The sender had sent three transactions by then.
  expect(expectQuantity(contract.native.nonce, "nonce")).toBe(1n);
  expect(sender.typed.nonce).toBe(3n);
  expect(expectQuantity(sender.native.nonce, "nonce")).toBe(3n);
});

specRule("proof.storageHash", async () => {
  const p = await probeProof();
  expectTypedCarries(AccountProofSchema, p.typed, "storageHash", p.native);
  const root = expectData(p.native.storageHash, "storageHash", 32);
  for (const entry of p.typed.storageProof) expect(keccak256(entry.proof[0] as Uint8Array)).toBe(root);
  expect(hex(p.typed.storageHash)).toBe(root);
});

specRule("proof.accountProof", async () => {
  const p = await probeProof();
  expectTypedCarries(AccountProofSchema, p.typed, "accountProof", p.native);
  const block = await g.http.result("eth_getBlockByNumber", [toHex(s.secondStore.blockNumber), false]);
  const nodes = p.native.accountProof as Hex[];
  expect(nodes.length).toBeGreaterThan(0);
  for (const node of nodes) expectData(node, "trie node");
  expect(keccak256(nodes[0] as Hex)).toBe(block.stateRoot);
  expect(keccak256(p.typed.accountProof[0] as Uint8Array)).toBe(block.stateRoot);
});

specRule("proof.storageProof", async () => {
  const p = await probeProof();
  expectTypedCarries(AccountProofSchema, p.typed, "storageProof", p.native);
  expect(p.native.storageProof.map((e) => e.key)).toEqual([STORED_SLOT, balanceSlot(s.sender), UNUSED_SLOT]);
  expect(p.typed.storageProof.map((e) => hex(e.key))).toEqual([STORED_SLOT, balanceSlot(s.sender), UNUSED_SLOT]);
  const none = await proofOf(s.address, [], s.secondStore.blockNumber);
  expect(none.native.storageProof).toEqual([]);
  expect(none.typed.storageProof).toEqual([]);
});

specRule("proof.storage-entry", async () => {
  const p = await probeProof();
  const values = [s.secondStore.value, s.secondStore.value, 0n];
  p.native.storageProof.forEach((entry, i) => {
    for (const key of ["key", "value", "proof"]) expectTypedCarries(StorageProofSchema, p.typed.storageProof[i], key, entry);
    expect(expectQuantity(entry.value, "value")).toBe(values[i]);
    expect(bytesToBigint(p.typed.storageProof[i]?.value?.value ?? new Uint8Array())).toBe(values[i]);
    expect((entry.proof as unknown[]).length).toBeGreaterThan(0);
  });
  // The value is what eth_getStorageAt reads at the same block.
  expect(BigInt(await g.http.result("eth_getStorageAt", [s.address, balanceSlot(s.sender), toHex(s.secondStore.blockNumber)]))).toBe(values[1]);
});

specRule("proof.storage-proof-empty", async () => {
  const p = await proofOf(emptyStorage.address, emptyStorage.keys, "latest", recorded);
  expect(p.native.storageProof.map((e) => e.proof)).toEqual([[]]);
  expect(p.typed.storageProof.map((e) => e.proof)).toEqual([[]]);
  expectTypedCarries(StorageProofSchema, p.typed.storageProof[0], "proof", p.native.storageProof[0] as Record<string, unknown>);
});
