/**
 * Per-key rate limits: the provider's 429 and -32005 texts, Retry-After, a
 * batch of N counted as N + 1, and RESOURCE_EXHAUSTED with RetryInfo on gRPC.
 * Each limit is tripped by a single request, so no test depends on timing.
 */
import { once } from "node:events";
import { gzipSync } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import { JsonRpcProvider } from "ethers";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { JsonRpcErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { MemoryRateLimitStore, RateLimiter } from "../../src/auth/rate-limiter.js";
import { connectClient } from "../support/grpc-clients.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";

const PER_SECOND = "per-second-key-0001";
const PER_DAY = "per-day-key-0000001";
const DAILY_ONE = "daily-one-key-00001";
const SINGLE_ONE = "single-one-key-0001";
const WS_ONE = "ws-daily-one-key-01";
const DAILY_TWENTY = "daily-twenty-key-01";
const THREE_PER_SECOND = "three-per-second-01";

let anvil: AnvilNode;
let ng: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  ng = await startNodegate({
    upstreamUrl: anvil.url,
    keys: [
      { key: PER_SECOND, plan: "core", rateLimit: { requestsPerSecond: 2, requestsPerDay: 0 } },
      { key: PER_DAY, plan: "core", rateLimit: { requestsPerSecond: 0, requestsPerDay: 2 } },
      { key: DAILY_ONE, plan: "core", rateLimit: { requestsPerSecond: 0, requestsPerDay: 1 } },
      { key: SINGLE_ONE, plan: "core", rateLimit: { requestsPerSecond: 0, requestsPerDay: 1 } },
      { key: WS_ONE, plan: "core", rateLimit: { requestsPerSecond: 0, requestsPerDay: 1 } },
      { key: DAILY_TWENTY, plan: "core", rateLimit: { requestsPerSecond: 0, requestsPerDay: 20 } },
      { key: THREE_PER_SECOND, plan: "core", rateLimit: { requestsPerSecond: 3, requestsPerDay: 0 } },
    ],
  });
});
afterAll(async () => {
  await ng?.close();
  await anvil?.stop();
});

const batch = (n: number) => Array.from({ length: n }, (_, i) => rpc("eth_chainId", [], i + 1));

