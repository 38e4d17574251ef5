/**
 * Uncles, which Anvil never produces: nodegate in front of a fixture upstream
 * answering with a recorded pre-London mainnet block that has an uncle. Both
 * uncle methods through grpc-js, connect-es and viem; typed answers must
 * re-encode to exactly the recorded JSON, and an index past the uncles is
 * a null result.
 */
import { create, type Message } from "@bufbuild/protobuf";
import { bytesToBigInt, bytesToHex, createPublicClient, type Hex, hexToBytes, http, type PublicClient } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Block } from "../../gen/nodegate/eth/v1/block_pb.js";
import {
  EthService,
  GetBlockByHashRequestSchema,
  type GetBlockByHashResponse,
  GetBlockByNumberRequestSchema,
  type GetBlockByNumberResponse,
  GetUncleByBlockHashAndIndexRequestSchema,
  type GetUncleByBlockHashAndIndexResponse,
  GetUncleByBlockNumberAndIndexRequestSchema,
  type GetUncleByBlockNumberAndIndexResponse,
} from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import { type FixtureUpstream, loadFixture, type Recording, startFixtureUpstream } from "../support/fixture-upstream.js";
import { postJson, resultText } from "../support/json-rpc.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { connectCaller, grpcJsCaller, type TypedCaller } from "../support/typed-callers.js";

const fixture = loadFixture("mainnet-uncles.json");
const table = createMethodTable();
const m = EthService.method;

function recorded(method: string, params: unknown[]): Record<string, unknown> {
  const r = fixture.recordings.find((x: Recording) => x.method === method && JSON.stringify(x.params) === JSON.stringify(params));
  if (r === undefined) throw new Error(`no recording of ${method} ${JSON.stringify(params)}`);
  return r.result as Record<string, unknown>;
}

const BLOCK_NUMBER = 0x768965n;
const block = recorded("eth_getBlockByNumber", ["0x768965", false]);
const BLOCK_HASH = block.hash as Hex;
const UNCLE_HASH = (block.uncles as Hex[])[0] as Hex;
const uncle = recorded("eth_getUncleByBlockNumberAndIndex", ["0x768965", "0x0"]);
const otherUncle = recorded("eth_getUncleByBlockNumberAndIndex", ["0x7689d2", "0x0"]);

/** The keys geth writes for a pre-London block (Go map keys, sorted). */
const GETH_BLOCK_KEYS = [
  "difficulty",
  "extraData",
  "gasLimit",
  "gasUsed",
  "hash",
  "logsBloom",
  "miner",
  "mixHash",
  "nonce",
  "number",
  "parentHash",
  "receiptsRoot",
  "sha3Uncles",
  "size",
  "stateRoot",
  "timestamp",
  "totalDifficulty",
  "transactions",
  "transactionsRoot",
  "uncles",
];
const GETH_UNCLE_KEYS = GETH_BLOCK_KEYS.filter((k) => k !== "transactions");

const DATA_LENGTHS: Record<string, number> = {
  hash: 32,
  parentHash: 32,
  sha3Uncles: 32,
  stateRoot: 32,
  transactionsRoot: 32,
  receiptsRoot: 32,
  mixHash: 32,
  miner: 20,
  logsBloom: 256,
  nonce: 8,
};
const QUANTITY_KEYS = ["difficulty", "gasLimit", "gasUsed", "number", "size", "timestamp", "totalDifficulty"];

let upstream: FixtureUpstream;
let ng: TestNodegate;
let viem: PublicClient;
const callers: TypedCaller[] = [];

beforeAll(async () => {
  upstream = await startFixtureUpstream(fixture.recordings);
  ng = await startNodegate({ upstreamUrl: upstream.url });
  callers.push(grpcJsCaller(ng, EthService, ng.key), connectCaller(ng, EthService, ng.key));
  viem = createPublicClient({ transport: http(ng.rpcUrl) }) as PublicClient;
});

afterAll(async () => {
  for (const caller of callers) caller.close();
  await ng?.close();
  await upstream?.close();
});

