/**
 * nodegate's configuration, read from the environment. These variables always
 * work, so the service can be scripted and containerised:
 *   NODEGATE_UPSTREAM_URL  http(s) URL of the Ethereum upstream; when set, no Anvil is started
 *   NODEGATE_STARKNET_UPSTREAM_URL  http(s) URL of a Starknet node; defines the network "starknet"
 *                          (callers reach it at /starknet/v3/<KEY> or with x-nodegate-network: starknet)
 *   NODEGATE_PORT          listen port (default 8080)
 *   NODEGATE_HOST          listen address (default 127.0.0.1)
 *   NODEGATE_API_KEYS      comma-separated accepted keys (default: one generated development key)
 *   NODEGATE_LOG_LEVEL     pino level (default info)
 */
import type { Limits } from "./gateway.js";
import type { ChainFamily } from "./methods/method-table.js";

export interface UpstreamConfig {
  /** Safe-to-log name. */
  label: string;
  url: string;
}

export interface NetworkConfig {
  name: string;
  family: ChainFamily;
  upstreams: UpstreamConfig[];
}

export interface Config {
  host: string;
  port: number;
  /** Accepted API keys; undefined means "generate a development key". */
  apiKeys: string[] | undefined;
  networks: NetworkConfig[];
  defaultNetwork: string;
  /** Start a local Anvil as the default network's upstream (no upstream configured). */
  embeddedAnvil: boolean;
  /** Deadline of one upstream call, in milliseconds. */
  upstreamTimeoutMs: number;
  limits: Limits;
  logLevel: string;
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

function port(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new ConfigError(`${name}: want a port number 0-65535, got "${value}"`);
  return n;
}

function httpUrl(value: string, name: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${name}: not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new ConfigError(`${name}: want an http:// or https:// URL`);
  return value;
}

export const DEFAULT_LIMITS: Limits = {
  maxBodyBytes: 5 * 1024 * 1024,
  maxBatchSize: 1000,
};

export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const upstreamUrl = env.NODEGATE_UPSTREAM_URL;
  const keys = env.NODEGATE_API_KEYS?.split(",")
    .map((k) => k.trim())
    .filter(Boolean);
  const networks: NetworkConfig[] = [
    {
      name: "ethereum",
      family: "eth",
      upstreams: upstreamUrl ? [{ label: "primary", url: httpUrl(upstreamUrl, "NODEGATE_UPSTREAM_URL") }] : [],
    },
  ];
  const starknetUrl = env.NODEGATE_STARKNET_UPSTREAM_URL;
  if (starknetUrl) {
    networks.push({
      name: "starknet",
      family: "starknet",
      upstreams: [{ label: "primary", url: httpUrl(starknetUrl, "NODEGATE_STARKNET_UPSTREAM_URL") }],
    });
  }
  return {
    host: env.NODEGATE_HOST || "127.0.0.1",
    port: port(env.NODEGATE_PORT, "NODEGATE_PORT", 8080),
    apiKeys: keys && keys.length > 0 ? keys : undefined,
    networks,
    defaultNetwork: "ethereum",
    embeddedAnvil: !upstreamUrl,
    upstreamTimeoutMs: 30_000,
    limits: { ...DEFAULT_LIMITS },
    logLevel: env.NODEGATE_LOG_LEVEL || "info",
  };
}
