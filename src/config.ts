/**
 * nodegate's configuration, read from the environment. These variables always
 * work, so the service can be scripted and containerised:
 *   NODEGATE_UPSTREAM_URL  http(s) URL of the Ethereum upstream; when set, no Anvil is started
 *   NODEGATE_UPSTREAM_WS_URL  ws(s) URL of the Ethereum upstream; when set, it is used instead of
 *                          NODEGATE_UPSTREAM_URL (one multiplexed WebSocket) and no Anvil is started
 *   NODEGATE_UPSTREAM_TRANSPORT  http (default) or ws: which of the embedded Anvil's endpoints nodegate
 *                          uses when no upstream URL is set
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

export interface WebSocketSettings {
  /** Ping interval for WebSocket peers (native clients and ws upstreams), in ms. */
  pingIntervalMs: number;
  /** An upstream that leaves a ping unanswered this long has dropped, in ms. */
  pongTimeoutMs: number;
  /** First upstream reconnect delay, doubled per failed attempt, in ms. */
  reconnectMinDelayMs: number;
  /** Longest upstream reconnect delay, in ms. */
  reconnectMaxDelayMs: number;
}

export const DEFAULT_WEBSOCKET: WebSocketSettings = {
  pingIntervalMs: 30_000,
  pongTimeoutMs: 10_000,
  reconnectMinDelayMs: 250,
  reconnectMaxDelayMs: 30_000,
};

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
  /** Which endpoint of the embedded Anvil to use (default http). */
  embeddedTransport?: "http" | "ws";
  /** WebSocket keep-alive and reconnect timing; unset fields take DEFAULT_WEBSOCKET. */
  websocket?: Partial<WebSocketSettings>;
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

function wsUrl(value: string, name: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${name}: not a URL`);
  }
  if (url.protocol !== "ws:" && url.protocol !== "wss:") throw new ConfigError(`${name}: want a ws:// or wss:// URL`);
  return value;
}

function transport(value: string | undefined, name: string): "http" | "ws" {
  if (value === undefined || value === "" || value === "http") return "http";
  if (value === "ws") return "ws";
  throw new ConfigError(`${name}: want http or ws, got "${value}"`);
}

/** The configured upstream, ws preferred when both are set (both are still checked). */
function primaryUpstream(url: string | undefined, ws: string | undefined): UpstreamConfig[] {
  const http = url ? httpUrl(url, "NODEGATE_UPSTREAM_URL") : undefined;
  if (ws) return [{ label: "primary", url: wsUrl(ws, "NODEGATE_UPSTREAM_WS_URL") }];
  return http ? [{ label: "primary", url: http }] : [];
}

export const DEFAULT_LIMITS: Limits = {
  maxBodyBytes: 5 * 1024 * 1024,
  maxBatchSize: 1000,
};

export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const upstreamUrl = env.NODEGATE_UPSTREAM_URL;
  const upstreamWsUrl = env.NODEGATE_UPSTREAM_WS_URL;
  const embeddedTransport = transport(env.NODEGATE_UPSTREAM_TRANSPORT, "NODEGATE_UPSTREAM_TRANSPORT");
  const keys = env.NODEGATE_API_KEYS?.split(",")
    .map((k) => k.trim())
    .filter(Boolean);
  const networks: NetworkConfig[] = [
    {
      name: "ethereum",
      family: "eth",
      upstreams: primaryUpstream(upstreamUrl, upstreamWsUrl),
    },
  ];
  return {
    host: env.NODEGATE_HOST || "127.0.0.1",
    port: port(env.NODEGATE_PORT, "NODEGATE_PORT", 8080),
    apiKeys: keys && keys.length > 0 ? keys : undefined,
    networks,
    defaultNetwork: "ethereum",
    embeddedAnvil: !upstreamUrl && !upstreamWsUrl,
    embeddedTransport,
    upstreamTimeoutMs: 30_000,
    limits: { ...DEFAULT_LIMITS },
    logLevel: env.NODEGATE_LOG_LEVEL || "info",
  };
}
