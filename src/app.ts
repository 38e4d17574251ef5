/**
 * Builds a running nodegate from a Config: upstream clients, networks, the
 * method table and policies, access control, the gateway and the server.
 * Used by main and by tests.
 */
// First, before anything loads @bufbuild/protobuf, which looks the method up once (see the module).
import "./codec/uint8array-to-base64.js";
import { readFileSync } from "node:fs";
import type { Logger } from "pino";
import { AccessControl } from "./auth/access-control.js";
import { ApiKeyStore } from "./auth/api-keys.js";
import { type RateLimitStore, RateLimiter } from "./auth/rate-limiter.js";
import { ethFinalityRules } from "./cache/eth-finality-rules.js";
import type { CacheStore } from "./cache/store.js";
import { type Config, DEFAULT_FAILOVER, type KeyConfig } from "./config/config.js";
import { Gateway } from "./gateway.js";
import { createPolicies } from "./methods/default-policies.js";
import { createMethodTable } from "./methods/default-table.js";
import { Metrics } from "./observability/metrics.js";
import { createNodegateServer, type NodegateServer, type NodegateServerOptions } from "./server.js";
import { createStores, type Stores } from "./stores/create-stores.js";
import { createUpstream } from "./upstream/create-upstream.js";
import { HeldAnswers } from "./upstream/held-answers.js";
import { ReplyBudget } from "./upstream/reply-budget.js";
import { Network } from "./upstream/network.js";

export interface App {
  gateway: Gateway;
  server: NodegateServer;
  /** Rate-limit counters and the cache store (in process, or Redis when configured). */
  stores: Stores;
  /**
   * Asks each network that stores final answers for its finalized block, once, in the background: an answer asked
   * for before the first reading came back is never stored, so a process that learns finality when it starts can
   * store its first callers' answers.
   */
  learnFinality(): void;
  /** What main.ts does once listening: each network asks its upstreams which chain they serve (partners on another are never failed over to). */
  learnChainIds(): void;
}

export interface AppDependencies {
  /** Where rate-limit counters live; in-process by default. */
  rateLimitStore?: RateLimitStore;
  /** Where final answers live; in-process (config.cache.maxBytes) by default. */
  cacheStore?: CacheStore;
  /** Timers of the listening side that config does not set (tests lengthen them to rule them out). */
  serverOptions?: Pick<NodegateServerOptions, "healthWatchIntervalMs">;
}

export function createApp(config: Config, log: Logger, keys: readonly KeyConfig[], deps: AppDependencies = {}): App {
  const metrics = new Metrics();
  const stores = createStores(config.stores, log, metrics, config.cache?.maxBytes);
  // The cache store is the shared one (Redis) when configured, else the in-process LRU.
  const cacheStore = deps.cacheStore ?? (config.cache && config.cache.maxBytes > 0 ? stores.cache : undefined);
  // One budget for every HTTP upstream: the memory it bounds is the process's.
  const replyBudget = new ReplyBudget(config.limits.maxReplyBytesInFlight);
  metrics.watchReplyBytes(() => replyBudget.held);
  const networks = config.networks.map(
    (n) =>
      new Network({
        name: n.name,
        family: n.family,
        timeoutMs: config.upstreamTimeoutMs,
        failover: n.failover ?? DEFAULT_FAILOVER,
        breaker: config.circuitBreaker,
        metrics,
        log,
        cache: config.cache && { store: cacheStore, coalesce: config.cache.coalesce, coalesceWindowMs: config.cache.coalesceWindowMs, rules: n.family === "eth" ? ethFinalityRules : new Map() },
        finalizedMaxAgeMs: config.cache?.finalizedMaxAgeMs,
        upstreams: n.upstreams.map((u) => createUpstream(u.url, `${n.name}/${u.label}`, config.websocket, log, replyBudget, u)),
      }),
  );
  const access = new AccessControl(new ApiKeyStore(keys, config.plans), new RateLimiter(deps.rateLimitStore ?? stores.rateLimits));
  const gateway = new Gateway({
    table: createMethodTable(),
    policies: createPolicies(),
    networks,
    defaultNetwork: config.defaultNetwork,
    access,
    limits: config.limits,
    passThrough: config.passThrough,
    corsOrigins: config.corsOrigins,
    log,
    metrics,
    closers: [() => stores.close()],
    subscriptions: config.subscriptions,
    heldAnswers: new HeldAnswers(replyBudget, config.limits.maxReplyBytesPerKey),
  });
  const tls = config.tls ? { cert: readFileSync(config.tls.certFile), key: readFileSync(config.tls.keyFile) } : undefined;
  const learnFinality = (): void => {
    for (const network of networks) if (network.cache?.storesFinalAnswers) void network.head.finalized();
  };
  const learnChainIds = (): void => {
    for (const network of networks) network.learnChainIds();
  };
  return { gateway, stores, learnFinality, learnChainIds, server: createNodegateServer(gateway, { wsPingIntervalMs: config.websocket.pingIntervalMs, tls, drainMs: config.drainMs, ...deps.serverOptions }) };
}
