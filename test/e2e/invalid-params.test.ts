/**
 * Invalid params are refused by nodegate itself, on both front doors, with
 * an error that names the argument or field, and nothing reaches the node:
 * nodegate talks to Anvil through a counting upstream whose count must not
 * move. A valid call before and after shows the counter counts and the
 * process keeps serving.
 */
import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { create, type DescMethod, type Message } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { status as GrpcStatus } from "@grpc/grpc-js";
import { BaseError, createPublicClient, http, type PublicClient, RpcRequestError } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ChainIdRequestSchema,
  EthService,
  GetBlockByHashRequestSchema,
  GetBlockByNumberRequestSchema,
  GetBalanceRequestSchema,
  GetLogsRequestSchema,
  GetProofRequestSchema,
  GetStorageAtRequestSchema,
  GetTransactionByBlockNumberAndIndexRequestSchema,
  EstimateGasRequestSchema,
  CallRequestSchema,
} from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { BlockTag } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type CountingUpstream, startCountingUpstream } from "../support/counting-upstream.js";
import { connectErrorOf, grpcErrorOf, jsonRpcErrorOfConnect, jsonRpcErrorOfGrpc } from "../support/grpc-status.js";
import { connectClient } from "../support/grpc-clients.js";
import { type JsonRpcReply, postJson } from "../support/json-rpc.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { connectCaller, grpcJsCaller, type TypedCaller } from "../support/typed-callers.js";

let anvil: AnvilNode;
let upstream: CountingUpstream;
let ng: TestNodegate;
let grpcJs: TypedCaller;
let connect: TypedCaller;
let viem: PublicClient;

beforeAll(async () => {
  anvil = await startAnvil();
  upstream = await startCountingUpstream(anvil.url);
  ng = await startNodegate({ upstreamUrl: upstream.url });
  grpcJs = grpcJsCaller(ng, EthService, ng.key);
  connect = connectCaller(ng, EthService, ng.key);
  viem = createPublicClient({ transport: http(ng.rpcUrl) }) as PublicClient;
});

afterAll(async () => {
  grpcJs?.close();
  await ng?.close();
  await upstream?.close();
  await anvil?.stop();
});

const ADDRESS = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const HASH = `0x${"ab".repeat(32)}`;

/** Runs `body` and checks that the upstream saw no request meanwhile. */
async function withoutUpstreamTraffic(body: () => Promise<void>): Promise<void> {
  const before = upstream.count;
  await body();
  expect(upstream.count).toBe(before);
}

describe("the counting upstream", () => {
  it("counts a valid call on each front door (so an unchanged count means nothing was sent)", async () => {
    const before = upstream.count;
    await postJson(ng.rpcUrl, { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] });
    await grpcJs.call(EthService.method.chainId, create(ChainIdRequestSchema));
    await connect.call(EthService.method.chainId, create(ChainIdRequestSchema));
    expect(upstream.count).toBe(before + 3);
    expect(upstream.methods.slice(-3)).toEqual(["eth_chainId", "eth_chainId", "eth_chainId"]);
  });
});

interface NativeCase {
  title: string;
  method: string;
  params: unknown;
  /** Text the -32602 message must contain: the argument and what is wrong with it. */
  names: string[];
}

