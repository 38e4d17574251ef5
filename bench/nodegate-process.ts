/**
 * nodegate as the benchmark runs it: its own process (its CPU and memory are
 * measured from outside), configured from NODEGATE_BENCH (JSON), with the
 * production defaults otherwise (info-level request logs to stdout, cache and
 * coalescing on). With "workers" > 1 it runs src/cluster.ts as nodegate's
 * own NODEGATE_WORKERS does.
 *
 * IPC: sends {ready, port, pids}; answers {stats} with each network's cache
 * counters and {gc} by collecting garbage (the process runs with --expose-gc).
 */
import cluster from "node:cluster";
import { createApp } from "../src/app.js";
import { forkWorkers } from "../src/cluster.js";
import { type Config } from "../src/config/config.js";
import { loadConfig } from "../src/config/load.js";
import { createLogger } from "../src/observability/log.js";

export interface BenchNodegateOptions {
  upstreamUrl: string;
  key: string;
  workers?: number;
  /** Off: no cache store and no coalescing. */
  cache?: boolean;
}

const options = JSON.parse(process.env.NODEGATE_BENCH ?? "{}") as BenchNodegateOptions;

function config(): Config {
  // The production defaults (as npm start has them), pointed at the benchmark's upstream.
  const c = loadConfig({ NODEGATE_UPSTREAM_URL: options.upstreamUrl, NODEGATE_LOG_LEVEL: process.env.NODEGATE_LOG_LEVEL ?? "info" }, undefined);
  c.port = 0;
  // The custom plan has no rate limits: the benchmark measures the proxy, not the plan.
  c.keys = [{ key: options.key, plan: "custom" }];
  if (options.cache === false) delete c.cache;
  return c;
}

async function serve(): Promise<{ port: number; stats: () => unknown }> {
  const c = config();
  const { gateway, server, learnFinality } = createApp(c, createLogger(c.logLevel), c.keys ?? []);
  const address = await server.listen(0, "127.0.0.1");
  learnFinality(); // as src/main.ts does
  return { port: address.port, stats: () => Object.fromEntries(gateway.networks().map((n) => [n.name, n.cache?.stats])) };
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

if ((options.workers ?? 1) > 1 && cluster.isPrimary) {
  const workers = await forkWorkers(options.workers as number);
  process.send?.({ type: "ready", port: workers.address.port, pids: [process.pid, ...workers.pids()] });
  process.on("message", (m: { type?: string }) => {
    if (m.type === "stats") process.send?.({ type: "stats", stats: undefined });
  });
  process.on("SIGTERM", () => void workers.stop(5000).then(() => process.exit(0)));
} else {
  const { port, stats } = await serve();
  if (cluster.isPrimary) {
    process.send?.({ type: "ready", port, pids: [process.pid] });
    process.on("message", (m: { type?: string }) => {
      if (m.type === "stats") process.send?.({ type: "stats", stats: stats() });
      if (m.type === "gc") {
        gc();
        process.send?.({ type: "gc" });
      }
    });
    process.on("SIGTERM", () => process.exit(0));
  }
}
