/**
 * Builds a running nodegate from a Config: upstream clients, networks, the
 * method table and policies, access control, the gateway and the server.
 * Used by main and by tests.
 */
import type { Logger } from "pino";
import { AccessControl } from "./auth/access-control.js";
import { ApiKeyStore } from "./auth/api-keys.js";
import { MemoryRateLimitStore, type RateLimitStore, RateLimiter } from "./auth/rate-limiter.js";
import type { CacheStore } from "./cache/cache-store.js";
import { ethFinalityRules } from "./cache/eth-finality-rules.js";
import { MemoryCacheStore } from "./cache/memory-cache-store.js";
import { type Config, DEFAULT_FAILOVER, type KeyConfig } from "./config.js";
import { Gateway } from "./gateway.js";
import { createPolicies } from "./methods/default-policies.js";
import { createMethodTable } from "./methods/default-table.js";
import { createNodegateServer, type NodegateServer } from "./server.js";
import { HttpUpstream } from "./upstream/http-upstream.js";
import { Network } from "./upstream/network.js";

export interface App {
  gateway: Gateway;
  server: NodegateServer;
}

export interface AppDependencies {
  /** Where rate-limit counters live; in-process by default. */
  rateLimitStore?: RateLimitStore;
  /** Where final answers live; in-process (config.cache.maxBytes) by default. */
  cacheStore?: CacheStore;
}

export function createApp(config: Config, log: Logger, keys: readonly KeyConfig[], deps: AppDependencies = {}): App {
  const cacheStore = deps.cacheStore ?? (config.cache && config.cache.maxBytes > 0 ? new MemoryCacheStore({ maxBytes: config.cache.maxBytes }) : undefined);
  const networks = config.networks.map(
    (n) =>
      new Network({
        name: n.name,
        family: n.family,
        timeoutMs: config.upstreamTimeoutMs,
        failover: n.failover ?? DEFAULT_FAILOVER,
        breaker: config.circuitBreaker,
        log,
        cache: config.cache && { store: cacheStore, coalesce: config.cache.coalesce, rules: n.family === "eth" ? ethFinalityRules : new Map() },
        finalizedMaxAgeMs: config.cache?.finalizedMaxAgeMs,
        upstreams: n.upstreams.map((u) => new HttpUpstream({ url: u.url, label: `${n.name}/${u.label}` })),
      }),
  );
  const access = new AccessControl(new ApiKeyStore(keys, config.plans), new RateLimiter(deps.rateLimitStore ?? new MemoryRateLimitStore()));
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
  });
  return { gateway, server: createNodegateServer(gateway) };
}
