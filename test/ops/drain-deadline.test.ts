/**
 * Calls still waiting on the node when the drain deadline comes are answered
 * "shutting down" (-32056, HTTP 503; UNAVAILABLE on the typed door), under
 * their own ids, rather than cut off with an empty reply (found from
 * outside: curl saw "empty reply from server").
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { connectClient } from "../support/grpc-clients.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";
import { openWsSession } from "../support/ws-session.js";
import { endTypedStreams } from "../../src/grpc/subscription-streams.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";

let anvil: AnvilNode;
let upstream: ProgrammableUpstream;
let ng: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  // eth_blockNumber hangs past every drain deadline here; the rest (a heads subscription's polling) is Anvil's.
  upstream = await startProgrammableUpstream((r) => (r.method === "eth_blockNumber" ? { delayMs: 5000, then: { result: "0x10" } } : { forward: anvil.url }));
  ng = await startNodegate({ upstreamUrl: upstream.url });
});
afterAll(async () => {
  await upstream?.close();
  await anvil?.stop();
});

it("native and typed calls cut short by the drain deadline get a shutting-down answer", async () => {
  const native = post(ng.rpcUrl, rpc("eth_blockNumber", [], "slow-1"));
  const typed = connectClient(ng.url, EthService, ng.key, "grpc")
    .blockNumber({})
    .then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
  await new Promise((resolve) => setTimeout(resolve, 200));
  const started = performance.now();
  await ng.server.close(300);
  expect(performance.now() - started).toBeLessThan(4000);
  const answer = await native;
  expect(answer.status).toBe(503);
  expect(answer.json).toMatchObject({ id: "slow-1", error: { code: -32056, message: expect.stringMatching(/^nodegate is shutting down; call again/) } });
  const err = await typed;
  expect(err?.code).toBe(Code.Unavailable);
  expect(err?.rawMessage).toContain("shutting down");
  // nodegate's own stop says nothing of the node (found from outside: every deploy that caught a slow call logged the
  // upstream as failing, with nodegate's "shutting down" as the cause, and counted it against the circuit).
  const outages = (await ng.gateway.metrics.registry.getSingleMetricAsString("nodegate_upstream_errors_total")).split("\n").filter((l) => l.includes('kind="outage"'));
  expect(outages).toEqual([]);
  expect(ng.logs.filter((l) => String(l.msg).startsWith("upstream failing"))).toEqual([]);
});

// Found from outside: with a subscription open, the subscriptions' end at the deadline closed the connection (1011)
// before the waiting call was answered; and with no HTTP call in flight, the waiting calls were not answered at all.
it.each([
  ["a subscription open", true],
  ["nothing else open", false],
])("a WebSocket client's call cut short by the drain deadline is answered -32056 before its connection closes with 1012 (%s)", async (_what, subscribe) => {
  const alone = await startNodegate({ upstreamUrl: upstream.url });
  const ws = await openWsSession(alone.wsUrl);
  if (subscribe) {
    ws.send(JSON.stringify(rpc("eth_subscribe", ["newHeads"], "sub")));
    expect(await ws.nextJson()).toMatchObject({ id: "sub", result: expect.stringMatching(/^0x/) });
  }
  ws.send(JSON.stringify(rpc("eth_blockNumber", [], "slow-ws")));
  await new Promise((resolve) => setTimeout(resolve, 200));
  await alone.server.close(300);
  const seen: unknown[] = [];
  const code = await Promise.race([ws.closed, new Promise<never>((_, reject) => setTimeout(() => reject(new Error("not closed")), 5000))]);
  while (ws.queued > 0) seen.push(await ws.nextJson());
  const answer = seen.find((m) => (m as { id?: unknown }).id === "slow-ws");
  expect(answer).toMatchObject({ id: "slow-ws", error: { code: -32056, message: expect.stringContaining("shutting down") } });
  expect(code).toBe(1012);
});

// Found from outside: typed subscription streams waited for native WebSocket clients' answers (up to the drain
// deadline) though they owe no one an answer; they are told to resume elsewhere as the drain starts.
it("typed subscription streams end UNAVAILABLE as the drain starts, not once a WebSocket client's slow call is answered", async () => {
  const alone = await startNodegate({ upstreamUrl: upstream.url });
  const ws = await openWsSession(alone.wsUrl);
  ws.send(JSON.stringify(rpc("eth_blockNumber", [], "slow-ws")));
  const abort = new AbortController();
  const heads = connectClient(alone.url, EthService, alone.key, "grpc").subscribeNewHeads({}, { signal: abort.signal });
  const ended = (async () => {
    try {
      for await (const _ of heads);
      return { at: performance.now(), error: undefined };
    } catch (e) {
      return { at: performance.now(), error: ConnectError.from(e) };
    }
  })();
  // A Connect client over HTTP/1.1 with a kept-alive connection, for a stream opened during the drain.
  const warm = connectClient(alone.url, EthService, alone.key, "connect");
  await warm.chainId({});
  await new Promise((resolve) => setTimeout(resolve, 300));
  const started = performance.now();
  const closed = alone.server.close(3000);
  const end = await ended;
  expect(end.error?.code).toBe(Code.Unavailable);
  expect(end.error?.rawMessage).toContain("shutting down");
  expect(end.at - started).toBeLessThan(1500);
  // One opened since, on a kept-alive HTTP/1.1 connection, is refused too (the next test takes the drain's first step
  // alone, where the connection is surely still served).
  const late = await (async () => {
    try {
      for await (const _ of warm.subscribeNewHeads({}, { signal: abort.signal }));
      return undefined;
    } catch (e) {
      return ConnectError.from(e);
    }
  })();
  expect([late?.code, late?.rawMessage]).toEqual([Code.Unavailable, expect.stringContaining("shutting down")]);
  await closed;
  abort.abort();
});

it("once the drain has ended the typed streams, a typed stream opened on a connection still served is refused the same way", async () => {
  // Found from outside: one opened during the drain on a kept-alive connection was served until the drain's end. The
  // drain's first step is taken alone here, so the connection is surely still served.
  const alone = await startNodegate({ upstreamUrl: upstream.url });
  endTypedStreams(alone.gateway);
  const late = await (async () => {
    try {
      for await (const _ of connectClient(alone.url, EthService, alone.key, "grpc").subscribeNewHeads({}));
      return undefined;
    } catch (e) {
      return ConnectError.from(e);
    }
  })();
  expect([late?.code, late?.rawMessage]).toEqual([Code.Unavailable, expect.stringContaining("shutting down")]);
  expect((await connectClient(alone.url, EthService, alone.key, "grpc").chainId({})).chainId).toBe(0x7a69n);
  await alone.close();
});
