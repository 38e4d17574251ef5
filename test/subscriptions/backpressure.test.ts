/**
 * Slow consumers, against a real Anvil: a client that stops reading while
 * headers or logs keep coming is ended once clientBufferSize (64 here)
 * events wait for it and it takes none for a second (RESOURCE_EXHAUSTED on
 * gRPC), or once its unsent notifications pass maxWsUnreadBytes (1 MiB here;
 * close 1008 with a reason on the native WebSocket path); its subscription
 * is released, and the clients that keep up receive everything, bursts
 * bigger than the buffer included.
 */
import http from "node:http";
import { create, toBinary } from "@bufbuild/protobuf";
import type * as grpc from "@grpc/grpc-js";
import { toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { EthService, SubscribeLogsRequestSchema, SubscribeNewHeadsRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { LogFilterSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import { decodeData } from "../../src/codec/hex.js";
import { DEFAULT_LIMITS, DEFAULT_SUBSCRIPTIONS } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver, type Probe } from "../support/chain-driver.js";
import { grpcJsStreamClient, openGrpcJsStream } from "../support/grpc-streams.js";
import { liveSubscriptions, waitForLiveSubscriptions, waitForNoLiveSubscriptions } from "../support/live-subscriptions.js";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { ANVIL_KEY_0 } from "../support/probe.js";

const SENDER = privateKeyToAccount(ANVIL_KEY_0).address;

const BUFFER = 64;
/** Blocks mined per step; the fast client gets each step before the next is mined, so only the slow one falls behind. */
const STEP = 25;
/** A bound on the blocks a test mines before the slow client must have been ended. */
const MAX_BLOCKS = 20_000;
/** Logs sent per step, and a bound on all of them, for the WebSocket client. */
const LOG_STEP = 10;
const MAX_LOGS = 2000;

let anvil: AnvilNode;
let chain: ChainDriver;
let nodegate: TestNodegate;
let grpcClient: grpc.Client;
let probe: Probe;

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  probe = await chain.probe();
  nodegate = await startNodegate({
    upstreamUrl: anvil.wsUrl,
    config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, clientBufferSize: BUFFER }, limits: { ...DEFAULT_LIMITS, maxWsUnreadBytes: 1024 * 1024 } },
  });
  grpcClient = grpcJsStreamClient(nodegate.address);
});
afterEach(() => waitForNoLiveSubscriptions(nodegate.gateway));
afterAll(async () => {
  grpcClient?.close();
  await nodegate?.close();
  await anvil?.stop();
});

const endedSlowSubscriber = (msg: string) => nodegate.logs.some((l) => l.msg === msg);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

it("gRPC: a stream that is not read is ended with RESOURCE_EXHAUSTED while the others get every header", async () => {
  const auth = { "x-api-key": nodegate.key };
  const fast = openGrpcJsStream(grpcClient, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), auth);
  const slow = openGrpcJsStream(grpcClient, EthService.method.subscribeNewHeads, create(SubscribeNewHeadsRequestSchema), auth);
  slow.call.pause();
  try {
    await waitForLiveSubscriptions(nodegate.gateway, "newHeads", 2);
    const start = await chain.blockNumber();
    let mined = 0;
    while (!endedSlowSubscriber("ending a slow stream subscriber") && mined < MAX_BLOCKS) {
      await chain.mine(STEP);
      mined += STEP;
      await fast.waitFor(mined);
    }
    expect(endedSlowSubscriber("ending a slow stream subscriber")).toBe(true);
    // The slow stream's subscription is released; the fast one goes on.
    await waitForLiveSubscriptions(nodegate.gateway, "newHeads", 1);
    expect(await liveSubscriptions(nodegate.gateway, "newHeads")).toBe(1);
    await chain.mine(STEP);
    await fast.waitFor(mined + STEP);
    expect(fast.received.map((m) => Number(m.header?.number))).toEqual(range(start + 1, start + mined + STEP));

    // Reading again, the slow client finds what reached it, then RESOURCE_EXHAUSTED.
    slow.call.resume();
    const err = await slow.ended;
    expect(err?.code).toBe(8);
    const got = slow.received.map((m) => Number(m.header?.number));
    expect(got).toEqual(range(start + 1, start + got.length));
    expect(got.length).toBeLessThan(mined);
  } finally {
    fast.cancel();
    slow.cancel();
    await Promise.all([fast.ended, slow.ended]);
  }
});

it("a burst of more events than the buffer (one block's logs) reaches clients that read, on both doors", async () => {
  // Found from outside: events not yet flushed were counted as unread, so a block with more matching logs than
  // clientBufferSize closed a client reading at full speed.
  const BURST = 300; // more than four times the buffer: only a client that stops taking events is slow
  const slowEnds = () => nodegate.logs.filter((l) => l.msg === "closing a native WebSocket subscriber" || l.msg === "ending a slow stream subscriber").length;
  const endedBefore = slowEnds();
  const native = await openNativeSubscriber(nodegate.wsUrl);
  const filter = create(LogFilterSchema, { address: [decodeData(probe.address)] });
  const typed = openGrpcJsStream(grpcClient, EthService.method.subscribeLogs, create(SubscribeLogsRequestSchema, { filter }), { "x-api-key": nodegate.key });
  try {
    const id = await native.subscribe("logs", { address: probe.address });
    await waitForLiveSubscriptions(nodegate.gateway, "logs", 2);
    const block = await probe.storeMany(BURST);
    await native.waitFor(id, BURST);
    await typed.waitFor(BURST);
    expect(native.results(id).map((l: { blockNumber: string }) => Number(l.blockNumber))).toEqual(Array(BURST).fill(block));
    expect(typed.received.map((m) => Number(m.log?.blockNumber))).toEqual(Array(BURST).fill(block));
    expect(slowEnds()).toBe(endedBefore);
  } finally {
    typed.cancel();
    await Promise.all([typed.ended, native.close()]);
  }
});

