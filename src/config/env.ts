/**
 * Environment overrides, applied after the YAML file. These variables always
 * work, so the service can be scripted and containerised:
 *   NODEGATE_UPSTREAM_URL  http(s) URL of the default network's upstream; when set, no Anvil is started
 *   NODEGATE_UPSTREAM_WS_URL  ws(s) URL of the default network's upstream; when set, it is used instead of
 *                          NODEGATE_UPSTREAM_URL (one multiplexed WebSocket) and no Anvil is started
 *   NODEGATE_UPSTREAM_TRANSPORT  http (default) or ws: which of the embedded Anvil's endpoints nodegate
 *                          uses when no upstream URL is set
 *   NODEGATE_STARKNET_UPSTREAM_URL  http(s) URL of a Starknet node; defines the network "starknet"
 *                          (callers reach it at /starknet/v3/<KEY> or with x-nodegate-network: starknet)
 *   NODEGATE_PORT          listen port (default 8080)
 *   NODEGATE_HOST          listen address (default 127.0.0.1)
 *   NODEGATE_API_KEYS      comma-separated accepted keys, each optionally "key:plan" (default plan core;
 *                          default: one generated development key on the growth plan)
 *   NODEGATE_LOG_LEVEL     pino level (default info)
 *   NODEGATE_REDIS_URL     redis:// or rediss:// URL: rate-limit counters and the cache are shared there
 *   NODEGATE_CONFIG        path of the YAML configuration file
 *   NODEGATE_WORKERS       worker processes sharing the port (default 1; see src/cluster.ts)
 */
import { parseRedisUrl } from "../redis/redis-url.js";
import { type Config, ConfigError, type KeyConfig, type NetworkConfig } from "./config.js";
import { httpUrl, KEY_PATTERN, LOG_LEVELS, plan } from "./values.js";

/** Keys from NODEGATE_API_KEYS, held to the file's rules; an error names the entry by position, never by its text. */
function parseKeys(value: string): KeyConfig[] {
  const keys: KeyConfig[] = [];
  const seen = new Set<string>();
  const entries = value
    .split(",")
    .map((k) => k.trim())
    .filter(Boolean);
  for (const [i, entry] of entries.entries()) {
    const fail = (m: string): never => {
      throw new ConfigError(`NODEGATE_API_KEYS: entry ${i + 1}: ${m}`);
    };
    const parts = entry.split(":");
    if (parts.length > 2) fail(`want "key" or "key:plan", got ${parts.length} parts separated by ":"`);
    const [key, planName] = parts as [string, string | undefined];
    if (!KEY_PATTERN.test(key)) fail("want 8 to 128 letters, digits, - or _");
    if (seen.has(key)) fail("duplicate key");
    seen.add(key);
    keys.push({ key, plan: plan(planName, fail) });
  }
  return keys;
}

export function applyEnv(config: Config, env: NodeJS.ProcessEnv): void {
  const fail = (name: string) => (m: string): never => {
    throw new ConfigError(`${name}: ${m}`);
  };
  if (env.NODEGATE_UPSTREAM_URL || env.NODEGATE_UPSTREAM_WS_URL) {
    // Both are checked; the WebSocket URL wins when both are set.
    const http = env.NODEGATE_UPSTREAM_URL ? httpUrl(env.NODEGATE_UPSTREAM_URL, fail("NODEGATE_UPSTREAM_URL")) : undefined;
    const ws = env.NODEGATE_UPSTREAM_WS_URL ? httpUrl(env.NODEGATE_UPSTREAM_WS_URL, fail("NODEGATE_UPSTREAM_WS_URL"), ["ws:", "wss:"]) : undefined;
    const network = config.networks.find((n) => n.name === config.defaultNetwork) as NetworkConfig;
    // The file's label stays (its partners' labels were checked against it); "primary" when the file named none.
    // So do its connections and batch size, for an http(s) URL.
    const connections = ws === undefined ? network.upstreams[0]?.connections : undefined;
    const batchSize = ws === undefined ? network.upstreams[0]?.batchSize : undefined;
    network.upstreams = [
      { label: network.upstreams[0]?.label ?? "primary", url: (ws ?? http) as string, ...(connections === undefined ? {} : { connections }), ...(batchSize === undefined ? {} : { batchSize }) },
      ...network.upstreams.slice(1),
    ];
  }
  if (env.NODEGATE_UPSTREAM_TRANSPORT) {
    const t = env.NODEGATE_UPSTREAM_TRANSPORT;
    if (t !== "http" && t !== "ws") fail("NODEGATE_UPSTREAM_TRANSPORT")(`want http or ws, got "${t}"`);
    config.embeddedTransport = t as "http" | "ws";
  }
  if (env.NODEGATE_STARKNET_UPSTREAM_URL) {
    const url = httpUrl(env.NODEGATE_STARKNET_UPSTREAM_URL, fail("NODEGATE_STARKNET_UPSTREAM_URL"));
    const existing = config.networks.find((n) => n.name === "starknet");
    if (existing !== undefined && existing.family !== "starknet") {
      fail("NODEGATE_STARKNET_UPSTREAM_URL")('the configured network "starknet" is not a starknet network');
    }
    if (existing) existing.upstreams = [{ ...existing.upstreams[0], label: existing.upstreams[0]?.label ?? "primary", url }, ...existing.upstreams.slice(1)];
    else config.networks.push({ name: "starknet", family: "starknet", upstreams: [{ label: "primary", url }] });
  }
  if (env.NODEGATE_PORT) {
    const n = digitsOnly(env.NODEGATE_PORT, 5);
    if (!Number.isInteger(n) || n < 0 || n > 65535) fail("NODEGATE_PORT")(`want a port number 0-65535, got "${env.NODEGATE_PORT}"`);
    config.port = n;
  }
  if (env.NODEGATE_HOST) config.host = env.NODEGATE_HOST;
  if (env.NODEGATE_API_KEYS) {
    const keys = parseKeys(env.NODEGATE_API_KEYS);
    if (keys.length > 0) config.keys = keys;
  }
  if (env.NODEGATE_LOG_LEVEL) {
    if (!LOG_LEVELS.includes(env.NODEGATE_LOG_LEVEL)) fail("NODEGATE_LOG_LEVEL")(`want one of ${LOG_LEVELS.join(", ")}, got "${env.NODEGATE_LOG_LEVEL}"`);
    config.logLevel = env.NODEGATE_LOG_LEVEL;
  }
  if (env.NODEGATE_REDIS_URL) {
    try {
      parseRedisUrl(env.NODEGATE_REDIS_URL);
    } catch (err) {
      fail("NODEGATE_REDIS_URL")((err as Error).message);
    }
    config.stores = { ...config.stores, redisUrl: env.NODEGATE_REDIS_URL };
  }
  if (env.NODEGATE_WORKERS) {
    const n = digitsOnly(env.NODEGATE_WORKERS, 3);
    if (!Number.isInteger(n) || n < 1 || n > 256) fail("NODEGATE_WORKERS")(`want a number of processes 1-256, got "${env.NODEGATE_WORKERS}"`);
    config.workers = n;
  }
}

/** A number written in decimal digits, or NaN: Number() would also read "0x50", "1e1" and " 80 ". */
function digitsOnly(text: string, maxDigits: number): number {
  return new RegExp(`^[0-9]{1,${maxDigits}}$`).test(text) ? Number(text) : Number.NaN;
}
