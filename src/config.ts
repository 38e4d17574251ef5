/**
 * nodegate's configuration: an optional YAML file (NODEGATE_CONFIG or
 * --config) validated with messages that name the bad field and its line,
 * then environment overrides. These variables always work, so the service
 * can be scripted and containerised:
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
import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { createSecureContext } from "node:tls";
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document } from "yaml";
import type { ChainFamily } from "./methods/method-table.js";
import { parseRedisUrl } from "./redis/redis-url.js";

export const PLANS = ["core", "growth", "custom"] as const;
export type Plan = (typeof PLANS)[number];

export interface UpstreamConfig {
  /** Safe-to-log name. */
  label: string;
  url: string;
}

export interface FailoverPolicy {
  /** Methods that may go to a partner upstream while the primary is down. */
  methods: string[];
  /** Plans whose keys may use partner upstreams. */
  plans: Plan[];
}

export interface NetworkConfig {
  name: string;
  family: ChainFamily;
  /** The first is the primary; the rest are partners used for failover. */
  upstreams: UpstreamConfig[];
  failover?: FailoverPolicy;
}

export interface RateLimit {
  /** Sustained requests per second (a token bucket of this size). 0 = unlimited. */
  requestsPerSecond: number;
  /** Requests per UTC day. 0 = unlimited. */
  requestsPerDay: number;
}

export interface Allowlists {
  /** JSON-RPC method names; "eth_*" matches a prefix. */
  methods?: string[];
  /** 20-byte contract addresses (hex) for methods that take an address. */
  contractAddresses?: string[];
  /** Origins: "https://app.example.com", "*.example.com", "example.com". */
  origins?: string[];
  /** Substrings of the User-Agent header. */
  userAgents?: string[];
}

export interface KeyConfig {
  key: string;
  plan: Plan;
  /** When set, every request must carry it as HTTP Basic password (empty user), as the provider does. */
  secret?: string;
  /** Overrides the plan's limits for this key. */
  rateLimit?: Partial<RateLimit>;
  allowlists?: Allowlists;
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
  // A node that comes back is reached again within a second; one connection attempt a second to a dead node costs nothing.
  reconnectMaxDelayMs: 1000,
};

/** Subscriptions and streams (eth_subscribe on the native WebSocket path, the typed Subscribe* and StreamLogs). */
export interface SubscriptionSettings {
  /** How often a network whose upstream speaks HTTP is polled for new blocks (and pending transactions), in ms. */
  pollIntervalMs: number;
  /** Events waiting for a client that takes none for a second end its stream or connection (RESOURCE_EXHAUSTED / close 1008). */
  clientBufferSize: number;
  /** How many recent blocks are remembered to detect a reorganization and take back the logs it removed. */
  reorgWindowBlocks: number;
  /** Most headers one gap or resume point may need fetched from history. */
  maxBackfillBlocks: number;
  /** First page size of StreamLogs and log backfills, in blocks; pages halve on a limit and grow back when sparse. */
  logPageBlocks: number;
}

export const DEFAULT_SUBSCRIPTIONS: SubscriptionSettings = {
  pollIntervalMs: 2000,
  clientBufferSize: 8192,
  reorgWindowBlocks: 64,
  maxBackfillBlocks: 10_000,
  logPageBlocks: 2000,
};

export interface Limits {
  /** Largest request body accepted on the native path, in bytes. */
  maxBodyBytes: number;
  /** Most requests in one JSON-RPC batch. */
  maxBatchSize: number;
  /** Largest message on the native WebSocket path, in bytes. */
  maxWsMessageBytes: number;
  /** eth_getLogs: most addresses plus topic entries in one filter. */
  getLogsMaxParams: number;
  /** eth_getLogs: most results in one answer. */
  getLogsMaxResults: number;
  /** eth_getLogs: longest query, in milliseconds. */
  getLogsTimeoutMs: number;
  /** eth_call / eth_estimateGas: the gas param is capped at this multiple of the latest block's gas limit. */
  gasCapMultiplier: number;
  /**
   * A client must send a request's headers within this, in ms, counted from
   * the connection's first byte (or the end of its previous response); on
   * HTTP/2 its first stream must open within it. Slow-loris clients are cut off.
   */
  headersTimeoutMs: number;
  /** A client must send a whole request (headers and body) within this, in ms. Not the time to answer it. */
  requestTimeoutMs: number;
  /** A connection with no request in progress is closed after this, in ms (HTTP/1.1 keep-alive, HTTP/2 sessions without streams). */
  idleTimeoutMs: number;
  /** Native WebSocket connections one key may hold open at once. */
  maxWsConnectionsPerKey: number;
  /** Requests (native HTTP bodies, WebSocket messages, typed calls) one key may have in progress at once. */
  maxConcurrentRequestsPerKey: number;
  /** Subscriptions one key may hold open at once (eth_subscribe, typed streams). */
  maxSubscriptionsPerKey: number;
  /** Answers and notifications waiting for a native WebSocket client, or events queued for a typed stream, in bytes; more ends it. */
  maxWsUnreadBytes: number;
  /**
   * Bytes of HTTP node replies being read at once, over every call of the
   * process (a reply counts until it has arrived whole); a reply that would
   * pass it fails, so many large answers (or a node streaming without end to
   * many calls) cannot take the process's memory. Each reply is also capped
   * at 256 MiB.
   */
  maxReplyBytesInFlight: number;
}

