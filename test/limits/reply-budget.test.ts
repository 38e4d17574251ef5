/**
 * limits.maxReplyBytesInFlight: node replies being read at once, over all
 * calls, are bounded. A reply that would pass the bound fails with -32005
 * (HTTP 503, Retry-After; RESOURCE_EXHAUSTED on the typed door), which is
 * nodegate's capacity and not the node's outage: the circuit stays closed
 * and smaller calls are served throughout.
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceError } from "@grpc/grpc-js";
import { status as GrpcStatus } from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService, GetCodeRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { DEFAULT_CIRCUIT_BREAKER, DEFAULT_LIMITS } from "../../src/config.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";
import { grpcJsCaller, type TypedCaller } from "../support/typed-callers.js";

const ADDRESS = `0x${"12".repeat(20)}`;
/** A reply of about 200 KB, more than the 64 KiB budget below. */
const LARGE_CODE = `0x${"ab".repeat(100_000)}`;

let upstream: ProgrammableUpstream;
let ng: TestNodegate;
let typed: TypedCaller;

beforeAll(async () => {
  upstream = await startProgrammableUpstream((r) => (r.method === "eth_getCode" ? { result: LARGE_CODE } : { result: "0x7a69" }));
  ng = await startNodegate({ upstreamUrl: upstream.url, config: { limits: { ...DEFAULT_LIMITS, maxReplyBytesInFlight: 64 * 1024 } } });
  typed = grpcJsCaller(ng, EthService, ng.key);
});
afterAll(async () => {
  typed?.close();
  await ng?.close();
  await upstream?.close();
});

it("a reply that would pass the budget fails on both doors as nodegate's limit, and is no outage", async () => {
  // More failures than the circuit breaker's threshold: none of them may open it.
  for (let i = 0; i <= DEFAULT_CIRCUIT_BREAKER.threshold; i++) {
    const native = await post(ng.rpcUrl, rpc("eth_getCode", [ADDRESS, "latest"], i));
    expect(native.status).toBe(503);
    expect(native.headers.get("retry-after")).toBe("1");
    expect(native.json.error.code).toBe(-32005);
    expect(native.json.error.message).toMatch(/^limit exceeded: nodegate is reading \d+ bytes of node replies, its limit \(limits\.maxReplyBytesInFlight\); try again shortly$/);
  }
  const err = (await typed.call(EthService.method.getCode, create(GetCodeRequestSchema, { address: Buffer.from(ADDRESS.slice(2), "hex"), block: { kind: { case: "tag", value: 1 } } })).catch((e: unknown) => e)) as ServiceError;
  expect(err.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
  expect((await post(ng.rpcUrl, rpc("eth_chainId", [], 9))).json.result).toBe("0x7a69");
});
