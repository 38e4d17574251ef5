/**
 * A member nodegate does not model (an L2's or a vendor's) holding a number
 * past 2^53: typed callers get it in json_extras.unknown_fields as the node
 * wrote it, on every client and lane (the lean gRPC lane, the object path
 * Connect and gRPC-Web take, a subscription stream), as native callers get
 * the node's bytes. Found from outside (h57): 2^64 - 1 came back
 * 18446744073709552000. A scripted node: Anvil answers no such member.
 */
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  EthService,
  type GetTransactionByHashResponse,
  GetTransactionByHashRequestSchema,
  type GetTransactionReceiptResponse,
  GetTransactionReceiptRequestSchema,
  SubscribeNewHeadsRequestSchema,
} from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { connectClient } from "../support/grpc-clients.js";
import { openGrpcJsStream, grpcJsStreamClient } from "../support/grpc-streams.js";
import { post, rpc } from "../support/http.js";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableWsUpstream, startProgrammableWsUpstream, type WsNodeAnswer } from "../support/programmable-ws-upstream.js";
import { connectCaller, grpcJsCaller, type TypedCaller } from "../support/typed-callers.js";

const atBlock = (n: bigint) => ({ kind: { case: "number" as const, value: n } });
const hex = (n: number) => `0x${n.toString(16)}`;
const hashOf = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const header = (n: number) => `{"number":"${hex(n)}","hash":"${hashOf(n)}","parentHash":"${hashOf(n - 1)}","timestamp":"${hex(1_700_000_000 + n)}"}`;
const withMembers = (object: string, members: string) => `${object.slice(0, -1)},${members}}`;

/** Members as an L2 node might write them: each number past what a double holds. */
const MEMBERS = '"l1Nonce":18446744073709551615,"vendor":{"counters":[1,123456789012345678901234567890],"limit":1e400}';
const WANTED = { l1Nonce: "18446744073709551615", vendor: '{"counters":[1,123456789012345678901234567890],"limit":1e400}' };

const TX_HASH = `0x${"11".repeat(32)}`;
const RECEIPT = withMembers(
  `{"transactionHash":"${TX_HASH}","blockHash":"${hashOf(100)}","blockNumber":"0x64","transactionIndex":"0x0","from":"0x${"33".repeat(20)}","to":null,"cumulativeGasUsed":"0x5208","gasUsed":"0x5208","logs":[],"logsBloom":"0x${"00".repeat(256)}","status":"0x1","type":"0x2","effectiveGasPrice":"0x1"}`,
  MEMBERS,
);
const LOG = withMembers(
  `{"address":"0x${"44".repeat(20)}","topics":[],"data":"0x","blockNumber":"0x64","blockHash":"${hashOf(100)}","transactionHash":"${TX_HASH}","transactionIndex":"0x0","logIndex":"0x0","removed":false}`,
  MEMBERS,
);
/** A duplicate key, which the lean gRPC lane leaves to the object path. */
const TX = withMembers(`{"hash":"${TX_HASH}","nonce":"0x1","nonce":"0x1","blockNumber":"0x64","value":"0x0","input":"0x"}`, MEMBERS);

let head = 100;
let node: ProgrammableWsUpstream;
let nodegate: TestNodegate;
let callers: TypedCaller[];

beforeAll(async () => {
  node = await startProgrammableWsUpstream((r): WsNodeAnswer => {
    if (r.method === "eth_chainId") return { result: "0x7a69" };
    if (r.method === "eth_blockNumber") return { result: hex(head) };
    if (r.method === "eth_getBlockByNumber") {
      const tag = r.params[0] as string;
      const n = tag === "latest" ? head : Number(tag);
      return n > head || Number.isNaN(n) ? { result: null } : { resultText: header(n) };
    }
    if (r.method === "eth_getBlockByHash") {
      const n = Number.parseInt((r.params[0] as string).slice(2), 16);
      return n <= head ? { resultText: header(n) } : { result: null };
    }
    if (r.method === "eth_getTransactionReceipt") return { resultText: RECEIPT };
    if (r.method === "eth_getTransactionByHash") return { resultText: TX };
    if (r.method === "eth_getLogs") return { resultText: `[${LOG}]` };
    return { error: { code: -32601, message: "the method does not exist/is not available" } };
  });
  nodegate = await startNodegate({ upstreamUrl: node.url });
  callers = [
    grpcJsCaller(nodegate, EthService, nodegate.key),
    connectCaller(nodegate, EthService, nodegate.key, "connect"),
    connectCaller(nodegate, EthService, nodegate.key, "grpc-web"),
    connectCaller(nodegate, EthService, nodegate.key, "grpc"),
  ];
});
afterAll(async () => {
  for (const c of callers ?? []) c.close();
  await nodegate?.close();
  await node?.close();
});

it("a receipt's, a transaction's and a streamed log's unknown members keep their numbers on every typed client", async () => {
  const transactionHash = Buffer.from(TX_HASH.slice(2), "hex");
  for (const caller of callers) {
    const receipt = await caller.call<GetTransactionReceiptResponse>(EthService.method.getTransactionReceipt, create(GetTransactionReceiptRequestSchema, { transactionHash }));
    expect(receipt.receipt?.jsonExtras?.unknownFields, caller.name).toEqual(WANTED);
    const tx = await caller.call<GetTransactionByHashResponse>(EthService.method.getTransactionByHash, create(GetTransactionByHashRequestSchema, { transactionHash }));
    expect(tx.transaction?.nonce, caller.name).toBe(1n);
    expect(tx.transaction?.jsonExtras?.unknownFields, caller.name).toEqual(WANTED);
  }
  const pages = [];
  for await (const page of connectClient(nodegate.url, EthService, nodegate.key, "grpc").streamLogs({ filter: { fromBlock: atBlock(100n), toBlock: atBlock(100n) } })) pages.push(page);
  expect(pages.flatMap((p) => p.logs.map((l) => l.jsonExtras?.unknownFields))).toEqual([WANTED]);
  // The native door: the node's bytes.
  const native = await post(nodegate.rpcUrl, rpc("eth_getTransactionReceipt", [TX_HASH], 1));
  expect(native.text).toBe(`{"jsonrpc":"2.0","id":1,"result":${RECEIPT}}`);
});

it("a pushed header's unknown members keep their numbers on a typed stream and on the native door", async () => {
  const client = grpcJsStreamClient(nodegate.address);
  const native = await openNativeSubscriber(nodegate.wsUrl);
  const nativeTexts: string[] = [];
  native.socket.on("message", (data: Buffer) => nativeTexts.push(data.toString("utf8")));
  const stream = openGrpcJsStream(client, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), { "x-api-key": nodegate.key });
  try {
    const id = await native.subscribe("newHeads");
    await expect.poll(() => node.subscriptions("newHeads"), { timeout: 10_000 }).toBeGreaterThan(0);
    // The stream may have joined after the first push: push until it has a header.
    await expect
      .poll(
        () => {
          head++;
          node.pushText("newHeads", withMembers(header(head), MEMBERS));
          return stream.received.length;
        },
        { timeout: 10_000, interval: 200 },
      )
      .toBeGreaterThan(0);
    expect(stream.received[0]?.header?.jsonExtras?.unknownFields).toEqual(WANTED);
    await native.waitFor(id, 1);
    expect(nativeTexts.find((t) => t.includes('"eth_subscription"'))).toContain(MEMBERS);
  } finally {
    stream.cancel();
    await stream.ended;
    await native.close();
    client.close();
  }
});