export interface PassThroughConfig {
  /** JSON-RPC methods outside the typed table that are forwarded verbatim. */
  methods: string[];
  /** Also forward state-changing methods (eth_sendRawTransaction). */
  allowWrites: boolean;
}

export interface CacheConfig {
  /** Bytes of final answers kept in process (least recently used go first); 0 turns the cache off. */
  maxBytes: number;
  /** Identical concurrent calls (same network, method and params) share one upstream call. */
  coalesce: boolean;
  /** A call joins an identical one only if that one was sent less than this long ago, in ms (an older one may answer from a chain that has moved on). */
  coalesceWindowMs: number;
  /** How old the finalized block number may get before nodegate asks the node again, in ms. */
  finalizedMaxAgeMs: number;
}

export interface Config {
  host: string;
  port: number;
  /** Accepted API keys; undefined means "generate a development key". */
  keys: KeyConfig[] | undefined;
  plans: Record<Plan, RateLimit>;
  networks: NetworkConfig[];
  defaultNetwork: string;
  /** Start a local Anvil as the default network's upstream (no upstream configured). */
  embeddedAnvil: boolean;
  /** Deadline of one upstream call, in milliseconds. */
  upstreamTimeoutMs: number;
  /** When an upstream's circuit opens (consecutive outages) and how long it stays open. */
  circuitBreaker: { threshold: number; cooldownMs: number };
  limits: Limits;
  passThrough: PassThroughConfig;
  /** Origins allowed by CORS on both front doors; "*" allows any. Empty: no CORS headers. */
  corsOrigins: string[];
  logLevel: string;
  /** Which endpoint of the embedded Anvil to use (default http). */
  embeddedTransport: "http" | "ws";
  /** PEM files: serve TLS on the same port (HTTP/2 with ALPN, HTTP/1.1 fallback). */
  tls: { certFile: string; keyFile: string } | undefined;
  /** On SIGTERM/SIGINT, how long in-flight requests and streams may take to finish, in ms. */
  drainMs: number;
  /** WebSocket keep-alive and reconnect timing. */
  websocket: WebSocketSettings;
  /** Where rate-limit counters and the cache live (in process unless Redis is configured). */
  stores?: StoresConfig;
  /** Subscriptions and streams. */
  subscriptions: SubscriptionSettings;
  /** Answer cache and coalescing. Unset (a Config built by hand): neither. */
  cache?: CacheConfig;
  /** Worker processes that share the listening port (node:cluster); 1 = this process serves. */
  workers?: number;
}

export interface StoresConfig {
  /** redis:// or rediss:// URL; unset keeps rate-limit counters and the cache in process. */
  redisUrl?: string;
  /** Prepended to every Redis key, so several deployments can share one Redis. Default "nodegate:". */
  keyPrefix?: string;
  /** A Redis command unanswered this long counts as Redis being down, in ms. Default 500. */
  timeoutMs?: number;
}

/** What an API key may be, in the file and in NODEGATE_API_KEYS. */
const KEY_PATTERN = /^[A-Za-z0-9_-]{8,128}$/;

/** pino's levels, and silent. */
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

export class ConfigError extends Error {
  override name = "ConfigError";
}

export const DEFAULT_LIMITS: Limits = {
  maxBodyBytes: 5 * 1024 * 1024,
  maxBatchSize: 1000,
  maxWsMessageBytes: 5 * 1024 * 1024,
  getLogsMaxParams: 5000,
  getLogsMaxResults: 10_000,
  getLogsTimeoutMs: 10_000,
  gasCapMultiplier: 10,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 65_000,
  maxWsConnectionsPerKey: 100,
  maxConcurrentRequestsPerKey: 1000,
  maxSubscriptionsPerKey: 1000,
  maxWsUnreadBytes: 64 * 1024 * 1024,
  maxReplyBytesInFlight: 1024 * 1024 * 1024,
};

/**
 * Five consecutive outages open an upstream's circuit; one second later a
 * probe call may go through, so a recovered upstream answers again within a
 * second of coming back.
 */
