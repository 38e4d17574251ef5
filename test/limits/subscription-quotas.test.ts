/**
 * limits.maxSubscriptionsPerKey across doors: eth_subscribe on native
 * WebSocket connections and the typed Subscribe* streams draw on one count
 * per key. The one over the limit is refused with -32005 (RESOURCE_EXHAUSTED
 * on the typed door); an unsubscribe, a stream's end or a closed connection
 * gives its subscription back; other keys are not affected.
 */
import { ConnectError, Code } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { DEFAULT_LIMITS } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { connectClient } from "../support/grpc-clients.js";
import { jsonRpcErrorOfConnect } from "../support/grpc-status.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { openWsCaller } from "../support/ws-calls.js";

const KEY = "sub-quota-key-61d2e0a9";
const OTHER_KEY = "sub-quota-other-key-77c1";

let anvil: AnvilNode;
let ng: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  ng = await startNodegate({
    upstreamUrl: anvil.wsUrl,
    keys: [KEY, OTHER_KEY],
    config: { limits: { ...DEFAULT_LIMITS, maxSubscriptionsPerKey: 2 } },
  });
});
afterAll(async () => {
  await ng?.close();
  await anvil?.stop();
});

function held(key: string): number {
  const apiKey = ng.gateway.access.authenticate({ key, authorization: undefined, origin: undefined, userAgent: undefined });
  return ng.gateway.quotas.held(apiKey, "subscriptions");
}

/** Opens a typed newHeads stream from block 0 and resolves with its first head (history flows at once), or the error it ends with. */
async function typedStream(key: string, signal: AbortSignal): Promise<{ first: bigint } | { error: ConnectError }> {
  const client = connectClient(ng.url, EthService, key, "grpc");
  try {
    for await (const res of client.subscribeNewHeads({ fromBlock: 0n }, { signal })) return { first: res.header?.number ?? -1n };
    return { error: new ConnectError("stream ended without a head", Code.Unknown) };
  } catch (err) {
    return { error: ConnectError.from(err) };
  }
}

it("counts eth_subscribe and typed streams together per key, refuses the one over the limit, and takes each back when it ends", async () => {
  const ws = await openWsCaller(`${ng.url.replace("http", "ws")}/ws/v3/${KEY}`);
  const first = await ws.call("eth_subscribe", ["newHeads"]);
  const second = await ws.call("eth_subscribe", ["newHeads"]);
  expect([typeof first.result, typeof second.result]).toEqual(["string", "string"]);
  expect(held(KEY)).toBe(2);

  const third = await ws.call("eth_subscribe", ["newHeads"]);
  expect(third.error).toEqual({ code: -32005, message: "too many subscriptions for this key", data: { limit: 2 } });
  const refused = await typedStream(KEY, new AbortController().signal);
  expect("error" in refused && refused.error.code).toBe(Code.ResourceExhausted);
  expect("error" in refused && jsonRpcErrorOfConnect(refused.error).message).toBe("too many subscriptions for this key");

  // Another key has its own count.
  const otherWs = await openWsCaller(`${ng.url.replace("http", "ws")}/ws/v3/${OTHER_KEY}`);
  expect(typeof (await otherWs.call("eth_subscribe", ["newHeads"])).result).toBe("string");
  await otherWs.close();

  // An unsubscribe gives one back: a typed stream now gets in, and holds it while it runs.
  expect((await ws.call("eth_unsubscribe", [first.result])).result).toBe(true);
  expect(held(KEY)).toBe(1);
  const cancel = new AbortController();
  expect(await typedStream(KEY, cancel.signal)).toEqual({ first: 0n });
  cancel.abort();
  for (let i = 0; i < 100 && held(KEY) !== 1; i++) await new Promise((r) => setTimeout(r, 20));
  expect(held(KEY)).toBe(1);

  // A closed connection gives back every subscription it held.
  await ws.close();
  for (let i = 0; i < 100 && held(KEY) !== 0; i++) await new Promise((r) => setTimeout(r, 20));
  expect(held(KEY)).toBe(0);
  expect(held(OTHER_KEY)).toBe(0);
});