const nativeCases: NativeCase[] = [
  {
    title: "bad hex digits in an address",
    method: "eth_getStorageAt",
    params: [`0x${"zz".repeat(20)}`, "0x0", "latest"],
    names: ["argument 0 (address)", "not hex"],
  },
  {
    title: "an address of the wrong length",
    method: "eth_getProof",
    params: ["0x1234", [], "latest"],
    names: ["argument 0 (address)", "want 20 bytes, got 2"],
  },
  {
    title: "an odd number of hex digits in a hash",
    method: "eth_getTransactionReceipt",
    params: [`${HASH}0`],
    names: ["argument 0 (transactionHash)", "odd number of digits"],
  },
  { title: "too many params", method: "eth_getTransactionReceipt", params: [HASH, "extra"], names: ["too many arguments, want at most 1"] },
  {
    title: "a call object whose input and data differ",
    method: "eth_call",
    params: [{ to: ADDRESS, input: "0x0c55699c", data: "0xa169ce09" }, "latest"],
    names: ["argument 0 (transaction)", 'both "data" and "input" are set and not equal'],
  },
  {
    title: "a missing required param (the block hash)",
    method: "eth_getBlockByHash",
    params: [],
    names: ["missing value for required argument 0 (blockHash)"],
  },
  {
    title: "a missing required param (the transaction-details flag)",
    method: "eth_getBlockByNumber",
    params: ["latest"],
    names: ["missing value for required argument 1 (fullTransactions)"],
  },
  {
    title: "blockHash together with fromBlock in a log filter",
    method: "eth_getLogs",
    params: [{ blockHash: HASH, fromBlock: "0x1" }],
    names: ["argument 0 (filter)", "cannot specify both blockHash and fromBlock/toBlock"],
  },
  {
    title: "a block hash where only a number or tag is allowed (eth_getBlockByNumber)",
    method: "eth_getBlockByNumber",
    params: [HASH, false],
    names: ["argument 0 (block)", "want a block number or tag, got a 32-byte hash"],
  },
  {
    title: "a block hash where only a number or tag is allowed (eth_getUncleByBlockNumberAndIndex)",
    method: "eth_getUncleByBlockNumberAndIndex",
    params: [HASH, "0x0"],
    names: ["argument 0 (block)", "want a block number or tag"],
  },
  {
    title: "a block hash as a log filter's fromBlock",
    method: "eth_getLogs",
    params: [{ fromBlock: HASH }],
    names: ["argument 0 (filter.fromBlock)", "want a block number or tag"],
  },
  {
    title: "a quantity with a leading zero (the index)",
    method: "eth_getTransactionByBlockNumberAndIndex",
    params: ["0x1", "0x01"],
    names: ["argument 1 (index)", "leading zero"],
  },
  {
    title: "a storage key longer than 32 bytes",
    method: "eth_getProof",
    params: [ADDRESS, [`0x${"11".repeat(33)}`], "latest"],
    names: ["argument 1 (storageKeys[0])", "too long"],
  },
  {
    title: "a non-boolean transaction-details flag",
    method: "eth_getBlockByHash",
    params: [HASH, "yes"],
    names: ["argument 1 (fullTransactions)", "want a boolean"],
  },
  {
    title: "a bad field inside the call object",
    method: "eth_estimateGas",
    params: [{ to: "0x12" }, "latest"],
    names: ["argument 0 (transaction.to)", "want 20 bytes"],
  },
  {
    title: "params as an object for a positional method",
    method: "eth_call",
    params: { to: ADDRESS },
    names: ["want a JSON array of positional params"],
  },
];

describe("native path: -32602 naming the argument, nothing sent upstream", () => {
  for (const c of nativeCases) {
    it(c.title, async () => {
      await withoutUpstreamTraffic(async () => {
        const reply = await postJson(ng.rpcUrl, { jsonrpc: "2.0", id: 12, method: c.method, params: c.params });
        expect(reply.status).toBe(200);
        const body = reply.json as JsonRpcReply;
        expect(body.id).toBe(12);
        expect(body.error?.code).toBe(-32602);
        for (const text of c.names) expect(body.error?.message).toContain(text);
      });
    });
  }

  it("viem sees the -32602 error with its message", async () => {
    await withoutUpstreamTraffic(async () => {
      const err = await viem.request({ method: "eth_getBlockByNumber", params: [HASH as never, false] }).catch((e: unknown) => e);
      const rpcError = err instanceof BaseError ? (err.walk((e) => e instanceof RpcRequestError) as RpcRequestError | null) : null;
      expect(rpcError?.code).toBe(-32602);
      expect(rpcError?.details).toContain("argument 0 (block)");
    });
  });

  it("a batch answers each bad member on its own and forwards only the good one", async () => {
    const before = upstream.count;
    const reply = await postJson(ng.rpcUrl, [
      { jsonrpc: "2.0", id: 1, method: "eth_getBlockByNumber", params: [HASH, false] },
      { jsonrpc: "2.0", id: 2, method: "eth_chainId", params: [] },
      { jsonrpc: "2.0", id: 3, method: "eth_getTransactionReceipt", params: [] },
    ]);
    const bodies = reply.json as JsonRpcReply[];
    expect(bodies.map((b) => [b.id, b.error?.code ?? b.result])).toEqual([
      [1, -32602],
      [2, "0x7a69"],
      [3, -32602],
    ]);
    expect(upstream.count).toBe(before + 1);
  });
});

interface TypedCase {
  title: string;
  rpc: DescMethod;
  request(): Message;
  /** Text the INVALID_ARGUMENT message must contain: the field and what is wrong with it. */
  names: string[];
}

