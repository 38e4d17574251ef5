/**
 * The calls the benchmark sends, prepared once as JSON-RPC bodies (native
 * path, direct, reference proxy) and as encoded protobuf requests (gRPC and
 * Connect). Each call has a pool of distinct requests (different addresses,
 * block numbers, calldata), so neither the cache nor in-flight coalescing can
 * answer them: these are the uncached figures.
 */
import { create, type DescMessage, type DescMethod, getOption, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { EthService } from "../gen/nodegate/eth/v1/eth_service_pb.js";
import { BlockTag } from "../gen/nodegate/eth/v1/primitives_pb.js";
import { method as methodOption } from "../gen/nodegate/jsonrpc/v1/options_pb.js";
import { BLOCK_HASH, BLOCK_NUMBER } from "./bodies.js";

export interface CallSpec {
  name: string;
  /** What the call is, for the report. */
  label: string;
  json: Buffer[];
  /** gRPC path, /package.Service/Method */
  procedure: string;
  proto: Buffer[];
}

const POOL = 4096;
const m = EthService.method;

function procedure(rpc: DescMethod): string {
  return `/${EthService.typeName}/${rpc.name}`;
}

function jsonBody(method: string, params: unknown[], id: number): Buffer {
  return Buffer.from(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
}

function protoBody<D extends DescMessage>(schema: D, init: MessageInitShape<D>): Buffer {
  return Buffer.from(toBinary(schema, create(schema, init)));
}

const hex = (n: number | bigint) => `0x${n.toString(16)}`;
const bytes = (h: string) => Buffer.from(h.slice(2), "hex");
const address = (i: number) => `0x${(0x1000 + i).toString(16).padStart(40, "0")}`;
const latest = { kind: { case: "tag" as const, value: BlockTag.LATEST } };

function build(name: string, label: string, rpc: DescMethod, count: number, make: (i: number) => { params: unknown[]; proto: MessageInitShape<DescMessage> }): CallSpec {
  const json: Buffer[] = [];
  const proto: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const { params, proto: init } = make(i);
    json.push(jsonBody(getOption(rpc, methodOption), params, i + 1));
    proto.push(protoBody(rpc.input, init as never));
  }
  return { name, label, json, procedure: procedure(rpc), proto };
}

/** A small call validated through the method table: eth_getBalance(address, "latest"). */
export function smallCall(): CallSpec {
  return build("small", "eth_getBalance, distinct addresses", m.getBalance, POOL, (i) => ({
    params: [address(i), "latest"],
    proto: { address: bytes(address(i)), block: latest },
  }));
}

/** eth_call at latest with distinct calldata (balanceOf of distinct holders). */
export function ethCall(to: string): CallSpec {
  return build("call", "eth_call balanceOf(distinct)", m.call, POOL, (i) => {
    const data = `0x70a08231${address(i).slice(2).padStart(64, "0")}`;
    return { params: [{ to, data }, "latest"], proto: { transaction: { to: bytes(to), input: bytes(data) }, block: latest } };
  });
}

/** eth_getBlockByNumber(n, true) over `numbers` distinct blocks. */
export function blockCall(numbers: readonly number[], label: string): CallSpec {
  return build("block", label, m.getBlockByNumber, numbers.length, (i) => {
    const n = numbers[i] as number;
    return { params: [hex(n), true], proto: { block: { kind: { case: "number", value: BigInt(n) } }, fullTransactions: true } };
  });
}

/** eth_getLogs over distinct single-block ranges (the canned node answers 10,000 logs). */
export function logsCall(): CallSpec {
  return build("logs", "eth_getLogs, 10,000 logs (6.6 MiB)", m.getLogs, 1024, (i) => {
    const n = BLOCK_NUMBER + 1000 + i;
    return {
      params: [{ fromBlock: hex(n), toBlock: hex(n) }],
      proto: { filter: { fromBlock: { kind: { case: "number", value: BigInt(n) } }, toBlock: { kind: { case: "number", value: BigInt(n) } } } },
    };
  });
}

/** Canned-upstream blocks above its finalized block, so never cached. */
export function cannedBlockNumbers(): number[] {
  return Array.from({ length: 1024 }, (_, i) => BLOCK_NUMBER + 1000 + i);
}

/** Reads the canned node answers from a final block: what the cache serves. */
export function cacheableCalls(): CallSpec[] {
  const final = BLOCK_NUMBER;
  const one = <T>(f: (i: number) => T) => f;
  return [
    build("block-by-hash", "eth_getBlockByHash(final, true), 163 KiB", m.getBlockByHash, 1, one(() => ({
      params: [BLOCK_HASH, true],
      proto: { blockHash: bytes(BLOCK_HASH), fullTransactions: true },
    }))),
    build("receipt", "eth_getTransactionReceipt(final)", m.getTransactionReceipt, 1, one(() => ({
      params: [`0x${"ab".repeat(32)}`],
      proto: { transactionHash: bytes(`0x${"ab".repeat(32)}`) },
    }))),
    build("block-receipts", "eth_getBlockReceipts(final number), 20 receipts", m.getBlockReceipts, 1, one(() => ({
      params: [hex(final)],
      proto: { block: { kind: { case: "number", value: BigInt(final) } } },
    }))),
    build("logs-final", "eth_getLogs(final range, address), 100 logs", m.getLogs, 1, one(() => ({
      params: [{ fromBlock: hex(final - 50), toBlock: hex(final), address: address(7) }],
      proto: {
        filter: {
          fromBlock: { kind: { case: "number", value: BigInt(final - 50) } },
          toBlock: { kind: { case: "number", value: BigInt(final) } },
          address: [bytes(address(7))],
        },
      },
    }))),
  ];
}