describe("the recorded fixture is shaped like geth's answer", () => {
  for (const [title, value, keys] of [
    ["the block", block, GETH_BLOCK_KEYS],
    ["its uncle", uncle, GETH_UNCLE_KEYS],
    ["another block's uncle", otherUncle, GETH_UNCLE_KEYS],
  ] as const) {
    it(`${title}: geth's key set, fixed-length data and canonical quantities`, () => {
      expect(Object.keys(value)).toEqual(keys);
      for (const [key, length] of Object.entries(DATA_LENGTHS)) {
        expect(value[key], key).toMatch(new RegExp(`^0x[0-9a-f]{${length * 2}}$`));
      }
      for (const key of QUANTITY_KEYS) expect(value[key], key).toMatch(/^0x(0|[1-9a-f][0-9a-f]*)$/);
      expect(value.extraData).toMatch(/^0x([0-9a-f]{2})*$/);
    });
  }

  it("the block lists the uncle, which is one block older", () => {
    expect(block.uncles).toEqual([uncle.hash]);
    expect(BigInt(uncle.number as string)).toBe(BLOCK_NUMBER - 1n);
    expect(uncle.uncles).toEqual([]);
    expect(block.nonce).toMatch(/^0x0/);
  });
});

/** The typed uncle, re-encoded with the method table, is the recorded JSON. */
function expectReEncodes(method: string, response: Message, json: unknown): void {
  const text = table.byJsonRpc(method)?.result.encode(response) ?? "";
  expect(JSON.parse(text)).toEqual(json);
}

for (const index of [0, 1]) {
  const name = index === 0 ? "grpc-js" : "connect-es";
  describe(`typed path through ${name}`, () => {
    const caller = () => callers[index] as TypedCaller;

    it("eth_getBlockByNumber: the pre-London block and its uncle hash", async () => {
      const res = await caller().call<GetBlockByNumberResponse>(
        m.getBlockByNumber,
        create(GetBlockByNumberRequestSchema, { block: { kind: { case: "number", value: BLOCK_NUMBER } } }),
      );
      const b = res.block as Block;
      expect(bytesToHex(b.hash ?? new Uint8Array())).toBe(BLOCK_HASH);
      expect(b.uncles.map((u) => bytesToHex(u))).toEqual([UNCLE_HASH]);
      expect(bytesToHex(b.nonce ?? new Uint8Array())).toBe("0x0a6ac00001626799");
      expect(b.baseFeePerGas).toBeUndefined();
      expect(bytesToBigInt(b.totalDifficulty?.value ?? new Uint8Array())).toBe(0x229ad3b36bcee81c393n);
      expect(b.transactions?.hashes).toHaveLength(4);
      expectReEncodes("eth_getBlockByNumber", res, block);
    });

    it("eth_getBlockByHash: the same block", async () => {
      const res = await caller().call<GetBlockByHashResponse>(
        m.getBlockByHash,
        create(GetBlockByHashRequestSchema, { blockHash: hexToBytes(BLOCK_HASH) }),
      );
      expectReEncodes("eth_getBlockByHash", res, block);
    });

    it("eth_getUncleByBlockNumberAndIndex: the uncle, without a transactions key", async () => {
      const res = await caller().call<GetUncleByBlockNumberAndIndexResponse>(
        m.getUncleByBlockNumberAndIndex,
        create(GetUncleByBlockNumberAndIndexRequestSchema, { block: { kind: { case: "number", value: BLOCK_NUMBER } }, index: 0n }),
      );
      const u = res.uncle as Block;
      expect(bytesToHex(u.hash ?? new Uint8Array())).toBe(UNCLE_HASH);
      expect(u.number).toBe(BLOCK_NUMBER - 1n);
      expect(u.transactions).toBeUndefined();
      expect(u.uncles).toEqual([]);
      expect(bytesToBigInt(u.difficulty?.value ?? new Uint8Array())).toBe(0x76b123df93230n);
      expectReEncodes("eth_getUncleByBlockNumberAndIndex", res, uncle);
    });

    it("eth_getUncleByBlockHashAndIndex: the same uncle", async () => {
      const res = await caller().call<GetUncleByBlockHashAndIndexResponse>(
        m.getUncleByBlockHashAndIndex,
        create(GetUncleByBlockHashAndIndexRequestSchema, { blockHash: hexToBytes(BLOCK_HASH), index: 0n }),
      );
      expect(bytesToHex(res.uncle?.hash ?? new Uint8Array())).toBe(UNCLE_HASH);
      expectReEncodes("eth_getUncleByBlockHashAndIndex", res, uncle);
    });

    it("an uncle whose own header names uncles (sha3Uncles not empty, uncles [])", async () => {
      const res = await caller().call<GetUncleByBlockNumberAndIndexResponse>(
        m.getUncleByBlockNumberAndIndex,
        create(GetUncleByBlockNumberAndIndexRequestSchema, { block: { kind: { case: "number", value: 0x7689d2n } }, index: 0n }),
      );
      expect(bytesToHex(res.uncle?.sha3Uncles ?? new Uint8Array())).toBe(otherUncle.sha3Uncles);
      expectReEncodes("eth_getUncleByBlockNumberAndIndex", res, otherUncle);
    });

    it("an index past the block's only uncle is a null result on both methods", async () => {
      const byNumber = await caller().call<GetUncleByBlockNumberAndIndexResponse>(
        m.getUncleByBlockNumberAndIndex,
        create(GetUncleByBlockNumberAndIndexRequestSchema, { block: { kind: { case: "number", value: BLOCK_NUMBER } }, index: 1n }),
      );
      const byHash = await caller().call<GetUncleByBlockHashAndIndexResponse>(
        m.getUncleByBlockHashAndIndex,
        create(GetUncleByBlockHashAndIndexRequestSchema, { blockHash: hexToBytes(BLOCK_HASH), index: 1n }),
      );
      expect(byNumber.uncle).toBeUndefined();
      expect(byHash.uncle).toBeUndefined();
    });
  });
}

