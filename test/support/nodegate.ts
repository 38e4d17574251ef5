/**
 * Starts nodegate in-process on an ephemeral port, with its log lines
 * captured (tests assert on them). Its keys, key secrets and upstream keys
 * are registered with the suite-wide secret scan, which reads every log line.
 */
import { Writable } from "node:stream";
import { type AppDependencies, createApp } from "../../src/app.js";
import { type Config, DEFAULT_CIRCUIT_BREAKER, DEFAULT_LIMITS, DEFAULT_PASS_THROUGH, DEFAULT_PLANS, DEFAULT_SUBSCRIPTIONS, DEFAULT_WEBSOCKET, type KeyConfig, type NetworkConfig } from "../../src/config/config.js";
import type { Gateway } from "../../src/gateway.js";
import { createLogger } from "../../src/observability/log.js";
import type { Stores } from "../../src/stores/create-stores.js";
import type { NodegateServer } from "../../src/server.js";
import { recordSeen, registerSecret, registerUrlSecrets } from "./secret-scan.js";

export interface TestNodegate {
  /** Base URL, http://127.0.0.1:PORT */
  url: string;
  /** host:port for gRPC clients. */
  address: string;
  port: number;
  key: string;
  /** JSON-RPC URL for `key`: http://127.0.0.1:PORT/v3/<key> */
  rpcUrl: string;
  /** Native WebSocket URL for `key`: ws://127.0.0.1:PORT/ws/v3/<key> */
  wsUrl: string;
  gateway: Gateway;
  /** Rate-limit and cache stores (Redis when config.stores.redisUrl is set). */
  stores: Stores;
  /** The listening side (requests in flight, graceful close). */
  server: NodegateServer;
  logs: Record<string, unknown>[];
  /** What src/main.ts does once listening: each caching network asks for its finalized block, in the background. */
  learnFinality(): void;
  close(): Promise<void>;
}

export interface StartOptions {
  upstreamUrl: string;
  /** Accepted keys: plain strings (growth plan) or full key settings. */
  keys?: (string | KeyConfig)[];
  networks?: NetworkConfig[];
  config?: Partial<Config>;
  serverOptions?: AppDependencies["serverOptions"];
}

/** Every log line any test nodegate wrote in this worker (for the secret scan). */
export const allLogLines: string[] = [];

export async function startNodegate(options: StartOptions): Promise<TestNodegate> {
  const keys: KeyConfig[] = (options.keys ?? ["test-key-0123456789abcdef"]).map((k) => (typeof k === "string" ? { key: k, plan: "growth" } : k));
  const config: Config = {
    host: "127.0.0.1",
    port: 0,
    keys,
    plans: structuredClone(DEFAULT_PLANS),
    passThrough: { methods: [...DEFAULT_PASS_THROUGH], allowWrites: false },
    corsOrigins: [],
    warnings: [],
    networks: options.networks ?? [{ name: "ethereum", family: "eth", upstreams: [{ label: "primary", url: options.upstreamUrl }] }],
    defaultNetwork: "ethereum",
    embeddedAnvil: false,
    upstreamTimeoutMs: 10_000,
    circuitBreaker: { ...DEFAULT_CIRCUIT_BREAKER },
    limits: { ...DEFAULT_LIMITS },
    logLevel: "info",
    embeddedTransport: "http",
    websocket: { ...DEFAULT_WEBSOCKET },
    tls: undefined,
    drainMs: 5000,
    subscriptions: { ...DEFAULT_SUBSCRIPTIONS },
    ...options.config,
  };
  for (const k of keys) {
    registerSecret(k.key, "client key");
    registerSecret(k.secret, "client key secret");
  }
  for (const network of config.networks) for (const u of network.upstreams) registerUrlSecrets(u.url);
  if (config.stores?.redisUrl !== undefined) registerUrlSecrets(config.stores.redisUrl);
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split("\n")) {
        if (!line) continue;
        allLogLines.push(line);
        recordSeen("nodegate log line", line);
        logs.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  const { gateway, server, stores, learnFinality } = createApp(config, createLogger(config.logLevel, sink), keys, { serverOptions: options.serverOptions });
  const address = await server.listen(0, "127.0.0.1");
  const key = (keys[0] as KeyConfig).key;
  return {
    url: `http://127.0.0.1:${address.port}`,
    address: `127.0.0.1:${address.port}`,
    port: address.port,
    key,
    rpcUrl: `http://127.0.0.1:${address.port}/v3/${key}`,
    wsUrl: `ws://127.0.0.1:${address.port}/ws/v3/${key}`,
    gateway,
    stores,
    server,
    learnFinality,
    logs,
    close: () => server.close(),
  };
}
