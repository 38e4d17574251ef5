/**
 * A Starknet JSON-RPC node for tests, answering from the fixtures: no
 * Starknet node installs from the registries we reach. It answers
 * starknet_getTransactionByBlockIdAndIndex the way pathfinder and juno do:
 * named or positional params, BLOCK_NOT_FOUND (24) for an unknown block,
 * INVALID_TXN_INDEX (27) past the end, proof_facts on INVOKE v3 only with
 * INCLUDE_PROOF_FACTS, -32602 for malformed params and -32601 for any other
 * method. Listens on 127.0.0.1 only and records what it was sent.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { STARKNET_FIXTURES } from "./starknet-fixtures.js";

export interface StarknetBlock {
  /** Block hash (a felt). */
  hash: string;
  number: number;
  transactions: readonly Readonly<Record<string, unknown>>[];
}

export interface StarknetFixtureUpstreamOptions {
  /** Default: one block holding every fixture, in STARKNET_FIXTURES order. */
  blocks?: StarknetBlock[];
}

export interface RecordedRequest {
  method: string;
  /** The params exactly as sent (text). */
  paramsText: string;
}

export interface StarknetFixtureUpstream {
  url: string;
  /** The chain the upstream serves. */
  blocks: readonly StarknetBlock[];
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/** The block that holds every fixture by default. */
export const FIXTURE_BLOCK: StarknetBlock = {
  hash: "0x3f1c8a6b2e4d7a90c5b1e2f3a4d5c6b7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b",
  number: 812345,
  transactions: STARKNET_FIXTURES.map((f) => f.json),
};

const TAGS = new Set(["latest", "l1_accepted", "pre_confirmed", "pending"]);

const BLOCK_NOT_FOUND = { code: 24, message: "Block not found" };
const INVALID_TXN_INDEX = { code: 27, message: "Invalid transaction index in a block" };

class RpcError extends Error {
  constructor(readonly error: { code: number; message: string; data?: unknown }) {
    super(error.message);
  }
}

function invalidParams(reason: string): RpcError {
  return new RpcError({ code: -32602, message: "Invalid params", data: { reason } });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function readParams(params: unknown): { blockId: unknown; index: unknown; flags: unknown } {
  if (Array.isArray(params)) {
    if (params.length < 2 || params.length > 3) throw invalidParams("expected 2 or 3 positional params");
    return { blockId: params[0], index: params[1], flags: params[2] };
  }
  if (isObject(params)) {
    for (const key of Object.keys(params)) {
      if (key !== "block_id" && key !== "index" && key !== "response_flags") throw invalidParams(`unknown field \`${key}\``);
    }
    return { blockId: params.block_id, index: params.index, flags: params.response_flags };
  }
  throw invalidParams("params must be an array or an object");
}

function findBlock(blocks: readonly StarknetBlock[], blockId: unknown): StarknetBlock {
  const latest = blocks.reduce<StarknetBlock | undefined>((a, b) => (a === undefined || b.number > a.number ? b : a), undefined);
  if (typeof blockId === "string") {
    if (!TAGS.has(blockId)) throw invalidParams(`unknown block tag ${blockId}`);
    if (latest === undefined) throw new RpcError(BLOCK_NOT_FOUND);
    return latest;
  }
  if (isObject(blockId) && Object.keys(blockId).length === 1) {
    if (typeof blockId.block_hash === "string") {
      const wanted = BigInt(blockId.block_hash);
      const block = blocks.find((b) => BigInt(b.hash) === wanted);
      if (block === undefined) throw new RpcError(BLOCK_NOT_FOUND);
      return block;
    }
    if (typeof blockId.block_number === "number" && Number.isInteger(blockId.block_number)) {
      const block = blocks.find((b) => b.number === blockId.block_number);
      if (block === undefined) throw new RpcError(BLOCK_NOT_FOUND);
      return block;
    }
  }
  throw invalidParams("invalid block_id");
}

function transactionAt(blocks: readonly StarknetBlock[], params: unknown): Readonly<Record<string, unknown>> {
  const { blockId, index, flags } = readParams(params);
  if (typeof index !== "number" || !Number.isInteger(index) || index < 0) throw invalidParams("index must be a non-negative integer");
  if (flags !== undefined && (!Array.isArray(flags) || flags.some((f) => f !== "INCLUDE_PROOF_FACTS"))) {
    throw invalidParams("unknown response flag");
  }
  const block = findBlock(blocks, blockId);
  const txn = block.transactions[index];
  if (txn === undefined) throw new RpcError(INVALID_TXN_INDEX);
  const isInvokeV3 = txn.type === "INVOKE" && (txn.version === "0x3" || txn.version === "0x100000000000000000000000000000003");
  if (!isInvokeV3) return txn;
  if (flags?.includes("INCLUDE_PROOF_FACTS")) return { ...txn, proof_facts: txn.proof_facts ?? [] };
  const { proof_facts: _omitted, ...withoutProofFacts } = txn;
  return withoutProofFacts;
}

function answer(blocks: readonly StarknetBlock[], request: unknown, requests: RecordedRequest[]): string {
  const r = isObject(request) ? request : {};
  const id = JSON.stringify(r.id ?? null);
  try {
    if (!isObject(request) || request.jsonrpc !== "2.0" || typeof request.method !== "string") {
      throw new RpcError({ code: -32600, message: "Invalid request" });
    }
    requests.push({ method: request.method, paramsText: JSON.stringify(request.params) });
    // SN_SEPOLIA, for a method outside the typed table that a configuration passes through.
    if (request.method === "starknet_chainId") return `{"jsonrpc":"2.0","id":${id},"result":"0x534e5f5345504f4c4941"}`;
    if (request.method !== "starknet_getTransactionByBlockIdAndIndex") throw new RpcError({ code: -32601, message: "Method not found" });
    return `{"jsonrpc":"2.0","id":${id},"result":${JSON.stringify(transactionAt(blocks, request.params))}}`;
  } catch (err) {
    if (err instanceof RpcError) return `{"jsonrpc":"2.0","id":${id},"error":${JSON.stringify(err.error)}}`;
    throw err;
  }
}

export async function startStarknetFixtureUpstream(options: StarknetFixtureUpstreamOptions = {}): Promise<StarknetFixtureUpstream> {
  const blocks = options.blocks ?? [FIXTURE_BLOCK];
  const requests: RecordedRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let body: string;
      try {
        const parsed = JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
        body = Array.isArray(parsed) ? `[${parsed.map((p) => answer(blocks, p, requests)).join(",")}]` : answer(blocks, parsed, requests);
      } catch {
        body = '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}';
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v3/upstream-key`,
    blocks,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
