/**
 * The typed subscriptions (EthService.SubscribeNewHeads, SubscribeLogs,
 * SubscribeNewPendingTransactions) against a real Anvil over WebSocket, with
 * real clients: @grpc/grpc-js and connect-es (Connect and gRPC-Web). Typed
 * messages carry what the node reported; access and filter checks answer
 * with clear statuses.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type * as grpc from "@grpc/grpc-js";
import { keccak256, pad, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  EthService,
  SubscribeLogsRequestSchema,
  SubscribeNewHeadsRequestSchema,
  SubscribeNewPendingTransactionsRequestSchema,
} from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { LogFilterSchema, TopicFilterSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import { BlockIdSchema } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { decodeData } from "../../src/codec/hex.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver, type Probe } from "../support/chain-driver.js";
import { connectClient, type Protocol } from "../support/grpc-clients.js";
import { grpcJsStreamClient, openGrpcJsStream } from "../support/grpc-streams.js";
import { waitForLiveSubscriptions, waitForNoLiveSubscriptions } from "../support/live-subscriptions.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { ANVIL_KEY_0 } from "../support/probe.js";

const STORED = keccak256(toHex("Stored(address,uint256,bytes)"));
const SENDER = privateKeyToAccount(ANVIL_KEY_0).address;
const NARROW_KEY = "narrow-key-0123456789";
const bytes = (h: string) => decodeData(h);
const hex = (b: Uint8Array | undefined) => (b === undefined ? undefined : `0x${Buffer.from(b).toString("hex")}`);

let anvil: AnvilNode;
let chain: ChainDriver;
let nodegate: TestNodegate;
let grpcClient: grpc.Client;
let probe: Probe;
let other: Probe;

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  probe = await chain.probe();
  other = await chain.probe();
  nodegate = await startNodegate({
    upstreamUrl: anvil.wsUrl,
    keys: ["test-key-0123456789abcdef", { key: NARROW_KEY, plan: "growth", allowlists: { methods: ["eth_getBlockByNumber"] } }],
  });
  grpcClient = grpcJsStreamClient(nodegate.address);
});
// Each test counts the live subscriptions it opens, so the previous test's must be gone.
afterEach(() => waitForNoLiveSubscriptions(nodegate.gateway));
afterAll(async () => {
  grpcClient?.close();
  await nodegate?.close();
  await anvil?.stop();
});

const auth = () => ({ "x-api-key": nodegate.key });

describe("SubscribeNewHeads", () => {
  it("grpc-js: every new block arrives once, in order, as a header with its fields and no transactions", async () => {
    const stream = openGrpcJsStream(grpcClient, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), auth());
    try {
      await waitForLiveSubscriptions(nodegate.gateway, "newHeads", 1);
      const start = await chain.blockNumber();
      await probe.store(5n);
      await chain.mine(3);
      const headers = await stream.waitFor(4);
      const numbers = headers.map((h) => Number(h.header?.number));
      expect(numbers).toEqual([start + 1, start + 2, start + 3, start + 4]);
      expect(headers.map((h) => hex(h.header?.hash))).toEqual(await chain.hashes(start + 1, start + 4));
      const block = await chain.rpc<Record<string, string>>("eth_getBlockByNumber", [toHex(start + 1), false]);
      const first = headers[0]?.header;
      expect(hex(first?.parentHash)).toBe(block.parentHash);
      expect(hex(first?.stateRoot)).toBe(block.stateRoot);
      expect(first?.gasUsed).toBe(BigInt(block.gasUsed as string));
      expect(first?.gasUsed).toBeGreaterThan(0n);
      expect(first?.transactions).toBeUndefined();
    } finally {
      stream.cancel();
      await stream.ended;
    }
  });

  it.each<Protocol>(["connect", "grpc-web"])("connect-es over %s receives headers", async (protocol) => {
    const client = connectClient(nodegate.url, EthService, nodegate.key, protocol);
    const received: bigint[] = [];
    // Cancelled through its signal: leaving the loop alone does not end a connect-es stream on the wire.
    const abort = new AbortController();
    const reading = (async () => {
      for await (const message of client.subscribeNewHeads({}, { signal: abort.signal })) {
        received.push(message.header?.number ?? -1n);
        if (received.length === 3) abort.abort();
      }
    })().catch((err: unknown) => {
      if (!(err instanceof ConnectError && err.code === Code.Canceled)) throw err;
    });
    await waitForLiveSubscriptions(nodegate.gateway, "newHeads", 1);
    const start = await chain.blockNumber();
    await chain.mine(3);
    await reading;
    expect(received).toEqual([1n, 2n, 3n].map((i) => BigInt(start) + i));
  });
});

describe("SubscribeLogs", () => {
  it("sends the matching logs, typed, with removed false", async () => {
    const filter = create(LogFilterSchema, {
      address: [bytes(probe.address)],
      topics: [create(TopicFilterSchema, { anyOf: [bytes(STORED)] })],
    });
    const stream = openGrpcJsStream(grpcClient, EthService.method.subscribeLogs, create(SubscribeLogsRequestSchema, { filter }), auth());
    try {
      await waitForLiveSubscriptions(nodegate.gateway, "logs", 1);
      const start = await chain.blockNumber();
      await other.store(1n);
      await probe.store(41n, "0xbeef");
      await probe.store(42n);
      const logs = await stream.waitFor(2);
      expect(logs.map((l) => l.log?.topics[2] && BigInt(hex(l.log.topics[2]) as string))).toEqual([41n, 42n]);
      const want = await chain.logs({ address: probe.address, fromBlock: toHex(start + 1), toBlock: "latest" });
      expect(want).toHaveLength(2);
      const got = stream.received.map((l) => ({
        blockHash: hex(l.log?.blockHash),
        logIndex: l.log?.logIndex,
        transactionHash: hex(l.log?.transactionHash),
        data: hex(l.log?.data),
        removed: l.log?.removed,
        topic1: hex(l.log?.topics[1]),
      }));
      expect(got).toEqual(
        want.map((l) => ({
          blockHash: l.blockHash,
          logIndex: BigInt(l.logIndex),
          transactionHash: l.transactionHash,
          data: l.data,
          removed: false,
          topic1: pad(SENDER.toLowerCase() as `0x${string}`),
        })),
      );
    } finally {
      stream.cancel();
      await stream.ended;
    }
  });

  it("refuses a filter with a block range: INVALID_ARGUMENT saying to resume with from_block", async () => {
    const filter = create(LogFilterSchema, { fromBlock: create(BlockIdSchema, { kind: { case: "number", value: 1n } }) });
    const stream = openGrpcJsStream(grpcClient, EthService.method.subscribeLogs, create(SubscribeLogsRequestSchema, { filter }), auth());
    const err = await stream.ended;
    expect(err?.code).toBe(3);
    expect(err?.details ?? "").toMatch(/from_block, to_block and block_hash must be unset/);
  });

  it("refuses a filter with json_extras: INVALID_ARGUMENT, as the native door refuses unknown filter keys", async () => {
    // Found from outside: {"foo":"1"} and even a fromBlock passed as an extra were dropped without a word.
    const cases: { unknownFields?: Record<string, string>; nullKeys?: string[] }[] = [{ unknownFields: { foo: "1" } }, { unknownFields: { fromBlock: '"0x1"' } }, { nullKeys: ["address"] }];
    for (const jsonExtras of cases) {
      const filter = create(LogFilterSchema, { jsonExtras });
      const stream = openGrpcJsStream(grpcClient, EthService.method.subscribeLogs, create(SubscribeLogsRequestSchema, { filter }), auth());
      const err = await stream.ended;
      expect(err?.code).toBe(3);
      expect(err?.details ?? "").toMatch(/filter.json_extras: a logs subscription takes address and topics only/);
    }
  });

  it("refuses a 19-byte address: INVALID_ARGUMENT naming the field", async () => {
    const filter = create(LogFilterSchema, { address: [new Uint8Array(19)] });
    const stream = openGrpcJsStream(grpcClient, EthService.method.subscribeLogs, create(SubscribeLogsRequestSchema, { filter }), auth());
    const err = await stream.ended;
    expect(err?.code).toBe(3);
    expect(err?.details ?? "").toMatch(/filter.address\[0\]: want 20 bytes, got 19/);
  });
});

describe("SubscribeNewPendingTransactions", () => {
  it("sends the hash of each transaction the node accepts", async () => {
    const stream = openGrpcJsStream(
      grpcClient,
      EthService.method.subscribeNewPendingTransactions,
      create(SubscribeNewPendingTransactionsRequestSchema),
      auth(),
    );
    try {
      await waitForLiveSubscriptions(nodegate.gateway, "newPendingTransactions", 1);
      const sent: string[] = [];
      for (let i = 1; i <= 3; i++) sent.push(await chain.rpc<string>("eth_sendTransaction", [{ from: SENDER, to: other.address, value: toHex(i) }]));
      const hashes = await stream.waitFor(3);
      expect(hashes.map((h) => hex(h.transactionHash))).toEqual(sent);
    } finally {
      stream.cancel();
      await stream.ended;
    }
  });
});

describe("access", () => {
  it("without a key: UNAUTHENTICATED", async () => {
    const stream = openGrpcJsStream(grpcClient, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), {});
    expect((await stream.ended)?.code).toBe(16);
  });

  it("a key whose method allowlist lacks eth_subscribe: PERMISSION_DENIED", async () => {
    const stream = openGrpcJsStream(grpcClient, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), {
      "x-api-key": NARROW_KEY,
    });
    expect((await stream.ended)?.code).toBe(7);
  });

  it("an unknown network: NOT_FOUND", async () => {
    const stream = openGrpcJsStream(grpcClient, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), {
      ...auth(),
      "x-nodegate-network": "nowhere",
    });
    const err = await stream.ended;
    expect(err?.code).toBe(5);
    expect(err?.details).toMatch(/unknown network "nowhere"/);
  });
});

describe("shutdown", () => {
  it("ends open subscriptions at once with UNAVAILABLE saying to resume, rather than holding the drain", async () => {
    // A drain far longer than the test's own timeout: close() must not wait for these streams.
    const own = await startNodegate({ upstreamUrl: anvil.wsUrl, config: { drainMs: 120_000 } });
    const client = grpcJsStreamClient(own.address);
    try {
      const stream = openGrpcJsStream(client, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), { "x-api-key": own.key });
      await waitForLiveSubscriptions(own.gateway, "newHeads", 1);
      await own.close();
      const err = await stream.ended;
      expect(err?.code).toBe(14);
      expect(err?.details ?? "").toMatch(/nodegate is shutting down; call again \(subscriptions: subscribe again, typed streams with from_block/);
    } finally {
      client.close();
    }
  });
});
