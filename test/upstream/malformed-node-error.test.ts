/**
 * A node whose error object is not a JSON-RPC error ({"code":-32000} with no
 * message, a string code, a bare string) answered the call: the caller gets
 * -32052 with the node's error as its data, on both doors, and the circuit
 * stays closed for everyone else. Found from outside: five such answers to
 * one method opened the circuit, and every key's calls were paused, readiness
 * with them.
 */
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import type { ServiceError } from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService, GetCodeRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { DEFAULT_CIRCUIT_BREAKER } from "../../src/config/config.js";
import { grpcJsClient } from "../support/grpc-clients.js";
import { grpcErrorOf, jsonRpcErrorOfGrpc } from "../support/grpc-status.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

// Codes past 2^53 too: read into the typed door's int64 code, 1e21 (or max int64, rounded up by JSON.parse) threw, and the
// process exited (found from outside).
const MALFORMED = ['{"code":-32000}', '{"code":"x","message":"execution reverted"}', '{"code":1.5,"message":"m"}', '"something went wrong"', "[1,2]", '{"code":1e21,"message":"m"}', '{"code":9223372036854775807,"message":"m"}'];

let node: ProgrammableUpstream;
let gate: TestNodegate;
let next = 0;

beforeAll(async () => {
  node = await startProgrammableUpstream((request) => {
    if (request.method !== "eth_getCode") return { result: "0x10" };
    const error = MALFORMED[next++ % MALFORMED.length];
    return { raw: `{"jsonrpc":"2.0","id":${JSON.stringify(request.id)},"error":${error}}` };
  });
  gate = await startNodegate({ upstreamUrl: node.url });
});

afterAll(async () => {
  await gate?.close();
  await node?.close();
});

it("the caller reads the node's error as the data of -32052, and the circuit stays closed", async () => {
  const calls = 3 * DEFAULT_CIRCUIT_BREAKER.threshold;
  for (let i = 0; i < calls; i++) {
    const sent = MALFORMED[i % MALFORMED.length] as string;
    const res = await post(gate.rpcUrl, rpc("eth_getCode", ["0x0000000000000000000000000000000000000001", "latest"]));
    // 200, as the node's own errors: a 502 made viem send the call four times (found from outside).
    expect(res.status).toBe(200);
    expect(res.json.error.code).toBe(-32052);
    expect(res.json.error.message).toMatch(/^upstream returned an invalid response: the error (lacks an integer code and a string message|is not an object)$/);
    expect(res.json.error.data).toEqual(JSON.parse(sent));
  }
  expect(gate.gateway.network(undefined).primaryCircuit).toBe("closed");
  expect((await post(gate.rpcUrl, rpc("eth_blockNumber", []))).json.result).toBe("0x10");
  expect((await fetch(`${gate.url}/readyz`)).status).toBe(200);
});

it("typed callers get UNAVAILABLE with the node's error in the JsonRpcError detail", async () => {
  const client = grpcJsClient(gate.address, EthService);
  try {
    next = 0;
    const err: ServiceError = await grpcErrorOf(
      client.call("getCode", create(GetCodeRequestSchema, { address: new Uint8Array(20).fill(1) }), { "x-api-key": gate.key }),
    );
    expect(err.code).toBe(Code.Unavailable);
    const detail = jsonRpcErrorOfGrpc(err);
    expect(detail.code).toBe(-32052n);
    expect(JSON.parse(detail.data ?? "null")).toEqual({ code: -32000 });
    expect(gate.gateway.network(undefined).primaryCircuit).toBe("closed");
  } finally {
    client.close();
  }
});

it("a code past 2^53 reaches typed callers as -32052, on every lane, and the process goes on", async () => {
  const client = grpcJsClient(gate.address, EthService);
  try {
    for (const at of [5, 6]) {
      next = at;
      const err: ServiceError = await grpcErrorOf(client.call("getCode", create(GetCodeRequestSchema, { address: new Uint8Array(20).fill(1) }), { "x-api-key": gate.key }));
      expect(err.code).toBe(Code.Unavailable);
      expect(jsonRpcErrorOfGrpc(err).code).toBe(-32052n);
    }
    for (const at of [5, 6]) {
      next = at;
      const res = await fetch(`${gate.url}/nodegate.eth.v1.EthService/GetCode`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": gate.key },
        body: JSON.stringify({ address: Buffer.alloc(20, 1).toString("base64") }),
      });
      expect(res.status).toBe(503);
      expect(((await res.json()) as { code: string }).code).toBe("unavailable");
    }
    expect((await post(gate.rpcUrl, rpc("eth_blockNumber", []))).json.result).toBe("0x10");
  } finally {
    client.close();
  }
});

it("a reply with error null and no result is that call's -32052 too, not an outage", async () => {
  // Found from outside: {"jsonrpc":"2.0","id":N,"error":null} opened the circuit for every key after five calls.
  const handler = node.handler;
  node.handler = (request) => (request.method === "eth_getCode" ? { raw: `{"jsonrpc":"2.0","id":${JSON.stringify(request.id)},"error":null}` } : { result: "0x10" });
  try {
    for (let i = 0; i < 3 * DEFAULT_CIRCUIT_BREAKER.threshold; i++) {
      const res = await post(gate.rpcUrl, rpc("eth_getCode", ["0x0000000000000000000000000000000000000001", "latest"]));
      expect(res.json.error.code).toBe(-32052);
      expect(res.json.error.message).toBe("upstream returned an invalid response: reply has neither result nor error");
    }
    expect(gate.gateway.network(undefined).primaryCircuit).toBe("closed");
    expect((await post(gate.rpcUrl, rpc("eth_blockNumber", []))).json.result).toBe("0x10");
  } finally {
    node.handler = handler;
  }
});