it("native WebSocket: a client that stops reading is closed with 1008 and a reason while the others get every log", async () => {
  const fast = await openNativeSubscriber(nodegate.wsUrl);
  const slow = await openNativeSubscriber(nodegate.wsUrl);
  try {
    const fastId = await fast.subscribe("logs", { address: probe.address });
    const slowId = await slow.subscribe("logs", { address: probe.address });
    slow.socket.pause();
    // Big logs (a 24 KiB note each), so the socket buffers between nodegate and the paused client fill after a few hundred.
    const note = toHex(new Uint8Array(24 * 1024).fill(0xab));
    let sent = 0;
    while (!endedSlowSubscriber("closing a native WebSocket subscriber") && sent < MAX_LOGS) {
      for (let i = 0; i < LOG_STEP; i++) {
        await chain.rpc("eth_sendTransaction", [{ from: SENDER, to: probe.address, data: probe.storeData(BigInt(sent + i), note), gas: "0x200000" }]);
      }
      sent += LOG_STEP;
      await fast.waitFor(fastId, sent);
    }
    expect(endedSlowSubscriber("closing a native WebSocket subscriber")).toBe(true);
    await waitForLiveSubscriptions(nodegate.gateway, "logs", 1);
    expect(await liveSubscriptions(nodegate.gateway, "logs")).toBe(1);
    await probe.store(99_999n);
    await fast.waitFor(fastId, sent + 1);
    const values = (logs: { topics: string[] }[]) => logs.map((l) => Number(BigInt(l.topics[2] as string)));
    expect(values(fast.results(fastId))).toEqual([...range(0, sent - 1), 99_999]);

    slow.socket.resume();
    const closed = await slow.closed;
    expect(closed.code).toBe(1008);
    // 24 KiB notifications pass the byte bound first (found from outside: there was none for notifications).
    expect(closed.reason).toMatch(/^subscriber too slow: \d+ bytes were waiting to be read/);
    const got = values(slow.results(slowId));
    expect(got).toEqual(range(0, got.length - 1));
    expect(got.length).toBeLessThan(sent);
  } finally {
    await fast.close();
    await slow.close();
  }
});

it("Connect over HTTP/1.1: a stream that is not read is ended, logged and counted, and its gauge comes down", async () => {
  // Found from outside: on HTTP/1.1 the cut left Connect waiting on a write that never settled, so the stream was
  // never finished: no log line, no outcome, nodegate_open_streams one higher for good.
  const openStreams = async () => Number(/^nodegate_open_streams (\d+)$/m.exec(await (await fetch(`${nodegate.url}/metrics`)).text())?.[1]);
  const streamsBefore = await openStreams();
  const cuts = () => nodegate.logs.filter((l) => l.msg === "ending a slow stream subscriber").length;
  const cutsBefore = cuts();
  const request = toBinary(SubscribeLogsRequestSchema, create(SubscribeLogsRequestSchema, { filter: create(LogFilterSchema, { address: [decodeData(probe.address)] }) }));
  const envelope = Buffer.alloc(5 + request.length);
  envelope.writeUInt32BE(request.length, 1);
  envelope.set(request, 5);
  const path = `/${EthService.typeName}/${EthService.method.subscribeLogs.name}`;
  const requestId = "slow-http1-stream";
  const slow = http.request(`${nodegate.url}${path}`, {
    method: "POST",
    agent: false,
    headers: { "content-type": "application/connect+proto", "connect-protocol-version": "1", "x-api-key": nodegate.key, "x-request-id": requestId },
  });
  // Connect sends the head with the first message; the answer is never read.
  slow.once("response", (res) => res.pause());
  slow.on("error", () => {});
  slow.end(envelope);
  try {
    await waitForLiveSubscriptions(nodegate.gateway, "logs", 1);
    const note = toHex(new Uint8Array(24 * 1024).fill(0xcd));
    let sent = 0;
    while (cuts() === cutsBefore && sent < MAX_LOGS) {
      for (let i = 0; i < LOG_STEP; i++) {
        await chain.rpc("eth_sendTransaction", [{ from: SENDER, to: probe.address, data: probe.storeData(BigInt(sent + i), note), gas: "0x200000" }]);
      }
      sent += LOG_STEP;
    }
    expect(cuts()).toBe(cutsBefore + 1);
    await waitForNoLiveSubscriptions(nodegate.gateway);
    let line: Record<string, unknown> | undefined;
    for (let i = 0; i < 250 && line === undefined; i++) {
      line = nodegate.logs.find((l) => l.requestId === requestId && l.msg === "request");
      if (line === undefined) await new Promise((r) => setTimeout(r, 20));
    }
    expect(line).toMatchObject({ door: "connect", method: `${EthService.typeName}/${EthService.method.subscribeLogs.name}`, status: "ResourceExhausted" });
    expect(await openStreams()).toBe(streamsBefore);
  } finally {
    slow.destroy();
  }
});
