/**
 * Starknet end to end: nodegate with two networks, "ethereum" (the default,
 * a real Anvil) and "starknet" (the fixture upstream: no Starknet node
 * installs from the registries we reach). Real clients on every door:
 * grpc-js, connect-es over Connect, gRPC and gRPC-Web, and plain HTTP
 * JSON-RPC with named and positional params.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { ServiceError } from "@grpc/grpc-js";
import { status as GrpcStatus } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { JsonRpcErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { JsonRpcService } from "../../gen/nodegate/jsonrpc/v1/jsonrpc_service_pb.js";
import { BlockTag } from "../../gen/nodegate/starknet/v1/primitives_pb.js";
import {
  type GetTransactionByBlockIdAndIndexRequest,
  GetTransactionByBlockIdAndIndexRequestSchema,
  type GetTransactionByBlockIdAndIndexResponse,
  StarknetService,
  TransactionResponseFlag,
} from "../../gen/nodegate/starknet/v1/starknet_service_pb.js";
import type { InvokeTransactionV3 } from "../../gen/nodegate/starknet/v1/transaction_pb.js";
import { decodeFelt } from "../../src/codec/hex.js";
import { DEFAULT_PASS_THROUGH } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { NETWORK_HEADER } from "../../src/grpc/typed-services.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import { connectClient, type GrpcJsClient, grpcJsClient } from "../support/grpc-clients.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { FIXTURE_BLOCK, type StarknetBlock, type StarknetFixtureUpstream, startStarknetFixtureUpstream } from "../support/starknet-fixture-upstream.js";
import { STARKNET_FIXTURES, starknetFixture } from "../support/starknet-fixtures.js";
import { jsonRpcErrorOfGrpc } from "../support/grpc-status.js";
import { openWsCaller } from "../support/ws-calls.js";

const METHOD = "starknet_getTransactionByBlockIdAndIndex";

/** A block from a node on a newer spec: an INVOKE version nodegate does not model. */
const FUTURE_BLOCK: StarknetBlock = {
  hash: "0x7e57",
  number: 7,
  transactions: [{ ...starknetFixture("invoke-v1").json, version: "0x4" }],
};

let anvil: AnvilNode;
let upstream: StarknetFixtureUpstream;
let ng: TestNodegate;
let grpc: GrpcJsClient;

beforeAll(async () => {
  [anvil, upstream] = await Promise.all([startAnvil(), startStarknetFixtureUpstream({ blocks: [FIXTURE_BLOCK, FUTURE_BLOCK] })]);
  ng = await startNodegate({
    upstreamUrl: anvil.url,
    networks: [
      { name: "ethereum", family: "eth", upstreams: [{ label: "anvil", url: anvil.url }] },
      { name: "starknet", family: "starknet", upstreams: [{ label: "fixtures", url: upstream.url }] },
    ],
    config: { passThrough: { methods: [...DEFAULT_PASS_THROUGH, "pathfinder_version", "juno_version"], allowWrites: false } },
  });
  grpc = grpcJsClient(ng.address, StarknetService);
});

afterAll(async () => {
  grpc?.close();
  await ng?.close();
  await Promise.all([upstream?.close(), anvil?.stop()]);
});

interface RpcReply {
  status: number;
  text: string;
  body: { id?: unknown; result?: unknown; error?: { code: number; message: string; data?: unknown } };
}