const typedCases: TypedCase[] = [
  {
    title: "an address of 19 bytes",
    rpc: EthService.method.getStorageAt,
    request: () => create(GetStorageAtRequestSchema, { address: new Uint8Array(19) }),
    names: ["address", "want 20 bytes, got 19"],
  },
  {
    title: "a missing block hash",
    rpc: EthService.method.getBlockByHash,
    request: () => create(GetBlockByHashRequestSchema, {}),
    names: ["blockHash", "want 32 bytes, got 0"],
  },
  {
    // Found from outside: this read "filter.topics[0]: topic: want 32 bytes", without which alternative or its length.
    title: "a log filter's topic alternative of 31 bytes",
    rpc: EthService.method.getLogs,
    request: () => create(GetLogsRequestSchema, { filter: { topics: [{ anyOf: [new Uint8Array(32), new Uint8Array(31)] }] } }),
    names: ["filter.topics[0].any_of[1]", "want 32 bytes, got 31"],
  },
  {
    title: "block_hash together with from_block in a log filter",
    rpc: EthService.method.getLogs,
    request: () =>
      create(GetLogsRequestSchema, { filter: { blockHash: new Uint8Array(32), fromBlock: { kind: { case: "number", value: 1n } } } }),
    names: ["filter", "cannot specify both block_hash and from_block/to_block"],
  },
  {
    // Found from outside: the hash went upstream as a block number (0x00…02 read as block 2).
    title: "a block hash as a log filter's from_block or to_block",
    rpc: EthService.method.getLogs,
    request: () =>
      create(GetLogsRequestSchema, {
        filter: { fromBlock: { kind: { case: "number", value: 1n } }, toBlock: { kind: { case: "hash", value: new Uint8Array(32).fill(2, 31) } } },
      }),
    names: ["filter.to_block", "want a block number or tag, got a hash"],
  },
  {
    title: "a block hash where only a number or tag is allowed",
    rpc: EthService.method.getBlockByNumber,
    request: () => create(GetBlockByNumberRequestSchema, { block: { kind: { case: "hash", value: new Uint8Array(32) } } }),
    names: ["block", "want a block number or tag, got a hash"],
  },
  {
    title: "a block id with nothing set",
    rpc: EthService.method.getTransactionByBlockNumberAndIndex,
    request: () => create(GetTransactionByBlockNumberAndIndexRequestSchema, { block: {}, index: 0n }),
    names: ["block", "block is unset"],
  },
  {
    title: "an unspecified block tag",
    rpc: EthService.method.getBlockByNumber,
    request: () => create(GetBlockByNumberRequestSchema, { block: { kind: { case: "tag", value: BlockTag.UNSPECIFIED } } }),
    names: ["block", "block tag is unspecified"],
  },
  {
    // Found from outside: a value the client's enum has and nodegate's does not was called "unspecified".
    title: "a block tag value the proto does not define",
    rpc: EthService.method.getBlockByNumber,
    request: () => create(GetBlockByNumberRequestSchema, { block: { kind: { case: "tag", value: 9 as BlockTag } } }),
    names: ["block", "unknown block tag value 9"],
  },
  {
    title: "a call whose input and data differ",
    rpc: EthService.method.estimateGas,
    request: () => create(EstimateGasRequestSchema, { transaction: { input: new Uint8Array([1]), data: new Uint8Array([2]) } }),
    names: ["transaction", 'both "data" and "input" are set and not equal'],
  },
  {
    // A leading zero byte is padding, read as the value it pads (a Go client's FillBytes); more than 32 bytes after it is not.
    title: "a Uint256 of 33 significant bytes",
    rpc: EthService.method.estimateGas,
    request: () => create(EstimateGasRequestSchema, { transaction: { value: { value: new Uint8Array([0, 1, ...new Uint8Array(32)]) } } }),
    names: ["transaction.value", "at most 32 significant bytes"],
  },
  {
    title: "a storage key of 33 bytes",
    rpc: EthService.method.getProof,
    request: () => create(GetProofRequestSchema, { address: new Uint8Array(20), storageKeys: [new Uint8Array(33)] }),
    names: ["storageKeys[0]", "at most 32 bytes"],
  },
  // Found from outside: the flag was dropped without a word, and block 1 answered.
  {
    title: "requireCanonical with a block number",
    rpc: EthService.method.getBlockByNumber,
    request: () => create(GetBlockByNumberRequestSchema, { block: { kind: { case: "number", value: 1n }, requireCanonical: true } }),
    names: ["block", "requireCanonical goes only with a block hash"],
  },
  // Found from outside: an extra named like a field was skipped, so this call went out with no "to" and answered "0x".
  {
    title: "json_extras naming a field of the call object",
    rpc: EthService.method.estimateGas,
    request: () => create(EstimateGasRequestSchema, { transaction: { jsonExtras: { unknownFields: { to: JSON.stringify(ADDRESS) } } } }),
    names: ['transaction.jsonExtras.unknownFields["to"]', "names a field of the message"],
  },
  {
    title: "json_extras naming a field of the log filter",
    rpc: EthService.method.getLogs,
    request: () => create(GetLogsRequestSchema, { filter: { jsonExtras: { unknownFields: { fromBlock: '"0x0"' } } } }),
    names: ['filter.jsonExtras.unknownFields["fromBlock"]', "names a field of the message"],
  },
  // Written into the call as it is: text that is not one JSON value would end it and write the rest of the envelope
  // (found from outside, with the check removed: the node was sent evm_mine).
  {
    title: "json_extras text that is not one JSON value",
    rpc: EthService.method.call,
    request: () => create(CallRequestSchema, { transaction: { jsonExtras: { unknownFields: { z: '1}],"method":"evm_mine","params":[],"x":[{"y":1' } } } }),
    names: ['transaction.jsonExtras.unknownFields["z"]', "not valid JSON text"],
  },
  {
    title: "a state override's storage value of 31 bytes",
    rpc: EthService.method.call,
    request: () =>
      create(CallRequestSchema, {
        transaction: { to: new Uint8Array(20) },
        stateOverride: { accounts: [{ address: new Uint8Array(20), override: { stateDiff: { slots: [{ slot: new Uint8Array(32), value: new Uint8Array(31) }] } } }] },
      }),
    names: ["slots[0].value", "want 32 bytes, got 31"],
  },
  {
    title: "a topic of 31 bytes",
    rpc: EthService.method.getLogs,
    request: () => create(GetLogsRequestSchema, { filter: { topics: [{ anyOf: [new Uint8Array(31)] }] } }),
    names: ["filter.topics[0]", "want 32 bytes"],
  },  // What grpcurl and buf curl send for JSON bytes written as 0x hex: the base64 reading of the text (found from outside).
  {
    title: "an address written as 0x hex in a tool's JSON (read as base64: 31 bytes)",
    rpc: EthService.method.getBalance,
    request: () => create(GetBalanceRequestSchema, { address: Buffer.from(`0x${"70997970c51812dc3a010c7d01b50e0d17dc79c8"}`, "base64") }),
    names: ['address: want 20 bytes, got 31: these bytes are base64 of "0x70997970c51812dc…"; in JSON, bytes are base64, not 0x hex'],
  },
  {
    title: "a topic written as 0X hex in a tool's JSON",
    rpc: EthService.method.getLogs,
    request: () => create(GetLogsRequestSchema, { filter: { topics: [{ anyOf: [Buffer.from(`0X${"ab".repeat(32)}`, "base64")] }] } }),
    names: ['filter.topics[0]', 'want 32 bytes, got 49: these bytes are base64 of "0Xabababababababab…"'],
  },
];

