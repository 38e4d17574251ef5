/**
 * The soak's callers, one per front door, each a real client: fetch on the
 * native HTTP path (single calls and batches), the ws package on the native
 * WebSocket path (many calls in flight per connection, answers matched by
 * id), @grpc/grpc-js for gRPC and connect-es for the Connect protocol.
 * A call resolves with how its answer compares with what it must be.
 */
import { create, type DescMessage, fromBinary, type Message, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import WebSocket from "ws";
import {
  CallRequestSchema,
  type CallResponse,
  ChainIdRequestSchema,
  type ChainIdResponse,
  EthService,
  GetBalanceRequestSchema,
  type GetBalanceResponse,
  GetBlockByNumberRequestSchema,
  type GetBlockByNumberResponse,
} from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type Chain, CHAIN_ID, jsonRpcCall, nativeResultMatches, type Probe, SHA256_PRECOMPILE, sha256Hex } from "./workload.js";

/** ok: the right answer to this call; mismatch: an answer, but not to this call; error: an error answer. */
export type Verdict = { outcome: "ok" | "mismatch" | "error"; calls: number; detail?: string };

export interface Door {
  readonly name: string;
  call(probe: Probe): Promise<Verdict>;
  close(): Promise<void>;
}

interface JsonRpcAnswer {
  id?: unknown;
  result?: unknown;
  error?: { code: number; message: string };
}

function judgeNative(probe: Probe, answer: JsonRpcAnswer, id: number, chain: Chain): Verdict {
  if (answer.id !== id) return { outcome: "mismatch", calls: 1, detail: `id ${String(answer.id)} for ${id}` };
  if (answer.error) return { outcome: "error", calls: 1, detail: `${answer.error.code} ${answer.error.message}` };
  return nativeResultMatches(probe, answer.result, chain) ? { outcome: "ok", calls: 1 } : { outcome: "mismatch", calls: 1, detail: JSON.stringify(answer).slice(0, 200) };
}

let nextId = 1;

/** Native JSON-RPC over HTTP: every fifth call goes as a batch of three. */
export function nativeHttpDoor(rpcUrl: string, chain: Chain, nextProbe: () => Probe): Door {
  return {
    name: "native HTTP",
    async call(probe) {
      const batch = nextId % 5 === 0 ? [probe, nextProbe(), nextProbe()] : [probe];
      const ids = batch.map(() => nextId++);
      const bodies = batch.map((p, i) => ({ jsonrpc: "2.0", id: ids[i], ...jsonRpcCall(p, chain) }));
      const res = await fetch(rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(batch.length === 1 ? bodies[0] : bodies) });
      const text = await res.text();
      const answers = (batch.length === 1 ? [JSON.parse(text)] : JSON.parse(text)) as JsonRpcAnswer[];
      if (answers.length !== batch.length) return { outcome: "mismatch", calls: batch.length, detail: `${answers.length} answers to a batch of ${batch.length}` };
      const verdicts = batch.map((p, i) => judgeNative(p, answers[i] as JsonRpcAnswer, ids[i] as number, chain));
      const bad = verdicts.find((v) => v.outcome !== "ok");
      return bad ? { ...bad, calls: batch.length } : { outcome: "ok", calls: batch.length };
    },
    close: async () => {},
  };
}

