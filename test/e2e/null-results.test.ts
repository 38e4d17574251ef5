/**
 * A method that finds nothing is a successful call with a null result: the
 * native path writes "result":null, the typed path succeeds with the result
 * field unset (never NOT_FOUND), on every typed client.
 */
import { create, type DescMethod, type Message } from "@bufbuild/protobuf";
import { type Hex, hexToBytes, http, createPublicClient, type PublicClient } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  EthService,
  GetBlockByHashRequestSchema,
  GetBlockByNumberRequestSchema,
  GetBlockReceiptsRequestSchema,
  GetLogsRequestSchema,
  GetTransactionByBlockNumberAndIndexRequestSchema,
  GetTransactionByHashRequestSchema,
  GetTransactionReceiptRequestSchema,
  GetUncleByBlockNumberAndIndexRequestSchema,
} from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import { postJson } from "../support/json-rpc.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { connectCaller, grpcJsCaller, type TypedCaller } from "../support/typed-callers.js";

const UNKNOWN_HASH: Hex = `0x${"5a".repeat(32)}`;
const FUTURE_BLOCK = 0xffffffn;

let anvil: AnvilNode;
let ng: TestNodegate;
let viem: PublicClient;
const callers: TypedCaller[] = [];
const table = createMethodTable();

beforeAll(async () => {
  anvil = await startAnvil();
  ng = await startNodegate({ upstreamUrl: anvil.url });
  callers.push(
    grpcJsCaller(ng, EthService, ng.key),
    connectCaller(ng, EthService, ng.key, "connect"),
    connectCaller(ng, EthService, ng.key, "grpc-web"),
  );
  viem = createPublicClient({ transport: http(ng.rpcUrl) }) as PublicClient;
});

afterAll(async () => {
  for (const caller of callers) caller.close();
  await ng?.close();
  await anvil?.stop();
});

interface NullCase {
  title: string;
  rpc: DescMethod;
  params: unknown[];
  request(): Message;
  /** The response field that holds the result. */
  field: string;
}

const nullCases: NullCase[] = [
  {
    title: "eth_getBlockByHash of an unknown hash",
    rpc: EthService.method.getBlockByHash,
    params: [UNKNOWN_HASH, false],
    request: () => create(GetBlockByHashRequestSchema, { blockHash: hexToBytes(UNKNOWN_HASH) }),
    field: "block",
  },
  {
    title: "eth_getBlockByNumber of a future block",
    rpc: EthService.method.getBlockByNumber,
    params: [`0x${FUTURE_BLOCK.toString(16)}`, true],
    request: () => create(GetBlockByNumberRequestSchema, { block: { kind: { case: "number", value: FUTURE_BLOCK } }, fullTransactions: true }),
    field: "block",
  },
  {
    title: "eth_getTransactionReceipt of an unknown transaction",
    rpc: EthService.method.getTransactionReceipt,
    params: [UNKNOWN_HASH],
    request: () => create(GetTransactionReceiptRequestSchema, { transactionHash: hexToBytes(UNKNOWN_HASH) }),
    field: "receipt",
  },
  {
    title: "eth_getTransactionByHash of an unknown transaction",
    rpc: EthService.method.getTransactionByHash,
    params: [UNKNOWN_HASH],
    request: () => create(GetTransactionByHashRequestSchema, { transactionHash: hexToBytes(UNKNOWN_HASH) }),
    field: "transaction",
  },
  {
    title: "eth_getTransactionByBlockNumberAndIndex past the genesis block's (empty) transactions",
    rpc: EthService.method.getTransactionByBlockNumberAndIndex,
    params: ["0x0", "0x5"],
    request: () => create(GetTransactionByBlockNumberAndIndexRequestSchema, { block: { kind: { case: "number", value: 0n } }, index: 5n }),
    field: "transaction",
  },
  {
    title: "eth_getBlockReceipts of a future block",
    rpc: EthService.method.getBlockReceipts,
    params: [`0x${FUTURE_BLOCK.toString(16)}`],
    request: () => create(GetBlockReceiptsRequestSchema, { block: { kind: { case: "number", value: FUTURE_BLOCK } } }),
    field: "blockReceipts",
  },
  {
    title: "eth_getUncleByBlockNumberAndIndex of a block without uncles",
    rpc: EthService.method.getUncleByBlockNumberAndIndex,
    params: ["0x0", "0x0"],
    request: () => create(GetUncleByBlockNumberAndIndexRequestSchema, { block: { kind: { case: "number", value: 0n } }, index: 0n }),
    field: "uncle",
  },
];

describe("native path: \"result\":null", () => {
  for (const c of nullCases) {
    it(c.title, async () => {
      const method = table.byRpc(c.rpc)?.jsonrpcMethod;
      const reply = await postJson(ng.rpcUrl, { jsonrpc: "2.0", id: 9, method, params: c.params });
      expect(reply.status).toBe(200);
      expect(reply.text).toBe('{"jsonrpc":"2.0","id":9,"result":null}');
    });
  }

  it("viem gets null, and its not-found errors for blocks and receipts", async () => {
    expect(await viem.request({ method: "eth_getBlockByHash", params: [UNKNOWN_HASH, false] })).toBeNull();
    await expect(viem.getBlock({ blockHash: UNKNOWN_HASH })).rejects.toThrow(/could not be found/);
    await expect(viem.getTransactionReceipt({ hash: UNKNOWN_HASH })).rejects.toThrow(/could not be found/);
  });
});

describe("typed path: success with the result field unset", () => {
  for (const c of nullCases) {
    it(c.title, async () => {
      for (const caller of callers) {
        const response = (await caller.call(c.rpc, c.request())) as unknown as Record<string, unknown>;
        expect(response.$typeName, caller.name).toBe(c.rpc.output.typeName);
        expect(response[c.field], caller.name).toBeUndefined();
        expect(table.byRpc(c.rpc)?.result.encode(response as unknown as Message)).toBe("null");
      }
    });
  }

  it("eth_getLogs with no match is an empty list, not null", async () => {
    const nobody = `0x${"77".repeat(20)}` as Hex;
    const reply = await postJson(ng.rpcUrl, { jsonrpc: "2.0", id: 9, method: "eth_getLogs", params: [{ address: nobody, fromBlock: "0x0" }] });
    expect(reply.text).toBe('{"jsonrpc":"2.0","id":9,"result":[]}');
    for (const caller of callers) {
      const filter = { address: [hexToBytes(nobody)], fromBlock: { kind: { case: "number" as const, value: 0n } } };
      const response = await caller.call(EthService.method.getLogs, create(GetLogsRequestSchema, { filter }));
      expect((response as unknown as { logs: unknown[] }).logs, caller.name).toEqual([]);
      expect(table.byRpc(EthService.method.getLogs)?.result.encode(response), caller.name).toBe("[]");
    }
  });
});
