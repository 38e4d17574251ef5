/**
 * The transaction call object of eth_call and eth_estimateGas, field by
 * field, and the four rules that follow it, against a real Anvil behind a
 * recorder, so a test sees what reached the node.
 */
import { type MessageInitShape } from "@bufbuild/protobuf";
import { Contract, type InterfaceAbi, JsonRpcProvider } from "ethers";
import { createPublicClient, encodeDeployData, encodeFunctionData, type Hex, hexToBytes, http, toHex } from "viem";
import { afterAll, beforeAll, expect } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import type { TransactionCallSchema } from "../../gen/nodegate/eth/v1/transaction_pb.js";
import { bytesToBigint } from "../../src/codec/hex.js";
import { uint256 } from "../../src/codec/eth-types.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { deployProbeScenario, type ProbeScenario } from "../support/probe-scenario.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";
import { Code } from "./harness/doors.js";
import { openSpecGateway, type SpecGateway } from "./harness/gateway.js";
import { expectQuantity } from "./harness/json-forms.js";
import { specRule } from "./harness/spec-rule.js";

const m = EthService.method;
/** An account that holds no ether. */
const POOR: Hex = `0x${"a1".repeat(20)}`;
const SOMEONE: Hex = `0x${"b2".repeat(20)}`;

let anvil: AnvilNode;
let recorder: ProgrammableUpstream;
let s: ProbeScenario;
let g: SpecGateway;

type CallInit = MessageInitShape<typeof TransactionCallSchema>;

beforeAll(async () => {
  anvil = await startAnvil();
  s = await deployProbeScenario(anvil.url);
  recorder = await startProgrammableUpstream(() => ({ forward: anvil.url }));
  g = await openSpecGateway({ upstreamUrl: recorder.url });
});

afterAll(async () => {
  await g?.close();
  await recorder?.close();
  await anvil?.stop();
});

const stored = () => encodeFunctionData({ abi: s.probe.abi, functionName: "stored" });
const burn = (n: bigint) => encodeFunctionData({ abi: s.probe.abi, functionName: "burn", args: [n] });

/** The call object the node last received for a method. */
function sentCall(method: string): Record<string, unknown> {
  const request = recorder.requests.filter((r) => r.method === method).at(-1);
  return (JSON.parse(request?.body ?? "{}") as { params: [Record<string, unknown>] }).params[0];
}

/**
 * The node's own error for a call, asked directly: a refusal through nodegate must be this one (so the call reached
 * the node as written and its answer came back), not one of nodegate's own.
 */