describe("rate limits", () => {
  it("a batch of N counts as N + 1: a batch of two never fits a limit of 2, so each call is refused under its own id, with why in data, HTTP 200 and no Retry-After", async () => {
    // Found from outside: Retry-After: 1 sent clients round forever with a batch that could never pass; so did a bare
    // 429, which ethers v6 resends for minutes (its default batch of 100 never fits the core plan's 100 per second).
    const res = await post(`${ng.url}/v3/${PER_SECOND}`, batch(2));
    expect(res.status).toBe(200);
    const error = {
      code: -32005,
      message: "project ID request rate exceeded",
      data: "this request counts 3 requests (a batch of N counts N + 1), more than the key's limit of 2 per second; send smaller batches",
    };
    expect(res.json).toEqual([
      { jsonrpc: "2.0", id: 1, error },
      { jsonrpc: "2.0", id: 2, error },
    ]);
    expect(res.headers.get("retry-after")).toBeNull();
    // Calls that fit still pass.
    expect((await post(`${ng.url}/v3/${PER_SECOND}`, rpc("eth_chainId", [], 1))).status).toBe(200);
  });

  it("the largest batch a key can send is one less than its per-second limit: it costs the whole limit, and passes", async () => {
    // Found by a mutation audit: refusing a batch whose cost equals the limit passed every test.
    const fits = await post(`${ng.url}/v3/${THREE_PER_SECOND}`, batch(2));
    expect(fits.json.map((m: { result?: string }) => m.result)).toEqual(["0x7a69", "0x7a69"]);
    const tooLarge = await post(`${ng.url}/v3/${THREE_PER_SECOND}`, batch(3));
    expect(tooLarge.json.map((m: { error?: { data?: string } }) => m.error?.data)).toEqual(
      Array(3).fill("this request counts 4 requests (a batch of N counts N + 1), more than the key's limit of 3 per second; send smaller batches"),
    );
  });

  it("ethers v6 batching more than the key's per-second limit gets each call's -32005 at once, and does not resend it", async () => {
    const provider = new JsonRpcProvider(`${ng.url}/v3/${PER_SECOND}`, 31337, { staticNetwork: true });
    try {
      // Two calls in one tick: ethers sends them as one batch, which costs 3 against a limit of 2.
      const results = await Promise.allSettled([provider.send("eth_chainId", []), provider.send("eth_blockNumber", [])]);
      for (const r of results) {
        expect(r.status).toBe("rejected");
        expect(String((r as PromiseRejectedResult).reason)).toContain("send smaller batches");
      }
    } finally {
      provider.destroy();
    }
  });

  it("a refused batch spends nothing: what was left of the day still serves smaller requests", async () => {
    // Found from outside: the refused batch's cost stayed counted, and the key was locked out until midnight with 4 calls left.
    for (let i = 0; i < 4; i++) expect((await post(`${ng.url}/v3/${DAILY_TWENTY}`, batch(3))).status).toBe(200);
    const refused = await post(`${ng.url}/v3/${DAILY_TWENTY}`, batch(4));
    expect(refused.status).toBe(429);
    expect((refused.json as { error: unknown }[])[0]?.error).toEqual({ code: -32005, message: "daily request count exceeded, request rate limited" });
    for (let i = 0; i < 4; i++) expect((await post(`${ng.url}/v3/${DAILY_TWENTY}`, rpc("eth_chainId", [], i))).status).toBe(200);
    expect((await post(`${ng.url}/v3/${DAILY_TWENTY}`, rpc("eth_chainId", [], 5))).status).toBe(429);
  });

  it("the daily limit has its own message", async () => {
    expect((await post(`${ng.url}/v3/${PER_DAY}`, rpc("eth_chainId", [], 1))).status).toBe(200);
    const res = await post(`${ng.url}/v3/${PER_DAY}`, batch(1));
    expect(res.status).toBe(429);
    expect((res.json as { error: unknown }[])[0]?.error).toEqual({ code: -32005, message: "daily request count exceeded, request rate limited" });
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("a single refused request keeps its id, as the spec's response id rule asks", async () => {
    expect((await post(`${ng.url}/v3/${SINGLE_ONE}`, rpc("eth_chainId", [], 1))).status).toBe(200);
    const res = await post(`${ng.url}/v3/${SINGLE_ONE}`, '{"jsonrpc":"2.0","id":"req-7","method":"eth_chainId","params":[]}');
    expect(res.status).toBe(429);
    expect(res.text).toBe('{"jsonrpc":"2.0","id":"req-7","error":{"code":-32005,"message":"daily request count exceeded, request rate limited"}}');
  });

  it("over WebSocket, a refused call is answered under its id, so the caller is not left waiting", async () => {
    const ws = new WebSocket(`${ng.url.replace("http", "ws")}/ws/v3/${WS_ONE}`);
    await once(ws, "open");
    try {
      const answers: unknown[] = [];
      ws.on("message", (data) => answers.push(JSON.parse(String(data))));
      ws.send(JSON.stringify(rpc("eth_chainId", [], 4999)));
      ws.send(JSON.stringify(rpc("eth_chainId", [], 5000)));
      await expect.poll(() => answers.length).toBe(2);
      expect(answers).toContainEqual({ jsonrpc: "2.0", id: 4999, result: "0x7a69" });
      expect(answers).toContainEqual({ jsonrpc: "2.0", id: 5000, error: { code: -32005, message: "daily request count exceeded, request rate limited" } });
    } finally {
      ws.close();
    }
  });

  it("gRPC: RESOURCE_EXHAUSTED with the JSON-RPC error and a RetryInfo delay", async () => {
    const client = connectClient(ng.url, EthService, DAILY_ONE, "grpc");
    expect((await client.chainId({})).chainId).toBe(31337n);
    const err = await client.chainId({}).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.ResourceExhausted);
    const [json] = err?.findDetails(JsonRpcErrorSchema) ?? [];
    expect(json?.code).toBe(-32005n);
    expect(json?.message).toBe("daily request count exceeded, request rate limited");
    const [retry] = err?.findDetails(RetryInfoSchema) ?? [];
    expect(Number(retry?.retryDelay?.seconds)).toBeGreaterThan(0);
    expect(retry?.retryDelay?.nanos ?? 0).toBe(0);
    // The native path shares the same counters, and says the same wait in whole seconds (a second may pass between).
    const native = await post(`${ng.url}/v3/${DAILY_ONE}`, rpc("eth_chainId"));
    expect(native.status).toBe(429);
    const retryAfter = Number(native.headers.get("retry-after"));
    expect(Math.abs(retryAfter - Number(retry?.retryDelay?.seconds)), `Retry-After ${retryAfter}`).toBeLessThanOrEqual(1);
    // A Connect caller's 429 carries the header too, for HTTP clients and proxies that read only that (found from outside).
    // Whichever way Connect serves it: a POST, a compressed POST, a GET.
    const path = `${ng.url}/${EthService.typeName}/ChainId`;
    const connects = [
      fetch(path, { method: "POST", headers: { "content-type": "application/json", "x-api-key": DAILY_ONE }, body: "{}" }),
      fetch(path, { method: "POST", headers: { "content-type": "application/json", "content-encoding": "gzip", "x-api-key": DAILY_ONE }, body: gzipSync("{}") }),
      fetch(`${path}?connect=v1&encoding=json&message=%7B%7D`, { headers: { "x-api-key": DAILY_ONE } }),
    ];
    for (const connect of await Promise.all(connects)) {
      expect(connect.status).toBe(429);
      expect(Math.abs(Number(connect.headers.get("retry-after")) - retryAfter), `Retry-After ${connect.headers.get("retry-after")}`).toBeLessThanOrEqual(1);
    }
  });
});

describe("RateLimiter windows", () => {
  it("resets the per-second count in the next second and keeps keys apart", async () => {
    const limiter = new RateLimiter(new MemoryRateLimitStore());
    const limit = { requestsPerSecond: 2, requestsPerDay: 0 };
    const t = 1_700_000_000_000;
    expect(await limiter.take("a", limit, 2, t)).toEqual({ ok: true });
    expect((await limiter.take("a", limit, 1, t + 10)).ok).toBe(false);
    expect(await limiter.take("b", limit, 1, t + 10)).toEqual({ ok: true });
    expect(await limiter.take("a", limit, 1, t + 1000)).toEqual({ ok: true });
  });

  it("a request refused by one window is counted in none", async () => {
    const limiter = new RateLimiter(new MemoryRateLimitStore());
    const limit = { requestsPerSecond: 3, requestsPerDay: 4 };
    const t = 1_700_000_000_000;
    expect(await limiter.take("a", limit, 3, t)).toEqual({ ok: true });
    expect((await limiter.take("a", limit, 2, t + 1000)).ok).toBe(false); // the day has 1 left
    // Had the refused 2 stayed in the new second's count, this would be refused by the second.
    expect(await limiter.take("a", limit, 1, t + 1000)).toEqual({ ok: true });
    expect(await limiter.take("a", limit, 1, t + 2000)).toMatchObject({ ok: false, window: "day" });
    // A second refused by its own window leaves the day alone too.
    const other = { requestsPerSecond: 1, requestsPerDay: 2 };
    expect(await limiter.take("b", other, 1, t)).toEqual({ ok: true });
    expect(await limiter.take("b", other, 1, t + 10)).toMatchObject({ ok: false, window: "second" });
    expect(await limiter.take("b", other, 1, t + 1000)).toEqual({ ok: true });
  });

  it("a key over its day is told to come back at the next UTC midnight, a key over its second in 1 s", async () => {
    const limiter = new RateLimiter(new MemoryRateLimitStore());
    const midnight = Date.UTC(2026, 10, 29);
    const day = { requestsPerSecond: 0, requestsPerDay: 1 };
    expect(await limiter.take("a", day, 1, midnight + 1000)).toEqual({ ok: true });
    // 23:59:59 after 00:00:01 holds 86,399 s; a part of a second left counts as a whole one.
    expect(await limiter.take("a", day, 1, midnight + 1000)).toEqual({ ok: false, window: "day", retryAfterSeconds: 86_399 });
    expect(await limiter.take("a", day, 1, midnight + 86_399_500)).toEqual({ ok: false, window: "day", retryAfterSeconds: 1 });
    expect(await limiter.take("a", day, 1, midnight + 86_400_000)).toEqual({ ok: true });
    const second = { requestsPerSecond: 1, requestsPerDay: 0 };
    expect(await limiter.take("b", second, 1, midnight)).toEqual({ ok: true });
    expect(await limiter.take("b", second, 1, midnight + 10)).toEqual({ ok: false, window: "second", retryAfterSeconds: 1 });
  });
});
