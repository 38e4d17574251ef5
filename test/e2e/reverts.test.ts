/**
 * Reverts of eth_call and eth_estimateGas on a real node: the native path
 * returns the node's error object (code 3, its message, the revert data);
 * the typed path returns FAILED_PRECONDITION whose details carry the same
 * JsonRpcError, read with grpc-js (grpc-status-details-bin) and connect-es.
 */
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { status as GrpcStatus } from "@grpc/grpc-js";
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  encodeErrorResult,
  encodeFunctionData,
  type Hex,
  hexToBytes,
  http,
  type PublicClient,
} from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CallRequestSchema, EstimateGasRequestSchema, EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { RevertErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { connectErrorOf, grpcErrorOf, jsonRpcErrorOfConnect, jsonRpcErrorOfGrpc } from "../support/grpc-status.js";
import { type JsonRpcReply, postJson, rpcReply } from "../support/json-rpc.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { deployProbeScenario, type ProbeScenario } from "../support/probe-scenario.js";
import { connectCaller, grpcJsCaller, type TypedCaller } from "../support/typed-callers.js";

let anvil: AnvilNode;
let ng: TestNodegate;
let s: ProbeScenario;
let viem: PublicClient;
let grpcJs: TypedCaller;
let connect: TypedCaller;

beforeAll(async () => {
  anvil = await startAnvil();
  s = await deployProbeScenario(anvil.url);
  ng = await startNodegate({ upstreamUrl: anvil.url });
  grpcJs = grpcJsCaller(ng, EthService, ng.key);
  connect = connectCaller(ng, EthService, ng.key);
  viem = createPublicClient({ transport: http(ng.rpcUrl) }) as PublicClient;
});

afterAll(async () => {
  grpcJs?.close();
  await ng?.close();
  await anvil?.stop();
});

const ERROR_STRING = [{ type: "error", name: "Error", inputs: [{ name: "message", type: "string" }] }] as const;
const PANIC = [{ type: "error", name: "Panic", inputs: [{ name: "code", type: "uint256" }] }] as const;

interface RevertCase {
  title: string;
  input(): Hex;
  /** The ABI-encoded revert data the contract produces, computed independently of the node. */
  data(): Hex;
}

const reverts: RevertCase[] = [
  {
    title: 'fail("boom"): Error(string)',
    input: () => encodeFunctionData({ abi: s.probe.abi, functionName: "fail", args: ["boom"] }),
    data: () => encodeErrorResult({ abi: ERROR_STRING, errorName: "Error", args: ["boom"] }),
  },
  {
    // The node's message ends in a space ("execution reverted: "), which an HTTP/2 header cannot carry as it is.
    title: 'fail(""): Error(string) with an empty reason',
    input: () => encodeFunctionData({ abi: s.probe.abi, functionName: "fail", args: [""] }),
    data: () => encodeErrorResult({ abi: ERROR_STRING, errorName: "Error", args: [""] }),
  },
  {
    title: "failPanic(): Panic(0x12), division by zero",
    input: () => encodeFunctionData({ abi: s.probe.abi, functionName: "failPanic" }),
    data: () => encodeErrorResult({ abi: PANIC, errorName: "Panic", args: [0x12n] }),
  },
  {
    title: "failCustom(5): a custom error",
    input: () => encodeFunctionData({ abi: s.probe.abi, functionName: "failCustom", args: [5n] }),
    data: () => encodeErrorResult({ abi: s.probe.abi, errorName: "Custom", args: [5n, "custom error"] }),
  },
  {
    title: "failEmpty(): no revert data",
    input: () => encodeFunctionData({ abi: s.probe.abi, functionName: "failEmpty" }),
    data: () => "0x",
  },
];

const METHODS = ["eth_call", "eth_estimateGas"] as const;

function typedRequest(method: (typeof METHODS)[number], input: Hex) {
  const transaction = { from: hexToBytes(s.sender), to: hexToBytes(s.address), input: hexToBytes(input) };
  return method === "eth_call"
    ? { rpc: EthService.method.call, request: create(CallRequestSchema, { transaction }) }
    : { rpc: EthService.method.estimateGas, request: create(EstimateGasRequestSchema, { transaction }) };
}

/** What Anvil itself answers, to compare nodegate's answers with. */
async function nodeError(method: string, input: Hex): Promise<NonNullable<JsonRpcReply["error"]>> {
  const reply = await rpcReply(anvil.url, method, [{ from: s.sender, to: s.address, input }, "latest"]);
  if (reply.error === undefined) throw new Error(`${method} did not revert on the node`);
  return reply.error;
}

for (const method of METHODS) {
  describe(`${method} reverts`, () => {
    for (const r of reverts) {
      it(`native path: ${r.title} comes back as the node's code 3 error`, async () => {
        const params = [{ from: s.sender, to: s.address, input: r.input() }, "latest"];
        const reply = await postJson(ng.rpcUrl, { jsonrpc: "2.0", id: 41, method, params });
        expect(reply.status).toBe(200);
        const body = reply.json as JsonRpcReply;
        expect(body.id).toBe(41);
        expect(body.result).toBeUndefined();
        expect(body.error?.code).toBe(3);
        expect(body.error?.data).toBe(r.data());
        expect(body.error).toEqual(await nodeError(method, r.input()));
      });

      it(`grpc-js: ${r.title} is FAILED_PRECONDITION carrying the JsonRpcError`, async () => {
        const { rpc, request } = typedRequest(method, r.input());
        const err = await grpcErrorOf(grpcJs.call(rpc, request));
        expect(err.code).toBe(GrpcStatus.FAILED_PRECONDITION);
        const detail = jsonRpcErrorOfGrpc(err);
        const expected = await nodeError(method, r.input());
        expect(err.details).toBe(expected.message);
        expect(detail.code).toBe(3n);
        expect(detail.message).toBe(expected.message);
        expect(detail.data).toBe(JSON.stringify(r.data()));
      });

      it(`connect-es: ${r.title} is FailedPrecondition carrying the JsonRpcError`, async () => {
        const { rpc, request } = typedRequest(method, r.input());
        const err = await connectErrorOf(connect.call(rpc, request));
        expect(err.code).toBe(Code.FailedPrecondition);
        const expected = await nodeError(method, r.input());
        expect(err.rawMessage).toBe(expected.message);
        const detail = jsonRpcErrorOfConnect(err);
        expect(detail.code).toBe(3n);
        expect(detail.message).toBe(expected.message);
        expect(detail.data).toBe(JSON.stringify(r.data()));
      });
    }

    it('the message of fail("boom") is the node\'s "execution reverted: boom"', async () => {
      expect((await nodeError(method, reverts[0]?.input() as Hex)).message).toBe("execution reverted: boom");
    });
  });
}

describe("viem on the native path decodes the revert", () => {
  const revertOf = (err: unknown) =>
    err instanceof BaseError ? (err.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null) : null;

  it("eth_call (readContract): reason and custom error arguments", async () => {
    const failed = await viem.readContract({ address: s.address, abi: s.probe.abi, functionName: "fail", args: ["boom"] }).catch((e: unknown) => e);
    expect(revertOf(failed)?.reason).toBe("boom");
    const custom = await viem.readContract({ address: s.address, abi: s.probe.abi, functionName: "failCustom", args: [5n] }).catch((e: unknown) => e);
    expect(revertOf(custom)?.data?.errorName).toBe("Custom");
    expect(revertOf(custom)?.data?.args).toEqual([5n, "custom error"]);
  });

  it("eth_estimateGas (estimateContractGas): reason", async () => {
    const failed = await viem
      .estimateContractGas({ account: s.sender, address: s.address, abi: s.probe.abi, functionName: "fail", args: ["boom"] })
      .catch((e: unknown) => e);
    expect(revertOf(failed)?.reason).toBe("boom");
  });
});

describe("the gRPC status message on grpc-js", () => {
  // connect-node escapes grpc-message with encodeURIComponent and grpc-js reads it with decodeURI, which would leave
  // "execution reverted%3A boom"; nodegate encodes it as the gRPC spec says (src/grpc/grpc-message.ts).
  it("reads exactly the node's message", async () => {
    const { rpc, request } = typedRequest("eth_call", reverts[0]?.input() as Hex);
    const err = await grpcErrorOf(grpcJs.call(rpc, request));
    expect(err.details).toBe("execution reverted: boom");
  });
});

describe("RevertError on the typed door", () => {
  it("a custom error's reason is Anvil's text up to the argument bytes, which RevertError.data holds whole", async () => {
    // Found from outside: a Python client printed the reason as "custom error 0xf988f737: " and then NUL bytes.
    const custom = reverts.find((r) => r.title.startsWith("failCustom")) as RevertCase;
    const { rpc, request } = typedRequest("eth_call", custom.input());
    const err = await connectErrorOf(connect.call(rpc, request));
    const [revert] = err.findDetails(RevertErrorSchema);
    const data = custom.data();
    expect(Buffer.from(revert?.data ?? []).toString("hex")).toBe(data.slice(2));
    expect(revert?.reason).toBe(`custom error ${data.slice(0, 10)}`);
    expect((await nodeError("eth_call", custom.input())).message).toContain(`custom error ${data.slice(0, 10)}: \u0000`);
  });
});

describe("a call that runs out of gas", () => {
  // storeMany(50) writes 50 slots: far more than 60,000 gas.
  const input = () => encodeFunctionData({ abi: s.probe.abi, functionName: "storeMany", args: [50n] });
  const GAS = 60_000;

  it("is the node's own error on the native path, and FAILED_PRECONDITION with it on the typed door (not INTERNAL: the call failed, not the node)", async () => {
    // Anvil's words for it: -32603 "EVM error OutOfGas" (geth says -32000 "out of gas"; both are read by the same table).
    const direct = await rpcReply(anvil.url, "eth_call", [{ from: s.sender, to: s.address, input: input(), gas: `0x${GAS.toString(16)}` }, "latest"]);
    expect(direct.error).toEqual({ code: -32603, message: "EVM error OutOfGas" });
    const reply = await postJson(ng.rpcUrl, { jsonrpc: "2.0", id: 5, method: "eth_call", params: [{ from: s.sender, to: s.address, input: input(), gas: `0x${GAS.toString(16)}` }, "latest"] });
    expect(reply.json).toEqual({ jsonrpc: "2.0", id: 5, error: direct.error });
    const transaction = { from: hexToBytes(s.sender), to: hexToBytes(s.address), input: hexToBytes(input()), gas: BigInt(GAS) };
    const request = create(CallRequestSchema, { transaction });
    const grpcErr = await grpcErrorOf(grpcJs.call(EthService.method.call, request));
    expect(grpcErr.code).toBe(GrpcStatus.FAILED_PRECONDITION);
    expect(grpcErr.details).toBe("EVM error OutOfGas");
    expect(jsonRpcErrorOfGrpc(grpcErr).code).toBe(-32603n);
    const connectErr = await connectErrorOf(connect.call(EthService.method.call, request));
    expect(connectErr.code).toBe(Code.FailedPrecondition);
    expect(jsonRpcErrorOfConnect(connectErr).message).toBe("EVM error OutOfGas");
  });
});

describe("a call a precompile refuses, an opcode the fork has not activated, an SSTORE below the 2,300 gas sentry", () => {
  // Anvil's words: -32603 "EVM error PrecompileError" (the pairing precompile, 0x08, takes a multiple of 192 bytes),
  // "EVM error NotActivated" (PUSH0 on a London chain) and "EVM error ReentrancySentryOOG" (EIP-2200). The call's own
  // failure, as out of gas is: never INTERNAL.
  let london: AnvilNode;
  let londonNg: TestNodegate;
  let londonGrpc: TypedCaller;

  beforeAll(async () => {
    london = await startAnvil({ args: ["--hardfork", "london"] });
    londonNg = await startNodegate({ upstreamUrl: london.url });
    londonGrpc = grpcJsCaller(londonNg, EthService, londonNg.key);
  });

  afterAll(async () => {
    londonGrpc?.close();
    await londonNg?.close();
    await london?.stop();
  });

  const PAIRING = "0x0000000000000000000000000000000000000008";

  it("a precompile's refusal is the node's own error on the native path, and FAILED_PRECONDITION with it on the typed door", async () => {
    const call = { from: s.sender, to: PAIRING, input: "0x01" };
    const direct = await rpcReply(anvil.url, "eth_call", [call, "latest"]);
    expect(direct.error).toEqual({ code: -32603, message: "EVM error PrecompileError" });
    const reply = await postJson(ng.rpcUrl, { jsonrpc: "2.0", id: 6, method: "eth_call", params: [call, "latest"] });
    expect(reply.json).toEqual({ jsonrpc: "2.0", id: 6, error: direct.error });
    const transaction = { from: hexToBytes(s.sender), to: hexToBytes(PAIRING), input: hexToBytes("0x01") };
    for (const request of [create(CallRequestSchema, { transaction }), create(EstimateGasRequestSchema, { transaction })]) {
      const rpc = request.$typeName === CallRequestSchema.typeName ? EthService.method.call : EthService.method.estimateGas;
      const grpcErr = await grpcErrorOf(grpcJs.call(rpc, request));
      expect(grpcErr.code).toBe(GrpcStatus.FAILED_PRECONDITION);
      expect(grpcErr.details).toBe("EVM error PrecompileError");
      expect(jsonRpcErrorOfGrpc(grpcErr).code).toBe(-32603n);
    }
  });

  it("an opcode the fork has not activated is FAILED_PRECONDITION on the typed door", async () => {
    // Code holding PUSH0 alone, given to an empty account by a state override.
    const account = "0x00000000000000000000000000000000000000aa";
    const direct = await rpcReply(london.url, "eth_call", [{ to: account }, "latest", { [account]: { code: "0x5f" } }]);
    expect(direct.error).toEqual({ code: -32603, message: "EVM error NotActivated" });
    const request = create(CallRequestSchema, {
      transaction: { to: hexToBytes(account) },
      stateOverride: { accounts: [{ address: hexToBytes(account), override: { code: hexToBytes("0x5f") } }] },
    });
    const grpcErr = await grpcErrorOf(londonGrpc.call(EthService.method.call, request));
    expect(grpcErr.code).toBe(GrpcStatus.FAILED_PRECONDITION);
    expect(grpcErr.details).toBe("EVM error NotActivated");
    expect(jsonRpcErrorOfGrpc(grpcErr).message).toBe("EVM error NotActivated");
  });

  it("an SSTORE left with 2,300 gas or less is FAILED_PRECONDITION on the typed door", async () => {
    // PUSH1 1 PUSH1 0 SSTORE: 6 gas of pushes, so a limit of 21,000 + 6 + 2,300 leaves the SSTORE exactly the sentry.
    const account = "0x00000000000000000000000000000000000000aa";
    const code = "0x6001600055";
    const gas = 21_000 + 6 + 2_300;
    const direct = await rpcReply(anvil.url, "eth_call", [{ from: s.sender, to: account, gas: `0x${gas.toString(16)}` }, "latest", { [account]: { code } }]);
    expect(direct.error).toEqual({ code: -32603, message: "EVM error ReentrancySentryOOG" });
    const request = create(CallRequestSchema, {
      transaction: { from: hexToBytes(s.sender), to: hexToBytes(account), gas: BigInt(gas) },
      stateOverride: { accounts: [{ address: hexToBytes(account), override: { code: hexToBytes(code) } }] },
    });
    const grpcErr = await grpcErrorOf(grpcJs.call(EthService.method.call, request));
    expect(grpcErr.code).toBe(GrpcStatus.FAILED_PRECONDITION);
    expect(grpcErr.details).toBe("EVM error ReentrancySentryOOG");
  });
});