async function nodeError(method: string, params: unknown[]): Promise<{ code: number; message: string }> {
  const res = await fetch(anvil.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  const { error } = (await res.json()) as { error?: { code: number; message: string } };
  expect(error, `the node refuses ${method} ${JSON.stringify(params)}`).toBeDefined();
  return { code: error?.code as number, message: error?.message as string };
}

/** Both doors' errors for one refused call are the node's. */
async function expectNodesRefusal(method: string, params: unknown[], typed: () => Promise<{ error: { code: number; message: string } | undefined }>): Promise<void> {
  const expected = await nodeError(method, params);
  expect((await g.http.call(method, params)).error).toMatchObject(expected);
  expect((await typed()).error).toMatchObject(expected);
}

const typedCall = (transaction: CallInit) => g.eth.call(m.call, { transaction });
const typedEstimate = (transaction: CallInit) => g.eth.call(m.estimateGas, { transaction });
const bytes = (h: Hex) => hexToBytes(h);

specRule("call.from", async () => {
  // Real clients read a contract without an account, and send no from.
  const viem = createPublicClient({ transport: http(g.http.url) });
  expect(await viem.readContract({ address: s.address, abi: s.probe.abi, functionName: "stored" })).toBe(s.secondStore.value);
  expect(sentCall("eth_call")).not.toHaveProperty("from");
  const provider = new JsonRpcProvider(g.http.url, 31337, { staticNetwork: true });
  try {
    const ethersProbe = new Contract(s.address, s.probe.abi as InterfaceAbi, provider);
    expect(await ethersProbe.getFunction("stored").staticCall()).toBe(s.secondStore.value);
    expect(sentCall("eth_call")).not.toHaveProperty("from");
  } finally {
    provider.destroy();
  }
  // Without from: a read needs no account.
  expect(BigInt(await g.http.result("eth_call", [{ to: s.address, data: stored() }, "latest"]))).toBe(s.secondStore.value);
  expect(bytesToBigint((await typedCall({ to: bytes(s.address), data: bytes(stored()) })).data ?? new Uint8Array())).toBe(s.secondStore.value);
  expect(sentCall("eth_call")).not.toHaveProperty("from");
  expectQuantity(await g.http.result("eth_estimateGas", [{ to: s.address, data: burn(2n) }]), "estimate");
  expect((await typedEstimate({ to: bytes(s.address), data: bytes(burn(2n)) })).gas).toBeGreaterThan(21_000n);
  // With from, the node runs the call as that account: one without ether cannot send any.
  expect(await g.http.result("eth_call", [{ from: s.sender, to: SOMEONE, value: "0x1" }, "latest"])).toBe("0x");
  await expectNodesRefusal("eth_call", [{ from: POOR, to: SOMEONE, value: "0x1" }, "latest"], () =>
    g.eth.fail(m.call, { transaction: { from: bytes(POOR), to: bytes(SOMEONE), value: uint256(1n) } }),
  );
  expect(sentCall("eth_call").from).toBe(POOR);
});

specRule("call.to", async () => {
  const initCode = encodeDeployData({ abi: s.probe.abi, bytecode: s.probe.bytecode, args: [7n] });
  const deployed = await g.http.result("eth_getCode", [s.address, "latest"]);
  // Without to, the data runs as init code: the call returns the code it would deploy.
  expect(await g.http.result("eth_call", [{ from: s.sender, data: initCode }, "latest"])).toBe(deployed);
  const typed = await typedCall({ from: bytes(s.sender), data: bytes(initCode) });
  expect(`0x${Buffer.from(typed.data ?? []).toString("hex")}`).toBe(deployed);
  expect(sentCall("eth_call")).not.toHaveProperty("to");
  // A creation costs at least 53,000 gas.
  expect(expectQuantity(await g.http.result("eth_estimateGas", [{ from: s.sender, data: initCode }]), "estimate")).toBeGreaterThan(53_000n);
  expect((await typedEstimate({ from: bytes(s.sender), data: bytes(initCode) })).gas).toBeGreaterThan(53_000n);
});

specRule("call.gas", async () => {
  const work = burn(300n);
  // Too little gas for the work: the call fails; enough, or none, and it succeeds.
  await expectNodesRefusal("eth_call", [{ to: s.address, data: work, gas: "0x7530" }, "latest"], () =>
    g.eth.fail(m.call, { transaction: { to: bytes(s.address), data: bytes(work), gas: 30_000n } }),
  );
  expect(sentCall("eth_call").gas).toBe("0x7530");
  expect(await g.http.result("eth_call", [{ to: s.address, data: work, gas: toHex(5_000_000) }, "latest"])).toMatch(/^0x[0-9a-f]{64}$/);
  expect(await g.http.result("eth_call", [{ to: s.address, data: work }, "latest"])).toMatch(/^0x[0-9a-f]{64}$/);
  expect((await typedCall({ to: bytes(s.address), data: bytes(work), gas: 5_000_000n })).data).toHaveLength(32);
});

specRule("call.gasPrice", async () => {
  const price = await g.http.result("eth_gasPrice", []);
  const priced = await g.http.result("eth_call", [{ from: s.sender, to: s.address, data: stored(), gasPrice: price }, "latest"]);
  expect(BigInt(priced)).toBe(s.secondStore.value);
  expect(sentCall("eth_call").gasPrice).toBe(price);
  await typedCall({ from: bytes(s.sender), to: bytes(s.address), data: bytes(stored()), gasPrice: uint256(BigInt(price)) });
  expect(sentCall("eth_call").gasPrice).toBe(price);
  // A price the sender cannot pay for the gas is refused by the node: the price reached it.
  await expectNodesRefusal("eth_call", [{ from: POOR, to: s.address, data: stored(), gas: "0x10000", gasPrice: price }, "latest"], () =>
    g.eth.fail(m.call, { transaction: { from: bytes(POOR), to: bytes(s.address), data: bytes(stored()), gas: 0x10000n, gasPrice: uint256(BigInt(price)) } }),
  );
});

specRule("call.maxPriorityFeePerGas", async () => {
  const block = await g.http.result("eth_getBlockByNumber", ["latest", false]);
  const maxFee = BigInt(block.baseFeePerGas) * 2n;
  const fees = { from: s.sender, to: s.address, data: stored(), maxFeePerGas: toHex(maxFee) };
  expect(BigInt(await g.http.result("eth_call", [{ ...fees, maxPriorityFeePerGas: "0x1" }, "latest"]))).toBe(s.secondStore.value);
  expect(sentCall("eth_call").maxPriorityFeePerGas).toBe("0x1");
  // A tip above the fee cap is refused by the node, on both doors.
  const typedFees = { maxFeePerGas: uint256(maxFee), maxPriorityFeePerGas: uint256(maxFee + 1n) };
  await expectNodesRefusal("eth_call", [{ ...fees, maxPriorityFeePerGas: toHex(maxFee + 1n) }, "latest"], () =>
    g.eth.fail(m.call, { transaction: { from: bytes(s.sender), to: bytes(s.address), data: bytes(stored()), ...typedFees } }),
  );
  expect(sentCall("eth_call").maxPriorityFeePerGas).toBe(toHex(maxFee + 1n));
});

specRule("call.maxFeePerGas", async () => {
  const block = await g.http.result("eth_getBlockByNumber", ["latest", false]);
  const baseFee = BigInt(block.baseFeePerGas);
  const capped = { to: s.address, data: stored(), maxFeePerGas: toHex(baseFee * 2n) };
  expect(BigInt(await g.http.result("eth_call", [{ ...capped, from: s.sender }, "latest"]))).toBe(s.secondStore.value);
  expect(sentCall("eth_call").maxFeePerGas).toBe(toHex(baseFee * 2n));
  // The sender must afford gas times the fee cap: an account without ether cannot.
  await expectNodesRefusal("eth_call", [{ ...capped, from: POOR, gas: "0x10000" }, "latest"], () =>
    g.eth.fail(m.call, { transaction: { from: bytes(POOR), to: bytes(s.address), data: bytes(stored()), gas: 0x10000n, maxFeePerGas: uint256(baseFee * 2n) } }),
  );
  const typed = await typedCall({ from: bytes(s.sender), to: bytes(s.address), data: bytes(stored()), maxFeePerGas: uint256(baseFee * 2n) });
  expect(bytesToBigint(typed.data ?? new Uint8Array())).toBe(s.secondStore.value);
  expect(sentCall("eth_call").maxFeePerGas).toBe(toHex(baseFee * 2n));
});

specRule("call.value", async () => {
  expect(await g.http.result("eth_call", [{ from: s.sender, to: SOMEONE, value: toHex(10n ** 18n) }, "latest"])).toBe("0x");
  expect(sentCall("eth_call").value).toBe(toHex(10n ** 18n));
  // More than the sender holds: the node refuses, so the value reached it.
  const balance = BigInt(await g.http.result("eth_getBalance", [s.sender, "latest"]));
  await expectNodesRefusal("eth_call", [{ from: s.sender, to: SOMEONE, value: toHex(balance + 1n) }, "latest"], () =>
    g.eth.fail(m.call, { transaction: { from: bytes(s.sender), to: bytes(SOMEONE), value: uint256(balance + 1n) } }),
  );
  expect(sentCall("eth_call").value).toBe(toHex(balance + 1n));
  // Probe has no payable function: value sent to it reverts.
  expect((await g.http.call("eth_call", [{ from: s.sender, to: s.address, data: stored(), value: "0x1" }, "latest"])).error?.code).toBe(3);
});

specRule("call.data", async () => {
  const call = encodeFunctionData({ abi: s.probe.abi, functionName: "balances", args: [s.sender] });
  expect(BigInt(await g.http.result("eth_call", [{ to: s.address, data: call }, "latest"]))).toBe(s.secondStore.value);
  expect(sentCall("eth_call").data).toBe(call);
  expect(BigInt(await g.http.result("eth_call", [{ to: s.address, input: call }, "latest"]))).toBe(s.secondStore.value);
  expect(sentCall("eth_call").input).toBe(call);
  for (const transaction of [{ to: bytes(s.address), data: bytes(call) }, { to: bytes(s.address), input: bytes(call) }]) {
    expect(bytesToBigint((await typedCall(transaction)).data ?? new Uint8Array())).toBe(s.secondStore.value);
  }
  expect(sentCall("eth_call").input).toBe(call);
  // Another function's selector gives another answer: the data is what the contract runs.
  expect(BigInt(await g.http.result("eth_call", [{ to: s.address, data: stored() }, "latest"]))).toBe(s.secondStore.value);
  expect((await g.http.call("eth_call", [{ to: s.address, data: "0xdeadbeef" }, "latest"])).error?.code).toBe(3);
});

/** The chain height and the sender's nonce: what a transaction would change. */
async function chainState(): Promise<[string, string, string]> {
  return [
    await g.http.result("eth_blockNumber", []),
    await g.http.result("eth_getTransactionCount", [s.sender, "latest"]),
    await g.http.result("eth_getStorageAt", [s.address, "0x0", "latest"]),
  ];
}

specRule("call.estimate-adds-nothing", async () => {
  const before = await chainState();
  const store = encodeFunctionData({ abi: s.probe.abi, functionName: "store", args: [1234n, "0x"] });
  const estimates = [
    await g.http.result("eth_estimateGas", [{ from: s.sender, to: s.address, data: store }]),
    await g.ws.result("eth_estimateGas", [{ from: s.sender, to: s.address, data: store }]),
  ];
  const typed = await typedEstimate({ from: bytes(s.sender), to: bytes(s.address), data: bytes(store) });
  expect(BigInt(estimates[0])).toBeGreaterThan(21_000n);
  expect(estimates[1]).toBe(estimates[0]);
  expect(typed.gas).toBe(BigInt(estimates[0]));
  expect(await chainState()).toEqual(before);
});

specRule("call.creates-no-transaction", async () => {
  const before = await chainState();
  const store = encodeFunctionData({ abi: s.probe.abi, functionName: "store", args: [1234n, "0x"] });
  expect(await g.http.result("eth_call", [{ from: s.sender, to: s.address, data: store }, "latest"])).toBe("0x");
  expect((await typedCall({ from: bytes(s.sender), to: bytes(s.address), data: bytes(store) })).data).toHaveLength(0);
  expect(await chainState()).toEqual(before);
  expect(BigInt(before[2])).toBe(s.secondStore.value);
});

specRule("call.estimate-upper-bound", async () => {
  const pending = await g.http.result("eth_getBlockByNumber", ["pending", false]);
  const bound = toHex(BigInt(pending.gasLimit));
  await g.http.result("eth_estimateGas", [{ to: s.address, data: burn(5n) }]);
  expect(sentCall("eth_estimateGas").gas).toBe(bound);
  await g.ws.result("eth_estimateGas", [{ to: s.address, data: burn(5n) }]);
  expect(sentCall("eth_estimateGas").gas).toBe(bound);
  await typedEstimate({ to: bytes(s.address), data: bytes(burn(5n)) });
  expect(sentCall("eth_estimateGas").gas).toBe(bound);
  // Work needing more than the bound cannot be estimated.
  const huge = burn(2_000_000n);
  await expectNodesRefusal("eth_estimateGas", [{ to: s.address, data: huge, gas: bound }], () =>
    g.eth.fail(m.estimateGas, { transaction: { to: bytes(s.address), data: bytes(huge) } }),
  );
  expect((await g.http.call("eth_estimateGas", [{ to: s.address, data: huge }])).error).toMatchObject(await nodeError("eth_estimateGas", [{ to: s.address, data: huge, gas: bound }]));
  expect(sentCall("eth_estimateGas").gas).toBe(bound);
});

specRule("call.revert-code-3", async () => {
  const fail = encodeFunctionData({ abi: s.probe.abi, functionName: "fail", args: ["boom"] });
  for (const [door, method] of [
    [g.http, "eth_call"],
    [g.http, "eth_estimateGas"],
    [g.ws, "eth_estimateGas"],
  ] as const) {
    const reply = await door.call(method, [{ from: s.sender, to: s.address, data: fail }, "latest"]);
    expect(reply.error?.code, `${method}`).toBe(3);
    expect(reply.result).toBeUndefined();
  }
  for (const failure of [
    await g.eth.fail(m.call, { transaction: { to: bytes(s.address), data: bytes(fail) } }),
    await g.eth.fail(m.estimateGas, { transaction: { from: bytes(s.sender), to: bytes(s.address), data: bytes(fail) } }),
  ]) {
    expect(failure.code).toBe(Code.FailedPrecondition);
    expect(failure.error?.code).toBe(3);
  }
});