/** Native JSON-RPC over one WebSocket, calls in flight at once, answers matched by id. */
export async function nativeWsDoor(wsUrl: string, chain: Chain): Promise<Door> {
  const socket = new WebSocket(wsUrl, { perMessageDeflate: false });
  const waiting = new Map<number, (answer: JsonRpcAnswer) => void>();
  let strays = 0;
  socket.on("message", (data: Buffer) => {
    const answer = JSON.parse(data.toString("utf8")) as JsonRpcAnswer;
    const resolve = typeof answer.id === "number" ? waiting.get(answer.id) : undefined;
    if (resolve === undefined) {
      strays++;
      return;
    }
    waiting.delete(answer.id as number);
    resolve(answer);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  return {
    name: "native WebSocket",
    async call(probe) {
      if (strays > 0) return { outcome: "mismatch", calls: 1, detail: `${strays} answers matched no call` };
      const id = nextId++;
      const answer = await new Promise<JsonRpcAnswer>((resolve) => {
        waiting.set(id, resolve);
        socket.send(JSON.stringify({ jsonrpc: "2.0", id, ...jsonRpcCall(probe, chain) }));
      });
      return judgeNative(probe, answer, id, chain);
    },
    close: async () => {
      socket.close();
      await new Promise((resolve) => socket.once("close", resolve));
    },
  };
}

const bytes = (hex: string) => Buffer.from(hex.replace(/^0x/, ""), "hex");
const sameHex = (b: Uint8Array | undefined, hex: string | undefined) => b !== undefined && hex !== undefined && Buffer.from(b).equals(bytes(hex));
const bigFrom = (b: Uint8Array | undefined) => (b === undefined || b.length === 0 ? 0n : BigInt(`0x${Buffer.from(b).toString("hex")}`));

/** A typed request for a probe, and the check of its response. */
function typedCall(probe: Probe, chain: Chain): { method: "getBlockByNumber" | "call" | "getBalance" | "chainId"; request: Message; matches(response: Message): boolean } {
  switch (probe.kind) {
    case "block":
      return {
        method: "getBlockByNumber",
        request: create(GetBlockByNumberRequestSchema, { block: { kind: { case: "number", value: BigInt(probe.n) } } }),
        matches: (r) => {
          const block = (r as GetBlockByNumberResponse).block;
          return block?.number === BigInt(probe.n) && sameHex(block.hash, chain.hashes[probe.n]);
        },
      };
    case "sha256":
      return {
        method: "call",
        request: create(CallRequestSchema, { transaction: { to: bytes(SHA256_PRECOMPILE), input: probe.data } }),
        matches: (r) => sameHex((r as CallResponse).data, sha256Hex(probe.data)),
      };
    case "balance": {
      const account = chain.accounts[probe.i] as { address: string; wei: bigint };
      return {
        method: "getBalance",
        request: create(GetBalanceRequestSchema, { address: bytes(account.address) }),
        matches: (r) => bigFrom((r as GetBalanceResponse).balance?.value) === account.wei,
      };
    }
    case "chainId":
      return { method: "chainId", request: create(ChainIdRequestSchema), matches: (r) => (r as ChainIdResponse).chainId === CHAIN_ID };
  }
}

/** gRPC through @grpc/grpc-js, with protobuf-es messages. */
export function grpcDoor(address: string, key: string, chain: Chain): Door {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("x-api-key", key);
  return {
    name: "gRPC (grpc-js)",
    call(probe) {
      const { method, request, matches } = typedCall(probe, chain);
      const rpc = EthService.method[method];
      return new Promise((resolve) => {
        client.makeUnaryRequest<Message, Message>(
          `/${EthService.typeName}/${rpc.name}`,
          (m) => Buffer.from(toBinary(rpc.input as DescMessage, m)),
          (b) => fromBinary(rpc.output as DescMessage, b),
          request,
          metadata,
          (err, response) => {
            if (err) resolve({ outcome: "error", calls: 1, detail: `${err.code} ${err.details}` });
            else resolve(matches(response as Message) ? { outcome: "ok", calls: 1 } : { outcome: "mismatch", calls: 1 });
          },
        );
      });
    },
    close: async () => client.close(),
  };
}

/** The Connect protocol (JSON over HTTP/1.1) through connect-es. */
/** Connect over HTTP/1.1, in binary (connect-es's default on Node) or JSON (connect-web's default). */
export function connectDoor(baseUrl: string, key: string, chain: Chain, format: "binary" | "json"): Door {
  const client = createClient(EthService, createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: format === "binary" })) as unknown as Record<
    string,
    (request: Message, options: { headers: Record<string, string> }) => Promise<Message>
  >;
  return {
    name: `Connect ${format} (connect-es)`,
    async call(probe) {
      const { method, request, matches } = typedCall(probe, chain);
      try {
        const response = await (client[method] as (request: Message, options: { headers: Record<string, string> }) => Promise<Message>)(request, { headers: { "x-api-key": key } });
        return matches(response) ? { outcome: "ok", calls: 1 } : { outcome: "mismatch", calls: 1 };
      } catch (err) {
        return { outcome: "error", calls: 1, detail: (err as Error).message };
      }
    },
    close: async () => {},
  };
}
