/**
 * Anvil's words for a gas limit the call cannot run with, as a typed caller reads them. Found from outside (h71, a
 * Go client): "intrinsic gas too high -- CallGasCostMoreThanGasLimit", Anvil's answer to an eth_call whose gas is
 * below the call's intrinsic cost (geth: "intrinsic gas too low"), came back INTERNAL, which a gRPC client reads as
 * the server's fault and may retry. A real Anvil; the native door passes its error on unchanged.
 */
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CallRequestSchema, EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { BlockTag } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { JsonRpcErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { connectErrorOf } from "../support/grpc-status.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { connectCaller, type TypedCaller } from "../support/typed-callers.js";

const FROM = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";

let anvil: AnvilNode;
let ng: TestNodegate;
let typed: TypedCaller;

beforeAll(async () => {
  anvil = await startAnvil();
  ng = await startNodegate({ upstreamUrl: anvil.url });
  typed = connectCaller(ng, EthService, ng.key);
});
afterAll(async () => {
  await ng?.close();
  await anvil?.stop();
});

it("a call with a gas limit below its intrinsic cost is INVALID_ARGUMENT, with Anvil's code and words in the details", async () => {
  const direct = await post(anvil.url, rpc("eth_call", [{ from: FROM, to: FROM, gas: "0x4e20" }, "latest"]));
  const nodeError = direct.json.error as { code: number; message: string };
  expect(nodeError).toEqual({ code: -32000, message: expect.stringMatching(/^intrinsic gas too high -- CallGasCostMoreThanGasLimit/) });

  const request = create(CallRequestSchema, {
    transaction: { from: Buffer.from(FROM.slice(2), "hex"), to: Buffer.from(FROM.slice(2), "hex"), gas: 20_000n },
    block: { kind: { case: "number", value: 0n } },
  });
  const err = await connectErrorOf(typed.call(EthService.method.call, request));
  expect(err.code).toBe(Code.InvalidArgument);
  const [detail] = err.findDetails(JsonRpcErrorSchema);
  expect({ code: Number(detail?.code), message: detail?.message }).toEqual(nodeError);

  const native = await post(ng.rpcUrl, rpc("eth_call", [{ from: FROM, to: FROM, gas: "0x4e20" }, "latest"]));
  expect(native.json.error).toEqual(nodeError);
});

it("a call with a gas limit below EIP-7623's floor for its data is INVALID_ARGUMENT too (found from outside, h74)", async () => {
  const data = `0x${"ff".repeat(200)}`;
  const direct = await post(anvil.url, rpc("eth_call", [{ from: FROM, to: FROM, gas: "0x61a8", data }, "latest"]));
  const nodeError = direct.json.error as { code: number; message: string };
  expect(nodeError).toEqual({ code: -32000, message: expect.stringMatching(/^intrinsic gas too high -- GasFloorMoreThanGasLimit/) });
  const request = create(CallRequestSchema, {
    transaction: { from: Buffer.from(FROM.slice(2), "hex"), to: Buffer.from(FROM.slice(2), "hex"), gas: 25_000n, input: Buffer.from(data.slice(2), "hex") },
    block: { kind: { case: "tag", value: BlockTag.LATEST } },
  });
  const err = await connectErrorOf(typed.call(EthService.method.call, request));
  expect(err.code).toBe(Code.InvalidArgument);
  expect(err.findDetails(JsonRpcErrorSchema)[0]?.message).toBe(nodeError.message);
});
