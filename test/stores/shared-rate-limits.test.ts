/**
 * Two nodegate instances behind one Redis, as behind a load balancer: a key's
 * daily limit is spent across both (native and gRPC callers alike). With
 * Redis gone both keep serving and each enforces the limit on what it sees
 * (fail open, documented in docs/scaling.md); when Redis is back the
 * counters are shared again.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { RedisClient, type RedisClientState } from "../../src/redis/resp-client.js";
import { connectClient } from "../support/grpc-clients.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { redisRequirement, type RedisServer, startRedisServer } from "../support/redis-server.js";
import { describeRequiring } from "../support/system-packages.js";

const THREE_A_DAY = "three-a-day-key-0001";
const OTHER = "other-key-0000000001";
const FULL = "full-redis-key-000001";

function reaches(ng: TestNodegate, state: RedisClientState): Promise<void> {
  const client = ng.stores.redis;
  if (client === undefined) throw new Error("this nodegate has no Redis store");
  if (client.state === state) return Promise.resolve();
  return new Promise((resolve) => {
    const stop = client.onStateChange((s) => {
      if (s === state) {
        stop();
        resolve();
      }
    });
  });
}

async function status(ng: TestNodegate, key = THREE_A_DAY): Promise<number> {
  return (await post(`${ng.url}/v3/${key}`, rpc("eth_chainId"))).status;
}

describeRequiring(redisRequirement, "rate limits shared through Redis", () => {
  let anvil: AnvilNode;
  let redis: RedisServer;
  let a: TestNodegate;
  let b: TestNodegate;

  beforeAll(async () => {
    [anvil, redis] = await Promise.all([startAnvil(), startRedisServer()]);
    const options = {
      upstreamUrl: anvil.url,
      keys: [
        { key: THREE_A_DAY, plan: "core" as const, rateLimit: { requestsPerSecond: 0, requestsPerDay: 3 } },
        { key: OTHER, plan: "core" as const, rateLimit: { requestsPerSecond: 0, requestsPerDay: 3 } },
        { key: FULL, plan: "core" as const, rateLimit: { requestsPerSecond: 0, requestsPerDay: 3 } },
      ],
      config: { stores: { redisUrl: redis.url, keyPrefix: "shared-test:" } },
    };
    [a, b] = await Promise.all([startNodegate(options), startNodegate(options)]);
    await Promise.all([reaches(a, "ready"), reaches(b, "ready")]);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await redis?.stop();
    await anvil?.stop();
  });

  it("spends one daily limit across both instances and both front doors", async () => {
    expect(await status(a)).toBe(200);
    expect((await connectClient(b.url, EthService, THREE_A_DAY, "grpc").chainId({})).chainId).toBe(31337n);
    expect(await status(a)).toBe(200);
    // The fourth request of the day, on the instance that has seen only one.
    const fourth = await post(`${b.url}/v3/${THREE_A_DAY}`, rpc("eth_chainId"));
    expect(fourth.status).toBe(429);
    expect(fourth.json.error).toEqual({ code: -32005, message: "daily request count exceeded, request rate limited" });
    const grpc = await connectClient(a.url, EthService, THREE_A_DAY, "grpc")
      .chainId({})
      .then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(grpc?.code).toBe(Code.ResourceExhausted);
    // Another key has its own counter.
    expect(await status(b, OTHER)).toBe(200);
  });

  it("reports Redis as up in /metrics", async () => {
    const text = await (await fetch(`${a.url}/metrics`)).text();
    expect(text).toMatch(/^nodegate_redis_up 1$/m);
  });

  it("Redis full: calls are served and the refusals counted in /metrics, where redis_up stays 1", async () => {
    // Found from outside: a full Redis (its default policy refuses writes) turned shared limits per-instance with
    // nothing but a throttled warning to show it.
    const admin = new RedisClient({ url: redis.url });
    await admin.ready();
    try {
      await admin.command(["CONFIG", "SET", "maxmemory", "1"]);
      expect(await status(a, FULL)).toBe(200);
      const text = await (await fetch(`${a.url}/metrics`)).text();
      expect(text).toMatch(/^nodegate_redis_up 1$/m);
      expect(Number(/^nodegate_redis_command_failures_total\{store="rate limits"\} (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(0);
    } finally {
      await admin.command(["CONFIG", "SET", "maxmemory", "0"]);
      await admin.close();
    }
  });

  it("Redis down: both keep serving, each counting the limit itself; Redis back: shared again", async () => {
    await redis.stop();
    await Promise.all([reaches(a, "down"), reaches(b, "down")]);
    expect(a.logs.some((l) => l.level === 40 && String(l.msg).startsWith("redis unavailable"))).toBe(true);
    expect(await (await fetch(`${b.url}/metrics`)).text()).toMatch(/^nodegate_redis_up 0$/m);

    // The key had spent its day in Redis; locally each instance starts from zero.
    expect([await status(a), await status(a), await status(a)]).toEqual([200, 200, 200]);
    expect(await status(a)).toBe(429);
    expect(await status(b)).toBe(200);

    await redis.start();
    await Promise.all([reaches(a, "ready"), reaches(b, "ready")]);
    expect(a.logs.some((l) => l.level === 30 && String(l.msg).startsWith("redis connected"))).toBe(true);
    // This Redis restarted empty (no persistence): a fresh shared count of three.
    expect([await status(b), await status(a), await status(b)]).toEqual([200, 200, 200]);
    expect(await status(a)).toBe(429);
    expect(await status(b)).toBe(429);
  });
});
