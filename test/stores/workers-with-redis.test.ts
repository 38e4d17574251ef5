/**
 * NODEGATE_WORKERS with NODEGATE_REDIS_URL, started as an operator starts it
 * (src/main.ts): the banner says the workers share their counters and cache
 * through Redis, and a scrape of /metrics (summed over the workers by the
 * primary) reads nodegate_redis_up 1 while every worker is connected, not
 * one per worker (found from outside: the banner said "per worker", and the
 * gauge read 2).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { redisRequirement, type RedisServer, startRedisServer } from "../support/redis-server.js";
import { describeRequiring } from "../support/system-packages.js";
import { startWorkersPrimary, type WorkersPrimary } from "../support/workers-primary.js";

const KEY = "workers-redis-key-0001";

describeRequiring(redisRequirement, "workers sharing Redis", () => {
  let anvil: AnvilNode;
  let redis: RedisServer;
  let nodegate: WorkersPrimary;
  let port = 0;

  beforeAll(async () => {
    [anvil, redis] = await Promise.all([startAnvil(), startRedisServer()]);
    nodegate = await startWorkersPrimary({ NODEGATE_UPSTREAM_URL: anvil.url, NODEGATE_API_KEYS: KEY, NODEGATE_WORKERS: "2", NODEGATE_LOG_LEVEL: "warn", NODEGATE_REDIS_URL: redis.url });
    port = nodegate.port;
  }, 60_000);
  afterAll(async () => {
    nodegate?.kill();
    await redis?.stop();
    await anvil?.stop();
  });

  it("the banner says the counters are shared, and /metrics reads Redis up as 1, not once per worker", async () => {
    expect(nodegate.stdout).toContain("workers:           2 processes on this port (caches and rate-limit counters shared through Redis)");
    // Each worker connects on its own; the scrape reads 1 once both have.
    let text = "";
    for (let i = 0; i < 50 && !/^nodegate_redis_up 1$/m.test(text); i++) {
      await new Promise((r) => setTimeout(r, 100));
      text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    }
    expect(text).toMatch(/^nodegate_redis_up 1$/m);
    // Both workers are connected within these 2 s: summed, the gauge would read 2.
    const readings = new Set<string>();
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 100));
      readings.add(/^nodegate_redis_up (\S+)$/m.exec(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text())?.[1] ?? "absent");
    }
    expect([...readings]).toEqual(["1"]);
    await redis.stop();
    for (let i = 0; i < 50 && !/^nodegate_redis_up 0$/m.test(text); i++) {
      await new Promise((r) => setTimeout(r, 100));
      text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    }
    expect(text).toMatch(/^nodegate_redis_up 0$/m);
  });
});