async function post(path: string, body: string): Promise<RpcReply> {
  const res = await fetch(`${ng.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as RpcReply["body"] };
}

function call(id: number, method: string, paramsText: string): string {
  return `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${paramsText}}`;
}

/** What the node answers without INCLUDE_PROOF_FACTS: the fixture minus proof_facts. */
function withoutProofFacts(json: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const { proof_facts: _omitted, ...rest } = json;
  return rest;
}

function upstreamSaw(since: number): string[] {
  return upstream.requests.slice(since).map((r) => `${r.method} ${r.paramsText}`);
}

const starknetPath = () => `/starknet/v3/${ng.key}`;
const resultCodec = createMethodTable().byJsonRpc(METHOD)?.result;

function typedRequest(init: MessageInitShape<typeof GetTransactionByBlockIdAndIndexRequestSchema>): GetTransactionByBlockIdAndIndexRequest {
  return create(GetTransactionByBlockIdAndIndexRequestSchema, init);
}

const atFixtureBlock = { kind: { case: "blockNumber" as const, value: BigInt(FIXTURE_BLOCK.number) } };

/** The status message as grpc-js hands it to the caller (nodegate encodes grpc-message so that it reads back exactly). */
function grpcMessage(err: ServiceError): string {
  return err.details;
}

async function grpcError(run: () => Promise<unknown>): Promise<ServiceError> {
  try {
    await run();
  } catch (err) {
    return err as ServiceError;
  }
  throw new Error("expected the call to fail");
}

async function connectError(run: () => Promise<unknown>): Promise<ConnectError> {
  try {
    await run();
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("expected the call to fail");
}

describe("native path, POST /starknet/v3/<KEY>", () => {
  STARKNET_FIXTURES.forEach((f, index) => {
    it(`named params: ${f.name} comes back exactly as the node wrote it`, async () => {
      const params = `{"block_id":{"block_number":${FIXTURE_BLOCK.number}},"index":${index}}`;
      const before = upstream.requests.length;
      const reply = await post(starknetPath(), call(index, METHOD, params));
      expect(reply.status).toBe(200);
      expect(reply.text).toBe(`{"jsonrpc":"2.0","id":${index},"result":${JSON.stringify(withoutProofFacts(f.json))}}`);
      expect(upstreamSaw(before)).toEqual([`${METHOD} ${params}`]);
    });
  });

  it("positional params with a tag and with a block hash", async () => {
    const byTag = await post(starknetPath(), call(1, METHOD, '["latest",2]'));
    expect(byTag.body.result).toEqual(withoutProofFacts(starknetFixture("invoke-v3").json));
    const byHash = await post(starknetPath(), call(2, METHOD, `[{"block_hash":"${FIXTURE_BLOCK.hash}"},10]`));
    expect(byHash.body.result).toEqual(starknetFixture("l1-handler").json);
  });

  // Found from outside: explorers show block hashes padded to 64 digits, which Starknet nodes accept; this was -32602.
  it("a block hash padded with zeros to 64 digits is read and sent as written", async () => {
    const padded = `0x${FIXTURE_BLOCK.hash.slice(2).padStart(64, "0")}`;
    const before = upstream.requests.length;
    const params = `{"block_id":{"block_hash":"${padded}"},"index":10}`;
    const reply = await post(starknetPath(), call(9, METHOD, params));
    expect(reply.body.result).toEqual(starknetFixture("l1-handler").json);
    expect(upstreamSaw(before)).toEqual([`${METHOD} ${params}`]);
  });

  it("forwards the tags of both spec generations", async () => {
    const before = upstream.requests.length;
    for (const tag of ["pending", "pre_confirmed", "l1_accepted"]) {
      const reply = await post(starknetPath(), call(3, METHOD, `{"block_id":"${tag}","index":0}`));
      expect(reply.body.result).toEqual(starknetFixture("invoke-v0").json);
    }
    expect(upstreamSaw(before)).toEqual(["pending", "pre_confirmed", "l1_accepted"].map((t) => `${METHOD} {"block_id":"${t}","index":0}`));
  });

  it("response_flags INCLUDE_PROOF_FACTS, named and positional, brings proof_facts", async () => {
    const named = await post(starknetPath(), call(4, METHOD, '{"block_id":"latest","index":2,"response_flags":["INCLUDE_PROOF_FACTS"]}'));
    const positional = await post(starknetPath(), call(5, METHOD, '["latest",2,["INCLUDE_PROOF_FACTS"]]'));
    expect(named.body.result).toEqual(starknetFixture("invoke-v3").json);
    expect(positional.body.result).toEqual(starknetFixture("invoke-v3").json);
  });

  it("BLOCK_NOT_FOUND (24) and INVALID_TXN_INDEX (27) come back unchanged", async () => {
    const noBlock = await post(starknetPath(), call(6, METHOD, '{"block_id":{"block_number":1},"index":0}'));
    expect(noBlock.status).toBe(200);
    expect(noBlock.text).toBe('{"jsonrpc":"2.0","id":6,"error":{"code":24,"message":"Block not found"}}');
    const pastEnd = await post(starknetPath(), call(7, METHOD, `[{"block_number":${FIXTURE_BLOCK.number}},${STARKNET_FIXTURES.length}]`));
    expect(pastEnd.status).toBe(200);
    expect(pastEnd.text).toBe('{"jsonrpc":"2.0","id":7,"error":{"code":27,"message":"Invalid transaction index in a block"}}');
  });

  it("rejects a malformed block_id itself, naming the param, without asking the node", async () => {
    const before = upstream.requests.length;
    const reply = await post(starknetPath(), call(8, METHOD, '{"block_id":{"block_number":"0x1"},"index":0}'));
    expect(reply.body.error).toEqual({
      code: -32602,
      message: 'invalid argument 0 (block_id.block_number): want a JSON integer (Starknet block numbers are not hex), got "0x1"',
    });
    expect(upstreamSaw(before)).toEqual([]);
  });

  it("forwards an answer the typed schema cannot hold (a newer variant) untouched", async () => {
    const reply = await post(starknetPath(), call(9, METHOD, '{"block_id":{"block_number":7},"index":0}'));
    expect(reply.body.result).toEqual(FUTURE_BLOCK.transactions[0]);
  });
});

describe("typed path", () => {
  const starknetHeaders = () => ({ "x-api-key": ng.key, [NETWORK_HEADER]: "starknet" });

  STARKNET_FIXTURES.forEach((f, index) => {
    it(`grpc-js: ${f.name} arrives as ${f.variant} with every field`, async () => {
      const res = await grpc.call<GetTransactionByBlockIdAndIndexResponse>(
        "getTransactionByBlockIdAndIndex",
        typedRequest({ blockId: atFixtureBlock, index: BigInt(index) }),
        starknetHeaders(),
      );
      expect(res.transaction?.variant.case).toBe(f.variant);
      // Written back as JSON, the typed answer is the node's answer.
      expect(resultCodec?.encode(res)).toBe(JSON.stringify(withoutProofFacts(f.json)));
    });
  });

  it("grpc-js: sends block_id and index named, as the spec's rollup method takes them, and no response_flags unless set", async () => {
    const before = upstream.requests.length;
    await grpc.call("getTransactionByBlockIdAndIndex", typedRequest({ blockId: atFixtureBlock, index: 1n }), starknetHeaders());
    expect(upstreamSaw(before)).toEqual([`${METHOD} {"block_id":{"block_number":${FIXTURE_BLOCK.number}},"index":1}`]);
  });

  for (const protocol of ["connect", "grpc", "grpc-web"] as const) {
    it(`connect-es over ${protocol}: by hash, by tag, and with INCLUDE_PROOF_FACTS`, async () => {
      const client = connectClient(ng.url, StarknetService, ng.key, protocol);
      const headers = { [NETWORK_HEADER]: "starknet" };
      const byHash = await client.getTransactionByBlockIdAndIndex(
        { blockId: { kind: { case: "blockHash", value: decodeFelt(FIXTURE_BLOCK.hash) } }, index: 8n },
        { headers },
      );
      expect(byHash.transaction?.variant.case).toBe("deployAccountV1");
      const byTag = await client.getTransactionByBlockIdAndIndex({ blockId: { kind: { case: "tag", value: BlockTag.L1_ACCEPTED } }, index: 2n }, { headers });
      expect(byTag.transaction?.variant.case).toBe("invokeV3");
      expect((byTag.transaction?.variant.value as InvokeTransactionV3).proofFacts).toEqual([]);
      expect(resultCodec?.encode(byTag)).not.toContain("proof_facts");
      const withProofs = await client.getTransactionByBlockIdAndIndex(
        { blockId: { kind: { case: "tag", value: BlockTag.LATEST } }, index: 2n, responseFlags: [TransactionResponseFlag.INCLUDE_PROOF_FACTS] },
        { headers },
      );
      expect(resultCodec?.encode(withProofs)).toBe(JSON.stringify(starknetFixture("invoke-v3").json));
    });
  }

  it("grpc-js: BLOCK_NOT_FOUND is NOT_FOUND with the Starknet code and message in the details", async () => {
    const err = await grpcError(() =>
      grpc.call("getTransactionByBlockIdAndIndex", typedRequest({ blockId: { kind: { case: "blockNumber", value: 1n } } }), starknetHeaders()),
    );
    expect(err.code).toBe(GrpcStatus.NOT_FOUND);
    expect(err.details).toBe("Block not found");
    const detail = jsonRpcErrorOfGrpc(err);
    expect(detail?.code).toBe(24n);
    expect(detail?.message).toBe("Block not found");
    expect(detail?.data).toBeUndefined();
  });

  it("grpc-js: INVALID_TXN_INDEX is INVALID_ARGUMENT with the Starknet code and message in the details", async () => {
    const err = await grpcError(() =>
      grpc.call("getTransactionByBlockIdAndIndex", typedRequest({ blockId: atFixtureBlock, index: 99n }), starknetHeaders()),
    );
    expect(err.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    const detail = jsonRpcErrorOfGrpc(err);
    expect([detail?.code, detail?.message]).toEqual([27n, "Invalid transaction index in a block"]);
  });

  it("connect-es: both Starknet errors map the same way", async () => {
    const client = connectClient(ng.url, StarknetService, ng.key, "connect");
    const headers = { [NETWORK_HEADER]: "starknet" };
    const noBlock = await connectError(() =>
      client.getTransactionByBlockIdAndIndex({ blockId: { kind: { case: "blockHash", value: decodeFelt("0x404") } } }, { headers }),
    );
    expect(noBlock.code).toBe(Code.NotFound);
    expect(noBlock.findDetails(JsonRpcErrorSchema).map((d) => [d.code, d.message])).toEqual([[24n, "Block not found"]]);
    const pastEnd = await connectError(() => client.getTransactionByBlockIdAndIndex({ blockId: atFixtureBlock, index: 11n }, { headers }));
    expect(pastEnd.code).toBe(Code.InvalidArgument);
    expect(pastEnd.findDetails(JsonRpcErrorSchema).map((d) => [d.code, d.message])).toEqual([[27n, "Invalid transaction index in a block"]]);
  });

  it("a variant the schema does not know is INTERNAL (-32053), naming what did not fit", async () => {
    const err = await grpcError(() =>
      grpc.call("getTransactionByBlockIdAndIndex", typedRequest({ blockId: { kind: { case: "blockNumber", value: 7n } } }), starknetHeaders()),
    );
    expect(err.code).toBe(GrpcStatus.INTERNAL);
    const detail = jsonRpcErrorOfGrpc(err);
    expect(detail?.code).toBe(-32053n);
    expect(detail?.message).toBe(
      `the ${METHOD} result does not fit the typed schema: result.version: no INVOKE transaction has version 0x4 (known: 0x0, 0x1, 0x3)`,
    );
  });

  it("an unset block_id is INVALID_ARGUMENT and never reaches the node", async () => {
    const before = upstream.requests.length;
    const err = await grpcError(() => grpc.call("getTransactionByBlockIdAndIndex", typedRequest({ index: 0n }), starknetHeaders()));
    expect(err.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(grpcMessage(err)).toBe("invalid GetTransactionByBlockIdAndIndexRequest: block_id: required, but unset");
    expect(upstreamSaw(before)).toEqual([]);
  });

  it('a proto JSON caller writing a tag as the node spells it ("pre_confirmed") is told how the enum is named', async () => {
    // Found from outside: the tag, dropped as an unknown enum name, left "block_id is unset" with no hint.
    const ask = (tag: string) =>
      fetch(`${ng.url}/${StarknetService.typeName}/GetTransactionByBlockIdAndIndex`, {
        method: "POST",
        headers: { "content-type": "application/json", ...starknetHeaders() },
        body: JSON.stringify({ blockId: { tag }, index: "0" }),
      });
    const refused = await ask("pre_confirmed");
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { message: string }).message).toBe('blockId.tag: "pre_confirmed" is not a BlockTag value (in JSON, an enum value is named in full, as "BLOCK_TAG_PRE_CONFIRMED")');
    expect((await ask("BLOCK_TAG_LATEST")).status).toBe(200);
    // A response flag in the node's spelling was dropped the same way, silently: the node was never asked for proof_facts.
    const before = upstream.requests.length;
    const flagged = await fetch(`${ng.url}/${StarknetService.typeName}/GetTransactionByBlockIdAndIndex`, {
      method: "POST",
      headers: { "content-type": "application/json", ...starknetHeaders() },
      body: JSON.stringify({ blockId: { tag: "BLOCK_TAG_LATEST" }, index: "2", responseFlags: ["INCLUDE_PROOF_FACTS"] }),
    });
    expect(flagged.status).toBe(400);
    expect(((await flagged.json()) as { message: string }).message).toBe(
      'responseFlags[0]: "INCLUDE_PROOF_FACTS" is not a TransactionResponseFlag value (in JSON, an enum value is named in full, as "TRANSACTION_RESPONSE_FLAG_INCLUDE_PROOF_FACTS")',
    );
    expect(upstreamSaw(before)).toEqual([]);
  });
});

describe("network routing", () => {
  it("plain /v3/<KEY> is the default network, ethereum (and /ethereum/v3/<KEY> names it)", async () => {
    for (const path of [`/v3/${ng.key}`, `/ethereum/v3/${ng.key}`]) {
      const reply = await post(path, call(1, "eth_chainId", "[]"));
      expect(reply.body.result).toBe("0x7a69");
    }
  });

  it("a Starknet method on the Ethereum network gets a clear error and never reaches a node", async () => {
    const before = upstream.requests.length;
    const reply = await post(`/v3/${ng.key}`, call(2, METHOD, '{"block_id":"latest","index":0}'));
    expect(reply.status).toBe(200);
    expect(reply.body.error).toEqual({
      code: -32601,
      message: `${METHOD} is a Starknet method, but network "ethereum" serves Ethereum methods; send it to /starknet/v3/<KEY>`,
    });
    expect(upstreamSaw(before)).toEqual([]);
  });

  it("an Ethereum method on /starknet/v3/<KEY> gets a clear error", async () => {
    const reply = await post(starknetPath(), call(3, "eth_blockNumber", "[]"));
    expect(reply.body.error).toEqual({
      code: -32601,
      message: 'eth_blockNumber is an Ethereum method, but network "starknet" serves Starknet methods; send it to /ethereum/v3/<KEY>',
    });
  });

  it("the advice is in the terms of the door the call came through: the WebSocket path, the typed network header", async () => {
    // Found from outside: the WebSocket and JsonRpcService callers were pointed at the HTTP path.
    const ws = await openWsCaller(`ws://127.0.0.1:${ng.port}/starknet/ws/v3/${ng.key}`);
    try {
      expect((await ws.call("eth_blockNumber", [])).error?.message).toBe(
        'eth_blockNumber is an Ethereum method, but network "starknet" serves Starknet methods; connect to /ethereum/ws/v3/<KEY>',
      );
      // Found from outside: eth_subscribe there got a bare -32601 with no advice.
      expect((await ws.call("eth_subscribe", ["newHeads"])).error).toEqual({
        code: -32601,
        message: 'eth_subscribe is an Ethereum method, but network "starknet" serves Starknet methods; connect to /ethereum/ws/v3/<KEY>',
      });
    } finally {
      await ws.close();
    }
    const generic = connectClient(ng.url, JsonRpcService, ng.key, "grpc");
    const err = await connectError(() => generic.call({ method: "eth_blockNumber", paramsJson: "[]" }, { headers: { [NETWORK_HEADER]: "starknet" } }));
    expect(err.rawMessage).toBe(`eth_blockNumber is an Ethereum method, but network "starknet" serves Starknet methods; set the ${NETWORK_HEADER} header to "ethereum"`);
  });

  // Found from outside: pass-through served the Ethereum network only, so a listed Starknet method went to the
  // Ethereum node on /v3/<KEY> and was refused on /starknet/v3/<KEY>. The spec's read API is listed by default
  // (found from outside too: with the defaults, starknet_chainId was -32601 on a Starknet network).
  it("a Starknet method on the pass-through list (the spec's read API is, by default) goes to the Starknet node, on every door", async () => {
    const before = upstream.requests.length;
    const reply = await post(starknetPath(), call(5, "starknet_chainId", "[]"));
    expect(reply.text).toBe('{"jsonrpc":"2.0","id":5,"result":"0x534e5f5345504f4c4941"}');
    const ws = await openWsCaller(`ws://127.0.0.1:${ng.port}/starknet/ws/v3/${ng.key}`);
    try {
      expect((await ws.call("starknet_chainId", [])).result).toBe("0x534e5f5345504f4c4941");
    } finally {
      await ws.close();
    }
    const generic = connectClient(ng.url, JsonRpcService, ng.key, "grpc");
    const answer = await generic.call({ method: "starknet_chainId", paramsJson: "[]" }, { headers: { [NETWORK_HEADER]: "starknet" } });
    expect(answer.resultJson).toBe('"0x534e5f5345504f4c4941"');
    expect(upstreamSaw(before)).toEqual(["starknet_chainId []", "starknet_chainId []", "starknet_chainId []"]);
  });

  it("starknet.js's trace, simulation and compiled-class calls are on the default list: they reach the Starknet node", async () => {
    // Found from outside: getTransactionTrace, getBlockTransactionsTraces and getCompiledCasm got -32601 from nodegate.
    const before = upstream.requests.length;
    const methods = ["starknet_traceTransaction", "starknet_traceBlockTransactions", "starknet_simulateTransactions", "starknet_getCompiledCasm"];
    for (const [i, method] of methods.entries()) {
      const reply = await post(starknetPath(), call(20 + i, method, "[]"));
      expect(reply.body.error?.message ?? "", method).not.toMatch(/does not exist\/is not available/);
    }
    expect(upstreamSaw(before)).toEqual(methods.map((m) => `${m} []`));
  });

  it("a Starknet pass-through method on the Ethereum network is refused, and an Ethereum one on Starknet's", async () => {
    const before = upstream.requests.length;
    const reply = await post(`/v3/${ng.key}`, call(6, "starknet_chainId", "[]"));
    expect(reply.body.error).toEqual({
      code: -32601,
      message: 'starknet_chainId is a Starknet method, but network "ethereum" serves Ethereum methods; send it to /starknet/v3/<KEY>',
    });
    const generic = connectClient(ng.url, JsonRpcService, ng.key, "grpc");
    const err = await connectError(() => generic.call({ method: "starknet_chainId", paramsJson: "[]" }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toContain("starknet_chainId is a Starknet method");
    const wrongWay = await post(starknetPath(), call(7, "eth_chainId", "[]"));
    expect(wrongWay.body.error?.message).toBe('eth_chainId is an Ethereum method, but network "starknet" serves Starknet methods; send it to /ethereum/v3/<KEY>');
    expect(upstreamSaw(before)).toEqual([]);
  });

  it("a Starknet node's own namespaces (pathfinder_, juno_) on the pass-through list are Starknet methods too", async () => {
    // Found from outside: they were taken for Ethereum methods and sent to the Ethereum node.
    const before = upstream.requests.length;
    for (const method of ["pathfinder_version", "juno_version"]) {
      await post(starknetPath(), call(8, method, "[]"));
      const elsewhere = await post(`/v3/${ng.key}`, call(9, method, "[]"));
      expect(elsewhere.body.error?.message).toBe(`${method} is a Starknet method, but network "ethereum" serves Ethereum methods; send it to /starknet/v3/<KEY>`);
    }
    expect(upstreamSaw(before)).toEqual(["pathfinder_version []", "juno_version []"]);
  });

  it("a batch on the Starknet network answers each call for itself", async () => {
    const reply = await post(starknetPath(), `[${call(1, METHOD, '["latest",10]')},${call(2, "eth_chainId", "[]")}]`);
    const [first, second] = reply.body as unknown as RpcReply["body"][];
    expect(first?.result).toEqual(starknetFixture("l1-handler").json);
    expect(second?.error?.code).toBe(-32601);
  });

  it("an unknown network name is a 404 that lists the configured networks", async () => {
    const reply = await post(`/solana/v3/${ng.key}`, call(4, "eth_chainId", "[]"));
    expect(reply.status).toBe(404);
    expect(reply.body.error).toEqual({ code: -32001, message: 'unknown network "solana"; configured networks: ethereum, starknet' });
  });

  it("gRPC: StarknetService without the network header goes to ethereum and says which header to set", async () => {
    const err = await grpcError(() => grpc.call("getTransactionByBlockIdAndIndex", typedRequest({ blockId: atFixtureBlock }), { "x-api-key": ng.key }));
    expect(err.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    const message = `${METHOD} is a Starknet method, but network "ethereum" serves Ethereum methods; set the ${NETWORK_HEADER} header to "starknet"`;
    expect(grpcMessage(err)).toBe(message);
    const detail = jsonRpcErrorOfGrpc(err);
    expect([detail?.code, detail?.message]).toEqual([-32601n, message]);
  });

  it("gRPC: EthService on the Starknet network, and an unknown network, are refused clearly", async () => {
    const eth = connectClient(ng.url, EthService, ng.key, "grpc");
    const wrongFamily = await connectError(() => eth.chainId({}, { headers: { [NETWORK_HEADER]: "starknet" } }));
    expect(wrongFamily.code).toBe(Code.InvalidArgument);
    expect(wrongFamily.rawMessage).toBe(
      `eth_chainId is an Ethereum method, but network "starknet" serves Starknet methods; set the ${NETWORK_HEADER} header to "ethereum"`,
    );
    const unknown = await connectError(() => eth.chainId({}, { headers: { [NETWORK_HEADER]: "solana" } }));
    expect(unknown.code).toBe(Code.NotFound);
    // Found from outside: the detail said -32601, which the code table pairs with UNIMPLEMENTED.
    expect(unknown.findDetails(JsonRpcErrorSchema)[0]?.code).toBe(-32001n);
    expect(unknown.findDetails(JsonRpcErrorSchema)[0]?.message).toBe('unknown network "solana"; configured networks: ethereum, starknet');
    expect((await eth.chainId({}, { headers: { [NETWORK_HEADER]: "ethereum" } })).chainId).toBe(31337n);
  });
});