describe("typed path: INVALID_ARGUMENT naming the field, nothing sent upstream", () => {
  for (const c of typedCases) {
    it(`grpc-js: ${c.title}`, async () => {
      await withoutUpstreamTraffic(async () => {
        const err = await grpcErrorOf(grpcJs.call(c.rpc, c.request()));
        expect(err.code).toBe(GrpcStatus.INVALID_ARGUMENT);
        const detail = jsonRpcErrorOfGrpc(err);
        expect(detail.code).toBe(-32602n);
        for (const text of c.names) expect(detail.message).toContain(text);
      });
    });

    it(`connect-es: ${c.title}`, async () => {
      await withoutUpstreamTraffic(async () => {
        const err = await connectErrorOf(connect.call(c.rpc, c.request()));
        expect(err.code).toBe(Code.InvalidArgument);
        for (const text of c.names) expect(err.rawMessage).toContain(text);
        const detail = jsonRpcErrorOfConnect(err);
        expect(detail.code).toBe(-32602n);
        expect(detail.message).toBe(err.rawMessage);
      });
    });
  }
});

describe("after all the bad input", () => {
  it("the process still serves both front doors", async () => {
    const reply = await postJson(ng.rpcUrl, { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] });
    expect((reply.json as JsonRpcReply).result).toBe("0x7a69");
    const typed = await grpcJs.call<{ chainId?: bigint } & Message>(EthService.method.chainId, create(ChainIdRequestSchema));
    expect(typed.chainId).toBe(31337n);
  });
});

