/**
 * The request log interceptor on server streams: a stream counts as open
 * until it ends however it ends (all messages sent, failed, or returned early
 * because the client went away), and each ends with one log line and one
 * count. Driven through the interceptor itself, so that the early return
 * (which a client only causes when the server is blocked on a full socket) is
 * certain to happen.
 */
import { Code, ConnectError, createContextValues, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";
import { describe, expect, it } from "vitest";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { Metrics } from "../../src/observability/metrics.js";
import { requestLogInterceptor } from "../../src/observability/request-log.js";
import { startAnvil } from "../../src/embedded/anvil.js";
import { connectClient } from "../support/grpc-clients.js";
import { startNodegate } from "../support/nodegate.js";

type Next = Parameters<Interceptor>[0];
type StreamRequest = Parameters<Next>[0];

function rig(messages: () => AsyncGenerator<unknown>, signal: AbortSignal = new AbortController().signal) {
  const metrics = new Metrics({ processMetrics: false });
  const lines: Record<string, unknown>[] = [];
  const log = { info: (fields: Record<string, unknown>) => lines.push(fields), warn: (fields: Record<string, unknown>) => lines.push(fields) } as unknown as Logger;
  const next = (async () => ({ stream: true, header: new Headers(), trailer: new Headers(), message: messages() })) as unknown as Next;
  const request = { stream: true, header: new Headers(), service: EthService, method: EthService.method.streamLogs, signal, contextValues: createContextValues() } as unknown as StreamRequest;
  const openStreams = async () => Number((await metrics.openStreams.get()).values[0]?.value ?? 0);
  return { lines, openStreams, call: () => requestLogInterceptor(log, metrics)(next)(request) as Promise<{ message: AsyncIterable<unknown> }> };
}

async function* pages(count: number) {
  for (let i = 0; i < count; i++) yield { page: i };
}

describe("a typed server stream in the request log", () => {
  it("sent to the end: ok, and no longer open", async () => {
    const r = rig(() => pages(3));
    const res = await r.call();
    expect(await r.openStreams()).toBe(1);
    for await (const _ of res.message);
    expect(r.lines.map((l) => l.status)).toEqual(["ok"]);
    expect(await r.openStreams()).toBe(0);
  });

  it("every message made, but the client had left before they were sent: Canceled", async () => {
    const left = new AbortController();
    const r = rig(() => pages(3), left.signal);
    const res = await r.call();
    left.abort();
    for await (const _ of res.message);
    expect(r.lines.map((l) => l.status)).toEqual(["Canceled"]);
    expect(await r.openStreams()).toBe(0);
  });

  it("failing part way: the failure's status, and no longer open", async () => {
    const r = rig(async function* () {
      yield { page: 0 };
      throw new ConnectError("node gone", Code.Unavailable);
    });
    const res = await r.call();
    await expect(
      (async () => {
        for await (const _ of res.message);
      })(),
    ).rejects.toThrow(/node gone/);
    expect(r.lines.map((l) => l.status)).toEqual(["Unavailable"]);
    expect(await r.openStreams()).toBe(0);
  });

  it("a write that fails because the client's connection reset: Canceled, not Internal", async () => {
    // Found from outside: a client killed with unread bytes (the kernel resets the connection) made Node close its
    // streams with INTERNAL_ERROR, and each was counted Internal and logged at warn.
    const r = rig(() => pages(100));
    const res = await r.call();
    const messages = res.message[Symbol.asyncIterator]();
    await messages.next();
    // How connect-node's writer hands the failed write back to the messages it was sending.
    const reset = new ConnectError("http/2 stream closed with error code INTERNAL_ERROR (0x2)", Code.Internal);
    await expect(messages.throw?.(reset)).rejects.toBe(reset);
    expect(r.lines.map((l) => l.status)).toEqual(["Canceled"]);
    expect(await r.openStreams()).toBe(0);
  });

  it("any failure once the client has left: Canceled", async () => {
    const left = new AbortController();
    const r = rig(async function* () {
      yield { page: 0 };
      left.abort();
      throw new ConnectError("write after end", Code.Internal);
    }, left.signal);
    const res = await r.call();
    await expect(
      (async () => {
        for await (const _ of res.message);
      })(),
    ).rejects.toThrow(/write after end/);
    expect(r.lines.map((l) => l.status)).toEqual(["Canceled"]);
  });

  it("returned early (the client went away): Canceled, and no longer open", async () => {
    // Found from outside: this path logged nothing and left nodegate_open_streams one higher for good.
    let cleanedUp = false;
    const r = rig(async function* () {
      try {
        yield* pages(100);
      } finally {
        cleanedUp = true;
      }
    });
    const res = await r.call();
    for await (const _ of res.message) break;
    expect(cleanedUp).toBe(true);
    expect(r.lines.map((l) => l.status)).toEqual(["Canceled"]);
    expect(await r.openStreams()).toBe(0);
  });
});

/** How a typed stream ended: "ended" (OK), or its error's code. */
async function howItEnds(stream: AsyncIterable<unknown>): Promise<string> {
  try {
    for await (const _ of stream);
    return "ended";
  } catch (e) {
    return Code[ConnectError.from(e).code];
  }
}

describe("a typed server stream that runs out its deadline", () => {
  it("is logged and counted DeadlineExceeded, not Canceled, on each transport", async () => {
    // Found from outside: SubscribeNewHeads with grpc-timeout 1500m got DEADLINE_EXCEEDED, and was logged and counted
    // as Canceled ("the client left").
    const anvil = await startAnvil();
    const ng = await startNodegate({ upstreamUrl: anvil.url });
    try {
      for (const protocol of ["grpc", "connect", "grpc-web"] as const) {
        const client = connectClient(ng.url, EthService, ng.key, protocol);
        // As a header: the server's deadline alone (connect-es's own timer would cancel the call at the same moment).
        const headers = protocol === "connect" ? { "connect-timeout-ms": "800" } : { "grpc-timeout": "800m" };
        expect(await howItEnds(client.subscribeNewHeads({}, { headers })), protocol).toBe("DeadlineExceeded");
        // Health's Watch too (found from outside: it ended OK when its deadline passed).
        const health = connectClient(ng.url, Health, ng.key, protocol);
        expect(await howItEnds(health.watch({}, { headers })), `Watch over ${protocol}`).toBe("DeadlineExceeded");
      }
      await expect.poll(() => ng.logs.filter((l) => l.method === `${EthService.typeName}/SubscribeNewHeads`).map((l) => l.status)).toEqual(["DeadlineExceeded", "DeadlineExceeded", "DeadlineExceeded"]);
      expect(await (await fetch(`${ng.url}/metrics`)).text()).toMatch(/nodegate_requests_total\{door="[^"]+",method="nodegate\.eth\.v1\.EthService\/SubscribeNewHeads",outcome="DeadlineExceeded"\} [1-3]/);
    } finally {
      await ng.close();
      await anvil.stop();
    }
  }, 30_000);
});