export const DEFAULT_CIRCUIT_BREAKER = { threshold: 5, cooldownMs: 1000 };
export const DEFAULT_CACHE: CacheConfig = {
  maxBytes: 256 * 1024 * 1024,
  coalesce: true,
  coalesceWindowMs: 1000,
  finalizedMaxAgeMs: 4000,
};

/** Per-plan defaults; per-key settings override them. */
export const DEFAULT_PLANS: Record<Plan, RateLimit> = {
  core: { requestsPerSecond: 100, requestsPerDay: 1_000_000 },
  growth: { requestsPerSecond: 1000, requestsPerDay: 20_000_000 },
  custom: { requestsPerSecond: 0, requestsPerDay: 0 },
};

/**
 * What is wrong with a certificate and key pair, as the TLS server would find
 * it at start (a file that is not PEM, the two swapped, a key that is not the
 * certificate's), named by the field to fix.
 */
function tlsPairError(cert: Buffer, key: Buffer): { field: "certFile" | "keyFile"; message: string } | undefined {
  let certificate;
  try {
    certificate = new X509Certificate(cert);
  } catch (err) {
    return { field: "certFile", message: `not a PEM certificate (${(err as Error).message})` };
  }
  if (/-----BEGIN (?:ENCRYPTED PRIVATE KEY|[A-Z ]*PRIVATE KEY-----[\s\S]*Proc-Type: 4,ENCRYPTED)/.test(key.toString("latin1"))) {
    return { field: "keyFile", message: "the private key is encrypted, and nodegate takes no passphrase: give it the key without one (openssl pkey -in KEY -out PLAIN_KEY)" };
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    return { field: "keyFile", message: `not a PEM private key (${(err as Error).message})` };
  }
  try {
    createSecureContext({ cert, key });
  } catch (err) {
    return { field: "keyFile", message: `does not match the certificate in certFile (${(err as Error).message})` };
  }
  // OpenSSL keeps a pair per key type: a key of another type than the certificate's passes the check above,
  // and then every handshake fails.
  if (!certificate.checkPrivateKey(privateKey)) {
    return { field: "keyFile", message: `does not match the certificate in certFile (a ${privateKey.asymmetricKeyType} key for a certificate whose key is ${certificate.publicKey.asymmetricKeyType})` };
  }
  return undefined;
}

/** The seed's rule: eth_getBlockByHash may fail over to a partner, for Growth and Custom keys. */
export const DEFAULT_FAILOVER: FailoverPolicy = { methods: ["eth_getBlockByHash"], plans: ["growth", "custom"] };

/** Read-only methods outside the typed table that legacy callers use, of both chain families. */
export const DEFAULT_PASS_THROUGH = [
  "eth_accounts",
  "eth_blobBaseFee",
  "eth_blockNumber",
  "eth_chainId",
  "eth_createAccessList",
  "eth_feeHistory",
  "eth_gasPrice",
  "eth_getBalance",
  "eth_getBlockTransactionCountByHash",
  "eth_getBlockTransactionCountByNumber",
  "eth_getCode",
  // Filters: what viem's and ethers' HTTP watchers (watchBlocks, watchContractEvent, on("pending")) poll with.
  "eth_getFilterChanges",
  "eth_getFilterLogs",
  "eth_getTransactionByBlockHashAndIndex",
  "eth_getTransactionByHash",
  "eth_getTransactionCount",
  "eth_getUncleCountByBlockHash",
  "eth_getUncleCountByBlockNumber",
  "eth_maxPriorityFeePerGas",
  "eth_newBlockFilter",
  "eth_newFilter",
  "eth_newPendingTransactionFilter",
  "eth_protocolVersion",
  "eth_simulateV1",
  "eth_syncing",
  "eth_uninstallFilter",
  "net_listening",
  "net_peerCount",
  "net_version",
  "web3_clientVersion",
  "web3_sha3",
  // The Starknet spec's read API (0.7 to 0.10), for starknet.js and starknet-rs providers: forwarded to Starknet networks.
  "starknet_blockHashAndNumber",
  "starknet_blockNumber",
  "starknet_call",
  "starknet_chainId",
  "starknet_estimateFee",
  "starknet_estimateMessageFee",
  "starknet_getBlockTransactionCount",
  "starknet_getBlockWithReceipts",
  "starknet_getBlockWithTxHashes",
  "starknet_getBlockWithTxs",
  "starknet_getClass",
  "starknet_getClassAt",
  "starknet_getClassHashAt",
  "starknet_getEvents",
  "starknet_getMessagesStatus",
  "starknet_getNonce",
  "starknet_getStateUpdate",
  "starknet_getStorageAt",
  "starknet_getStorageProof",
  "starknet_getTransactionByHash",
  "starknet_getTransactionReceipt",
  "starknet_getTransactionStatus",
  "starknet_specVersion",
  "starknet_syncing",
];