describe("native path", () => {
  for (const [method, params] of [
    ["eth_getUncleByBlockNumberAndIndex", ["0x768965", "0x0"]],
    ["eth_getUncleByBlockHashAndIndex", [BLOCK_HASH, "0x0"]],
    ["eth_getBlockByNumber", ["0x768965", false]],
  ] as const) {
    it(`${method} returns the node's result text byte for byte`, async () => {
      const body = { jsonrpc: "2.0", id: 3, method, params };
      const [direct, viaNodegate] = await Promise.all([postJson(upstream.url, body), postJson(ng.rpcUrl, body)]);
      expect(resultText(viaNodegate.text)).toBe(resultText(direct.text));
      expect(JSON.parse(resultText(viaNodegate.text))).toEqual(recorded(method, [...params]));
    });
  }

  it("mixed-case hex params are accepted and forwarded", async () => {
    const reply = await postJson(ng.rpcUrl, { jsonrpc: "2.0", id: 4, method: "eth_getUncleByBlockNumberAndIndex", params: ["0x7689D2", "0x0"] });
    expect((reply.json as { result: unknown }).result).toEqual(otherUncle);
  });

  it("an index past the only uncle: \"result\":null", async () => {
    for (const [method, params] of [
      ["eth_getUncleByBlockNumberAndIndex", ["0x768965", "0x1"]],
      ["eth_getUncleByBlockHashAndIndex", [BLOCK_HASH, "0x1"]],
    ] as const) {
      const reply = await postJson(ng.rpcUrl, { jsonrpc: "2.0", id: 8, method, params });
      expect(reply.text).toBe('{"jsonrpc":"2.0","id":8,"result":null}');
    }
  });

  it("viem reads the block's uncles and the uncle", async () => {
    const b = await viem.getBlock({ blockNumber: BLOCK_NUMBER });
    expect(b.uncles).toEqual([UNCLE_HASH]);
    expect(b.baseFeePerGas).toBeNull();
    expect(b.totalDifficulty).toBe(0x229ad3b36bcee81c393n);
    const u = (await viem.request({
      method: "eth_getUncleByBlockHashAndIndex" as never,
      params: [BLOCK_HASH, "0x0"] as never,
    })) as { hash: Hex; number: Hex };
    expect(u.hash).toBe(UNCLE_HASH);
    expect(BigInt(u.number)).toBe(BLOCK_NUMBER - 1n);
  });
});

describe("the fixture upstream behaves like a node on what it was not asked before", () => {
  it("an unknown method is -32601", async () => {
    const reply = await postJson(upstream.url, { jsonrpc: "2.0", id: 1, method: "eth_mining", params: [] });
    expect((reply.json as { error: { code: number; message: string } }).error).toEqual({
      code: -32601,
      message: "the method eth_mining does not exist/is not available",
    });
  });
});