describe("a proto JSON caller", () => {
  const connectJson = (rpc: string, body: unknown) =>
    fetch(`${ng.url}/${EthService.typeName}/${rpc}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": ng.key },
      body: JSON.stringify(body),
    });

  it("writing bytes as 0x hex is told they are base64, where base64 would read other bytes (found from outside)", async () => {
    // "0x6d4ce63c" read as base64 is d31e9de1c7badd: a call to another selector, answered without a word.
    const cases: [string, unknown, string][] = [
      ["Call", { transaction: { to: Buffer.alloc(20, 0x44).toString("base64"), data: "0x6d4ce63c" } }, 'transaction.data: "0x6d4ce63c" is 0x hex; in JSON, bytes are base64 (these bytes are "bUzmPA==")'],
      ["Call", { transaction: { data: "0x" } }, 'transaction.data: "0x" is 0x hex for no bytes; in JSON, bytes are base64 (no bytes is "")'],
      ["GetBalance", { address: `0x${"44".repeat(20)}` }, 'address: "0x4444444444444444…" is 0x hex; in JSON, bytes are base64 (these bytes are "RERERERERERERERERERERE…")'],
      ["GetLogs", { filter: { topics: [{ anyOf: [`0X${"ab".repeat(32)}`] }] } }, 'filter.topics[0].anyOf[0]: "0Xabababababababab…" is 0x hex; in JSON, bytes are base64 (these bytes are "q6urq6urq6urq6urq6urq6…")'],
      ["Call", { transaction: { data: "0x123" } }, 'transaction.data: "0x123" is 0x hex; in JSON, bytes are base64'],
    ];
    for (const [rpc, body, message] of cases) {
      const res = await connectJson(rpc, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(((await res.json()) as { message: string }).message).toBe(message);
    }
    // The same bytes in base64 are read; so is base64 that only looks like hex, as a proto JSON writer pads it.
    expect((await connectJson("Call", { transaction: { to: Buffer.alloc(20, 0x44).toString("base64"), data: "bUzmPA==" } })).status).toBe(200);
    expect(Buffer.from("0x12", "base64")).toHaveLength(3);
    expect((await connectJson("Call", { transaction: { to: Buffer.alloc(20, 0x44).toString("base64"), data: "0x12" } })).status).toBe(200);
  });

  /** One length-prefixed message: flag byte, big-endian length, the bytes. */
  const envelope = (json: unknown, compressed = false): Buffer => {
    const bytes = compressed ? gzipSync(JSON.stringify(json)) : Buffer.from(JSON.stringify(json));
    const head = Buffer.alloc(5);
    head[0] = compressed ? 1 : 0;
    head.writeUInt32BE(bytes.length, 1);
    return Buffer.concat([head, bytes]);
  };
  const HEX_ADDRESS = `0x${"44".repeat(20)}`;
  const ADDRESS_REFUSAL = 'address: "0x4444444444444444…" is 0x hex; in JSON, bytes are base64 (these bytes are "RERERERERERERERERERERE…")';

  it("the same checks hold where Connect's own handler reads the JSON: a compressed POST, gRPC-Web and gRPC with the JSON codec, and streams (found from outside)", async () => {
    await withoutUpstreamTraffic(async () => {
      const compressed = await fetch(`${ng.url}/${EthService.typeName}/GetBalance`, {
        method: "POST",
        headers: { "content-type": "application/json", "content-encoding": "gzip", "x-api-key": ng.key },
        body: gzipSync(JSON.stringify({ address: HEX_ADDRESS })),
      });
      expect(compressed.status).toBe(400);
      expect(await compressed.json()).toEqual({ code: "invalid_argument", message: ADDRESS_REFUSAL });

      const enumInCompressed = await fetch(`${ng.url}/${EthService.typeName}/GetBlockByNumber`, {
        method: "POST",
        headers: { "content-type": "application/json", "content-encoding": "gzip", "x-api-key": ng.key },
        body: gzipSync(JSON.stringify({ block: { tag: "latest" } })),
      });
      expect(enumInCompressed.status).toBe(400);
      expect(((await enumInCompressed.json()) as { message: string }).message).toContain('as "BLOCK_TAG_LATEST"');

      for (const compressedMessage of [false, true]) {
        const grpcWeb = await fetch(`${ng.url}/${EthService.typeName}/GetBalance`, {
          method: "POST",
          headers: { "content-type": "application/grpc-web+json", "x-api-key": ng.key, ...(compressedMessage ? { "grpc-encoding": "gzip" } : {}) },
          body: envelope({ address: HEX_ADDRESS }, compressedMessage),
        });
        const trailer = Buffer.from(await grpcWeb.arrayBuffer()).toString("latin1");
        expect(trailer).toContain("grpc-status: 3");
        expect(decodeURIComponent(/grpc-message: (.*)\r\n/.exec(trailer)?.[1] ?? "")).toBe(ADDRESS_REFUSAL);
      }

      const grpcJson = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
        const session = http2.connect(ng.url);
        const stream = session.request({ ":method": "POST", ":path": `/${EthService.typeName}/GetBalance`, "content-type": "application/grpc+json", te: "trailers", "x-api-key": ng.key });
        let head: http2.IncomingHttpHeaders = {};
        stream.on("response", (h) => (head = h));
        stream.on("trailers", (t) => (head = { ...head, ...t }));
        stream.on("error", reject);
        stream.resume();
        stream.on("close", () => (session.close(), resolve(head)));
        stream.end(envelope({ address: HEX_ADDRESS }));
      });
      expect(grpcJson["grpc-status"]).toBe("3");
      expect(decodeURIComponent(String(grpcJson["grpc-message"]))).toBe(ADDRESS_REFUSAL);

      // A server stream's one request: a log filter's address, and a range's tag.
      const streams: [string, unknown, string][] = [
        ["SubscribeLogs", { filter: { address: [HEX_ADDRESS] } }, ADDRESS_REFUSAL.replace("address:", "filter.address[0]:")],
        ["StreamLogs", { filter: { fromBlock: { tag: "earliest" } } }, 'filter.fromBlock.tag: "earliest" is not a BlockTag value (in JSON, an enum value is named in full, as "BLOCK_TAG_EARLIEST")'],
      ];
      for (const [rpc, request, message] of streams) {
        const res = await fetch(`${ng.url}/${EthService.typeName}/${rpc}`, {
          method: "POST",
          headers: { "content-type": "application/connect+json", "x-api-key": ng.key },
          body: envelope(request),
        });
        const bytes = Buffer.from(await res.arrayBuffer());
        expect(bytes[0], rpc).toBe(2); // the end-of-stream message, and nothing before it
        expect(JSON.parse(bytes.subarray(5).toString("utf8"))).toEqual({ error: { code: "invalid_argument", message } });
      }
    });
  });

  it("what a proto JSON writer sends on those paths is read as before: connect-es with the JSON codec, and base64 that looks like hex", async () => {
    for (const protocol of ["grpc-web", "grpc"] as const) {
      const client = connectClient(ng.url, EthService, ng.key, protocol, "json");
      const balance = await client.getBalance(create(GetBalanceRequestSchema, { address: Buffer.from(ADDRESS.slice(2), "hex"), block: { kind: { case: "tag", value: BlockTag.LATEST } } }));
      expect(balance.balance).toBeDefined();
    }
    // "0x12" is padded base64 (3 bytes): read as base64 on a compressed POST too.
    const padded = await fetch(`${ng.url}/${EthService.typeName}/Call`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip", "x-api-key": ng.key },
      body: gzipSync(JSON.stringify({ transaction: { to: Buffer.alloc(20, 0x44).toString("base64"), data: "0x12" } })),
    });
    expect(padded.status).toBe(200);
  });

  it('writing a block tag as the node spells it ("latest") is told how the enum is named (found from outside)', async () => {
    const res = await fetch(`${ng.url}/${EthService.typeName}/GetBlockByNumber`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": ng.key },
      body: JSON.stringify({ block: { tag: "latest" } }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toBe('block.tag: "latest" is not a BlockTag value (in JSON, an enum value is named in full, as "BLOCK_TAG_LATEST")');
    const named = await fetch(`${ng.url}/${EthService.typeName}/GetBlockByNumber`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": ng.key },
      body: JSON.stringify({ block: { tag: "BLOCK_TAG_LATEST" } }),
    });
    expect(named.status).toBe(200);
  });
});