/**
 * Methods whose answer depends on what the caller did before (a filter it
 * made, changes since its last poll): never coalesced (two callers asking
 * eth_newBlockFilter at once would share one filter and split its changes)
 * nor sent twice. Filters live on one node: after a failover, polling a
 * filter made on the primary gets the partner's "filter not found", which
 * viem and ethers answer by making a new one.
 */
export const FILTER_METHODS = ["eth_newFilter", "eth_newBlockFilter", "eth_newPendingTransactionFilter", "eth_getFilterChanges", "eth_getFilterLogs", "eth_uninstallFilter"];

/**
 * Methods that change the chain: forwarded only when passThrough.allowWrites
 * is true (which forwards eth_sendRawTransaction without listing it), never
 * sent twice (no retry, no failover, no coalescing).
 */
export const WRITE_METHODS = [
  "eth_sendRawTransaction",
  "eth_sendTransaction",
  "starknet_addInvokeTransaction",
  "starknet_addDeclareTransaction",
  "starknet_addDeployAccountTransaction",
];

/** Pass-through methods every call of which must reach the node itself, once (looked up per pass-through call). */
const SENT_ONLY_ONCE: ReadonlySet<string> = new Set([...WRITE_METHODS, ...FILTER_METHODS]);

export function sentOnlyOnce(method: string): boolean {
  return SENT_ONLY_ONCE.has(method);
}

function defaults(): Config {
  return {
    host: "127.0.0.1",
    port: 8080,
    keys: undefined,
    plans: structuredClone(DEFAULT_PLANS),
    networks: [{ name: "ethereum", family: "eth", upstreams: [] }],
    defaultNetwork: "ethereum",
    embeddedAnvil: true,
    upstreamTimeoutMs: 30_000,
    circuitBreaker: { ...DEFAULT_CIRCUIT_BREAKER },
    limits: { ...DEFAULT_LIMITS },
    passThrough: { methods: [...DEFAULT_PASS_THROUGH], allowWrites: false },
    corsOrigins: [],
    logLevel: "info",
    embeddedTransport: "http",
    websocket: { ...DEFAULT_WEBSOCKET },
    tls: undefined,
    drainMs: 10_000,
    subscriptions: { ...DEFAULT_SUBSCRIPTIONS },
    cache: { ...DEFAULT_CACHE },
    workers: 1,
  };
}

/* ------------------------------------------------------------------ */
/* YAML file                                                           */
/* ------------------------------------------------------------------ */

type Path = (string | number)[];

/** An origin entry: scheme optional, "*." for any subdomain, a port, a trailing slash ("https://app.example.com", "*.example.com"). */
const ORIGIN_ENTRY = /^([a-z][a-z0-9+.-]*:\/\/)?(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?\/?$/i;
const ORIGIN_ENTRY_WANTED = 'want an origin such as "https://app.example.com", "app.example.com" or "*.example.com"';

/** ${NAME} in a configuration value: the environment variable's value (letters, digits and _, not starting with a digit). */
const ENV_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const WHOLE_ENV_REFERENCE = /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/;

class FileReader {
  constructor(
    readonly doc: Document,
    readonly lines: LineCounter,
    readonly file: string,
    readonly env: NodeJS.ProcessEnv,
  ) {}

  where(path: Path): string {
    const node = this.doc.getIn(path, true) as { range?: [number, number, number] } | undefined;
    const name = path.reduce<string>((s, p) => (typeof p === "number" ? `${s}[${p}]` : s ? `${s}.${p}` : p), "");
    if (node?.range) {
      const { line, col } = this.lines.linePos(node.range[0]);
      return `${this.file}:${line}:${col}: ${name}`;
    }
    return `${this.file}: ${name}`;
  }

  fail(path: Path, message: string): never {
    throw new ConfigError(`${this.where(path)}: ${message}`);
  }

  has(path: Path): boolean {
    return this.doc.hasIn(path);
  }

  raw(path: Path): unknown {
    const node = this.doc.getIn(path, true);
    if (node === undefined) return undefined;
    if (isScalar(node)) return node.value;
    if (isSeq(node) || isMap(node)) return node;
    return node;
  }

  string(path: Path): string | undefined {
    const v = this.raw(path);
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string") {
      // YAML reads an unquoted 0x... as a number; say so only when that is what happened.
      const hex = (this.doc.getIn(path, true) as { format?: string } | undefined)?.format === "HEX";
      this.fail(path, hex ? 'want a string (YAML reads unquoted 0x... as a number: quote it, "0x...")' : "want a string");
    }
    return v.replace(ENV_REFERENCE, (_, name: string) => {
      const value = this.env[name];
      if (value === undefined) this.fail(path, `environment variable ${name} is not set`);
      // An empty value is almost always a variable set by mistake (an empty secret would pass every request's check).
      if (value === "") this.fail(path, `environment variable ${name} is empty`);
      return value;
    });
  }

  number(path: Path, min: number, max: number): number | undefined {
    let v = this.raw(path);
    if (v === undefined || v === null) return undefined;
    // A whole value of ${NAME} (port: ${PORT}) reads the variable as the number.
    const fromEnv = typeof v === "string" && WHOLE_ENV_REFERENCE.test(v) ? v : undefined;
    if (fromEnv !== undefined) {
      const text = this.string(path) as string;
      v = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
    }
    if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
      this.fail(path, `want an integer from ${min} to ${max}${fromEnv === undefined ? "" : ` (${fromEnv} is "${this.string(path)}")`}`);
    }
    return v;
  }

  boolean(path: Path): boolean | undefined {
    const v = this.raw(path);
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "boolean") this.fail(path, "want true or false");
    return v;
  }

  list(path: Path): number {
    const v = this.raw(path);
    if (v === undefined || v === null) return 0;
    if (!isSeq(v)) this.fail(path, "want a list");
    return v.items.length;
  }

  strings(path: Path): string[] | undefined {
    if (!this.has(path)) return undefined;
    const n = this.list(path);
    return Array.from({ length: n }, (_, i) => this.string([...path, i]) ?? this.fail([...path, i], "want a string"));
  }

  keys(path: Path, allowed: readonly string[]): void {
    const v = this.raw(path);
    if (v === undefined || v === null) return;
    if (!isMap(v)) this.fail(path, "want a mapping");
    for (const item of v.items) {
      const key = isScalar(item.key) ? String(item.key.value) : "?";
      if (!allowed.includes(key)) {
        const range = isScalar(item.key) ? item.key.range : undefined;
        const name = [...path, key].reduce<string>((s, p) => (typeof p === "number" ? `${s}[${p}]` : s ? `${s}.${p}` : p), "");
        const at = range ? (({ line, col }) => `${line}:${col}`)(this.lines.linePos(range[0])) : "?";
        throw new ConfigError(`${this.file}:${at}: ${name}: unknown setting (known: ${allowed.join(", ")})`);
      }
    }
  }
}

function httpUrl(value: string, fail: (m: string) => never, schemes = ["http:", "https:"]): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return fail("not a URL");
  }
  if (!schemes.includes(url.protocol)) fail(`want a ${schemes.map((s) => `${s}//`).join(" or ")} URL`);
  return value;
}

function plan(value: string | undefined, fail: (m: string) => never): Plan {
  if (value === undefined) return "core";
  if (!(PLANS as readonly string[]).includes(value)) fail(`want one of ${PLANS.join(", ")}`);
  return value as Plan;
}

function readRateLimit(r: FileReader, path: Path): Partial<RateLimit> | undefined {
  if (!r.has(path)) return undefined;
  r.keys(path, ["requestsPerSecond", "requestsPerDay"]);
  const out: Partial<RateLimit> = {};
  const rps = r.number([...path, "requestsPerSecond"], 0, 10_000_000);
  const rpd = r.number([...path, "requestsPerDay"], 0, 10_000_000_000);
  if (rps !== undefined) out.requestsPerSecond = rps;
  if (rpd !== undefined) out.requestsPerDay = rpd;
  return out;
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** Applies a YAML configuration text onto `config`. Throws ConfigError naming the field and line. */
export function applyConfigFile(config: Config, text: string, file: string, env: NodeJS.ProcessEnv): void {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  if (doc.errors.length > 0) {
    const e = doc.errors[0] as { message: string; pos: [number, number] };
    const { line, col } = lines.linePos(e.pos[0]);
    throw new ConfigError(`${file}:${line}:${col}: invalid YAML: ${e.message.split("\n")[0]}`);
  }
  const r = new FileReader(doc, lines, file, env);
  if (doc.contents === null) return;
  r.keys([], ["listen", "upstreamTimeoutMs", "websocket", "circuitBreaker", "limits", "plans", "networks", "defaultNetwork", "keys", "passThrough", "cors", "log", "tls", "drainMs", "stores", "subscriptions", "cache", "workers"]);

  r.keys(["listen"], ["host", "port"]);
  config.host = r.string(["listen", "host"]) ?? config.host;
  config.port = r.number(["listen", "port"], 0, 65535) ?? config.port;
  config.upstreamTimeoutMs = r.number(["upstreamTimeoutMs"], 1, 600_000) ?? config.upstreamTimeoutMs;
  r.keys(["websocket"], Object.keys(DEFAULT_WEBSOCKET));
  for (const name of Object.keys(DEFAULT_WEBSOCKET) as (keyof WebSocketSettings)[]) {
    config.websocket[name] = r.number(["websocket", name], 1, 3_600_000) ?? config.websocket[name];
  }
  r.keys(["subscriptions"], Object.keys(DEFAULT_SUBSCRIPTIONS));
  for (const name of Object.keys(DEFAULT_SUBSCRIPTIONS) as (keyof SubscriptionSettings)[]) {
    config.subscriptions[name] = r.number(["subscriptions", name], 1, 10_000_000) ?? config.subscriptions[name];
  }
  r.keys(["circuitBreaker"], ["threshold", "cooldownMs"]);
  config.circuitBreaker.threshold = r.number(["circuitBreaker", "threshold"], 1, 1000) ?? config.circuitBreaker.threshold;
  config.circuitBreaker.cooldownMs = r.number(["circuitBreaker", "cooldownMs"], 1, 3_600_000) ?? config.circuitBreaker.cooldownMs;
  const level = r.string(["log", "level"]);
  if (level !== undefined && !LOG_LEVELS.includes(level)) r.fail(["log", "level"], `want one of ${LOG_LEVELS.join(", ")}, got "${level}"`);
  config.logLevel = level ?? config.logLevel;
  r.keys(["log"], ["level", "pretty"]);

  r.keys(["limits"], Object.keys(DEFAULT_LIMITS));
  for (const name of Object.keys(DEFAULT_LIMITS) as (keyof Limits)[]) {
    config.limits[name] = r.number(["limits", name], 1, 1_000_000_000_000) ?? config.limits[name];
  }
  if (config.limits.headersTimeoutMs > config.limits.requestTimeoutMs) {
    r.fail(["limits", r.has(["limits", "headersTimeoutMs"]) ? "headersTimeoutMs" : "requestTimeoutMs"], "headersTimeoutMs must not exceed requestTimeoutMs");
  }

  r.keys(["plans"], PLANS);
  for (const p of PLANS) {
    const rl = readRateLimit(r, ["plans", p]);
    if (rl) config.plans[p] = { ...config.plans[p], ...rl };
  }

  if (r.has(["networks"])) {
    const n = r.list(["networks"]);
    if (n === 0) r.fail(["networks"], "want at least one network");
    const seen = new Set<string>();
    config.networks = [];
    for (let i = 0; i < n; i++) {
      const p: Path = ["networks", i];
      r.keys(p, ["name", "family", "upstreams", "failover"]);
      const name = r.string([...p, "name"]) ?? r.fail([...p, "name"], "required");
      if (!/^[A-Za-z0-9_-]+$/.test(name)) r.fail([...p, "name"], "want letters, digits, - and _ only (it is a URL path segment)");
      if (name === "v3" || name === "ws") r.fail([...p, "name"], `"${name}" is part of the JSON-RPC paths (/v3/<KEY>, /ws/v3/<KEY>); choose another name`);
      if (seen.has(name)) r.fail([...p, "name"], `network ${name} is defined twice`);
      seen.add(name);
      const familyName = r.string([...p, "family"]) ?? "ethereum";
      if (familyName !== "ethereum" && familyName !== "starknet") r.fail([...p, "family"], "want ethereum or starknet");
      const family: ChainFamily = familyName === "ethereum" ? "eth" : "starknet";
      const upstreams: UpstreamConfig[] = [];
      const u = r.list([...p, "upstreams"]);
      if (u === 0 && r.has([...p, "upstreams"])) r.fail([...p, "upstreams"], "want at least one upstream (leave upstreams out on the default network to run the embedded Anvil)");
      for (let j = 0; j < u; j++) {
        const up: Path = [...p, "upstreams", j];
        r.keys(up, ["label", "url"]);
        const url = r.string([...up, "url"]) ?? r.fail([...up, "url"], "required");
        httpUrl(url, (m) => r.fail([...up, "url"], m), ["http:", "https:", "ws:", "wss:"]);
        const label = r.string([...up, "label"]) ?? (j === 0 ? "primary" : `partner-${j}`);
        // Labels name the upstream in logs and metrics: two of one network would be one series.
        if (upstreams.some((other) => other.label === label)) r.fail([...up, "label"], `duplicate label ${label} in this network`);
        upstreams.push({ label, url });
      }
      const network: NetworkConfig = { name, family, upstreams };
      if (r.has([...p, "failover"])) {
        r.keys([...p, "failover"], ["methods", "plans"]);
        const plans = (r.strings([...p, "failover", "plans"]) ?? DEFAULT_FAILOVER.plans).map((v, k) =>
          plan(v, (m) => r.fail([...p, "failover", "plans", k], m)),
        );
        network.failover = { methods: r.strings([...p, "failover", "methods"]) ?? DEFAULT_FAILOVER.methods, plans };
      }
      config.networks.push(network);
    }
    config.defaultNetwork = (config.networks[0] as NetworkConfig).name;
  }
  if (r.has(["defaultNetwork"])) {
    const name = r.string(["defaultNetwork"]) as string;
    if (!config.networks.some((n) => n.name === name)) r.fail(["defaultNetwork"], `no network named ${name}`);
    config.defaultNetwork = name;
  }

  if (r.has(["keys"])) {
    const n = r.list(["keys"]);
    if (n === 0) r.fail(["keys"], "want at least one key (leave keys out to run with a development key printed at start)");
    const keys: KeyConfig[] = [];
    for (let i = 0; i < n; i++) {
      const p: Path = ["keys", i];
      r.keys(p, ["key", "plan", "secret", "rateLimit", "allowlists"]);
      const key = r.string([...p, "key"]) ?? r.fail([...p, "key"], "required");
      if (!KEY_PATTERN.test(key)) r.fail([...p, "key"], "want 8 to 128 letters, digits, - or _");
      if (keys.some((k) => k.key === key)) r.fail([...p, "key"], "duplicate key");
      const entry: KeyConfig = { key, plan: plan(r.string([...p, "plan"]), (m) => r.fail([...p, "plan"], m)) };
      const secret = r.string([...p, "secret"]);
      if (secret !== undefined) entry.secret = secret;
      const rl = readRateLimit(r, [...p, "rateLimit"]);
      if (rl) entry.rateLimit = rl;
      if (r.has([...p, "allowlists"])) {
        const a: Path = [...p, "allowlists"];
        r.keys(a, ["methods", "contractAddresses", "origins", "userAgents"]);
        const allow: Allowlists = {};
        const methods = r.strings([...a, "methods"]);
        const addresses = r.strings([...a, "contractAddresses"]);
        const origins = r.strings([...a, "origins"]);
        origins?.forEach((v, k) => ORIGIN_ENTRY.test(v) || r.fail([...a, "origins", k], ORIGIN_ENTRY_WANTED));
        const agents = r.strings([...a, "userAgents"]);
        addresses?.forEach((v, k) => ADDRESS.test(v) || r.fail([...a, "contractAddresses", k], "want a 0x-prefixed 20-byte address"));
        if (methods) allow.methods = methods;
        if (addresses) allow.contractAddresses = addresses;
        if (origins) allow.origins = origins;
        if (agents) allow.userAgents = agents;
        entry.allowlists = allow;
      }
      keys.push(entry);
    }
    config.keys = keys;
  }

  r.keys(["passThrough"], ["methods", "allowWrites"]);
  config.passThrough.methods = r.strings(["passThrough", "methods"]) ?? config.passThrough.methods;
  config.passThrough.allowWrites = r.boolean(["passThrough", "allowWrites"]) ?? config.passThrough.allowWrites;
  if (!config.passThrough.allowWrites) {
    config.passThrough.methods.forEach(
      (m, k) => WRITE_METHODS.includes(m) && r.fail(["passThrough", "methods", k], `${m} writes to the chain: forwarded only with passThrough.allowWrites: true`),
    );
  }
  config.drainMs = r.number(["drainMs"], 0, 600_000) ?? config.drainMs;
  if (r.has(["tls"])) {
    r.keys(["tls"], ["certFile", "keyFile"]);
    const certFile = r.string(["tls", "certFile"]) ?? r.fail(["tls", "certFile"], "required with tls");
    const keyFile = r.string(["tls", "keyFile"]) ?? r.fail(["tls", "keyFile"], "required with tls");
    const pem: Record<"certFile" | "keyFile", Buffer> = { certFile: Buffer.alloc(0), keyFile: Buffer.alloc(0) };
    // Relative paths are the configuration file's neighbours, wherever nodegate is started from.
    const certPath = resolve(dirname(file), certFile);
    const keyPath = resolve(dirname(file), keyFile);
    for (const [name, path] of [["certFile", certPath], ["keyFile", keyPath]] as const) {
      try {
        pem[name] = readFileSync(path);
      } catch (err) {
        r.fail(["tls", name], `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
    }
    const tlsError = tlsPairError(pem.certFile, pem.keyFile);
    if (tlsError !== undefined) r.fail(["tls", tlsError.field], tlsError.message);
    config.tls = { certFile: certPath, keyFile: keyPath };
  }
  r.keys(["cors"], ["origins"]);
  config.corsOrigins = r.strings(["cors", "origins"]) ?? config.corsOrigins;
  config.corsOrigins.forEach((v, k) => v === "*" || ORIGIN_ENTRY.test(v) || r.fail(["cors", "origins", k], `${ORIGIN_ENTRY_WANTED}, or *`));
  if (r.has(["stores"])) {
    r.keys(["stores"], ["redisUrl", "keyPrefix", "timeoutMs"]);
    const stores: StoresConfig = {};
    const redisUrl = r.string(["stores", "redisUrl"]);
    if (redisUrl !== undefined) {
      try {
        parseRedisUrl(redisUrl);
      } catch (err) {
        r.fail(["stores", "redisUrl"], (err as Error).message);
      }
      stores.redisUrl = redisUrl;
    }
    const keyPrefix = r.string(["stores", "keyPrefix"]);
    if (keyPrefix !== undefined) stores.keyPrefix = keyPrefix;
    const timeoutMs = r.number(["stores", "timeoutMs"], 1, 60_000);
    if (timeoutMs !== undefined) stores.timeoutMs = timeoutMs;
    config.stores = stores;
  }

  r.keys(["cache"], ["maxBytes", "coalesce", "coalesceWindowMs", "finalizedMaxAgeMs"]);
  if (r.has(["cache"])) {
    const cache = config.cache ?? { ...DEFAULT_CACHE };
    cache.maxBytes = r.number(["cache", "maxBytes"], 0, Number.MAX_SAFE_INTEGER) ?? cache.maxBytes;
    cache.coalesce = r.boolean(["cache", "coalesce"]) ?? cache.coalesce;
    cache.coalesceWindowMs = r.number(["cache", "coalesceWindowMs"], 1, 3_600_000) ?? cache.coalesceWindowMs;
    cache.finalizedMaxAgeMs = r.number(["cache", "finalizedMaxAgeMs"], 1, 3_600_000) ?? cache.finalizedMaxAgeMs;
    config.cache = cache;
  }
  config.workers = r.number(["workers"], 1, 256) ?? config.workers;
}

/* ------------------------------------------------------------------ */
/* Environment                                                         */
/* ------------------------------------------------------------------ */

/** Keys from NODEGATE_API_KEYS, held to the file's rules; an error names the entry by position, never by its text. */
function parseKeys(value: string): KeyConfig[] {
  const keys: KeyConfig[] = [];
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
    if (keys.some((k) => k.key === key)) fail("duplicate key");
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
    network.upstreams = [{ label: "primary", url: (ws ?? http) as string }, ...network.upstreams.slice(1)];
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
    if (existing) existing.upstreams = [{ label: "primary", url }, ...existing.upstreams.slice(1)];
    else config.networks.push({ name: "starknet", family: "starknet", upstreams: [{ label: "primary", url }] });
  }
  if (env.NODEGATE_PORT) {
    // Digits only: Number() would also read "0x50" (port 80) and " 80 ".
    const n = /^[0-9]{1,5}$/.test(env.NODEGATE_PORT) ? Number(env.NODEGATE_PORT) : Number.NaN;
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
    const n = Number(env.NODEGATE_WORKERS);
    if (!Number.isInteger(n) || n < 1 || n > 256) fail("NODEGATE_WORKERS")(`want a number of processes 1-256, got "${env.NODEGATE_WORKERS}"`);
    config.workers = n;
  }
}

/** Loads defaults, then the YAML file (if any), then the environment, and validates the result. */
export function loadConfig(env: NodeJS.ProcessEnv, configPath: string | undefined = env.NODEGATE_CONFIG): Config {
  const config = defaults();
  if (configPath) {
    let text: string;
    try {
      text = readFileSync(configPath, "utf8");
    } catch (err) {
      throw new ConfigError(`${configPath}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    applyConfigFile(config, text, configPath, env);
  }
  applyEnv(config, env);
  const primary = config.networks.find((n) => n.name === config.defaultNetwork);
  config.embeddedAnvil = primary !== undefined && primary.upstreams.length === 0;
  for (const n of config.networks) {
    if (n.upstreams.length === 0 && !(config.embeddedAnvil && n.name === config.defaultNetwork)) {
      throw new ConfigError(`network ${n.name}: no upstream configured (networks[].upstreams; only the default network may run on the embedded Anvil)`);
    }
    if (config.embeddedAnvil && n.name === config.defaultNetwork && n.family !== "eth") {
      throw new ConfigError(`network ${n.name}: the embedded Anvil serves only an ethereum network; configure an upstream`);
    }
  }
  return config;
}
