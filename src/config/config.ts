/**
 * nodegate's configuration: its shape and defaults. It is read by load.ts:
 * defaults, then the YAML file (yaml-file.ts), then the environment (env.ts).
 */
import type { ChainFamily } from "../methods/method-table.js";

export const PLANS = ["core", "growth", "custom"] as const;
export type Plan = (typeof PLANS)[number];

export interface UpstreamConfig {
  /** Safe-to-log name. */
  label: string;
  url: string;
  /** Connections an http(s) upstream's pool keeps open at most (a front may cap them per client). Default 64. */
  connections?: number;
  /**
   * Most calls an http(s) upstream is sent as one JSON-RPC batch when calls wait for a free connection (every one
   * busy). Default 100; 1 sends every call alone.
   */
  batchSize?: number;
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
  /** Where the configuration file defines it ("file:line:col: networks[1]"), for errors found once the environment is read. */
  definedAt?: string;
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
  /** Ping interval for native WebSocket clients (the keep-alive that closes a client gone quiet), in ms. */
  pingIntervalMs: number;
  /**
   * Ping interval for WebSocket upstreams, in ms. A node's connection that died without a word (no FIN, no RST: a
   * dropped route, a NAT or load balancer that forgot it) is found within this plus pongTimeoutMs, and its
   * subscriptions renewed; until then they are silent.
   */
  upstreamPingIntervalMs: number;
  /** An upstream that leaves a ping unanswered this long has dropped, in ms. */
  pongTimeoutMs: number;
  /** First upstream reconnect delay, doubled per failed attempt, in ms. */
  reconnectMinDelayMs: number;
  /** Longest upstream reconnect delay, in ms. */
  reconnectMaxDelayMs: number;
}

export const DEFAULT_WEBSOCKET: WebSocketSettings = {
  pingIntervalMs: 30_000,
  // Found from outside: with the native clients' 30 s (and a 10 s pong), subscriptions on a node whose connection went
  // silent for 2 s stayed silent 34 s. A ping every 5 s is nothing to a node, and bytes still arriving extend the pong.
  upstreamPingIntervalMs: 5_000,
  pongTimeoutMs: 5_000,
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
   * HTTP/2 its preface and SETTINGS must arrive within it. Slow-loris clients are cut off.
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
  /** Health and reflection calls (which take no key) open at once in the process (see src/grpc/keyless-calls.ts). */
  maxKeylessCalls: number;
  /** Of maxKeylessCalls, those one client address may have open at once. */
  maxKeylessCallsPerAddress: number;
  /** Answers and notifications waiting for a native WebSocket client, or events queued for a typed stream, in bytes; more ends it. */
  maxWsUnreadBytes: number;
  /**
   * Bytes of HTTP node replies held at once, over every call of the process:
   * a reply counts until it has arrived whole, and an answer of 64 KiB or
   * more until it has left for its client (see src/upstream/held-answers.ts).
   * A reply or answer that would pass it fails, so many large answers, a node
   * streaming without end to many calls, or clients that do not read cannot
   * take the process's memory. Each reply is also capped at 256 MiB.
   */
  maxReplyBytesInFlight: number;
  /**
   * Of maxReplyBytesInFlight, the answers one key's clients may hold waiting for them to read at once (half of it
   * unless set): a client that asks for large answers and does not read them leaves room for every other key's.
   */
  maxReplyBytesPerKey: number;
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
  /** What the file says that does nothing (a misspelt method name), each with its file and line: logged at start. */
  warnings: string[];
}

export interface StoresConfig {
  /** redis:// or rediss:// URL; unset keeps rate-limit counters and the cache in process. */
  redisUrl?: string;
  /** Prepended to every Redis key, so several deployments can share one Redis. Default "nodegate:". */
  keyPrefix?: string;
  /** A Redis command unanswered this long counts as Redis being down, in ms. Default 500. */
  timeoutMs?: number;
}

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
  maxKeylessCalls: 1000,
  maxKeylessCallsPerAddress: 100,
  maxWsUnreadBytes: 64 * 1024 * 1024,
  maxReplyBytesInFlight: 1024 * 1024 * 1024,
  maxReplyBytesPerKey: 512 * 1024 * 1024,
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

/** The seed's rule: eth_getBlockByHash may fail over to a partner, for Growth and Custom keys. */
export const DEFAULT_FAILOVER: FailoverPolicy = { methods: ["eth_getBlockByHash"], plans: ["growth", "custom"] };

/** Read-only methods outside the typed table that legacy callers use, of both chain families. */
export const DEFAULT_PASS_THROUGH = [
  "eth_accounts",
  "eth_blobBaseFee",
  "eth_blockNumber",
  "eth_chainId",
  // web3.js's getCoinbase, isMining and getHashRate.
  "eth_coinbase",
  "eth_createAccessList",
  "eth_feeHistory",
  // What viem's prepareTransactionRequest asks first (geth's: fills nonce, gas and fees, signs nothing); refused, viem
  // falls back to working the fees out itself, so a local account's transaction differed from the node's own fill.
  "eth_fillTransaction",
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
  "eth_hashrate",
  "eth_maxPriorityFeePerGas",
  "eth_mining",
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
  "starknet_getCompiledCasm",
  "starknet_getEvents",
  "starknet_getMessagesStatus",
  "starknet_getNonce",
  "starknet_getStateUpdate",
  "starknet_getStorageAt",
  "starknet_getStorageProof",
  "starknet_getTransactionByHash",
  "starknet_getTransactionReceipt",
  "starknet_getTransactionStatus",
  // The trace API (starknet.js's getTransactionTrace, getBlockTransactionsTraces, simulateTransaction): reads; a
  // simulation runs code but writes nothing, as eth_simulateV1 above.
  "starknet_simulateTransactions",
  "starknet_specVersion",
  "starknet_syncing",
  "starknet_traceBlockTransactions",
  "starknet_traceTransaction",
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

/**
 * Reads an operator may add to passThrough.methods beyond the default list
 * (tracing, raw encodings, the pool's contents, a node's own account views):
 * shared and retried as the default reads are.
 */
const KNOWN_EXTRA_READS = [
  "anvil_nodeInfo",
  "debug_getBadBlocks",
  "debug_getRawBlock",
  "debug_getRawHeader",
  "debug_getRawReceipts",
  "debug_getRawTransaction",
  "debug_storageRangeAt",
  "debug_traceBlockByHash",
  "debug_traceBlockByNumber",
  "debug_traceCall",
  "debug_traceTransaction",
  "eth_callMany",
  "eth_getAccount",
  "eth_getAccountInfo",
  "eth_getHeaderByHash",
  "eth_getHeaderByNumber",
  "eth_getRawTransactionByBlockHashAndIndex",
  "eth_getRawTransactionByBlockNumberAndIndex",
  "eth_getRawTransactionByHash",
  "trace_block",
  "trace_call",
  "trace_callMany",
  "trace_filter",
  "trace_get",
  "trace_replayBlockTransactions",
  "trace_replayTransaction",
  "trace_transaction",
  "txpool_content",
  "txpool_contentFrom",
  "txpool_inspect",
  "txpool_status",
];

/**
 * Pass-through methods known only to read: identical calls made together
 * share one upstream call, and a call may be retried or failed over. Any
 * other method a configuration lists may change the node's state
 * (anvil_mine, evm_snapshot, hardhat_setBalance, personal_sign's nonce
 * bookkeeping): five callers asking anvil_mine at once must mine five blocks,
 * not share one.
 */
const KNOWN_READS: ReadonlySet<string> = new Set([...DEFAULT_PASS_THROUGH.filter((m) => !FILTER_METHODS.includes(m)), ...KNOWN_EXTRA_READS]);

/**
 * Whether every call of a pass-through method must reach the node itself,
 * once (no coalescing, retry or failover): writes, filters, and any method
 * not known to only read (looked up per pass-through call).
 */
export function sentOnlyOnce(method: string): boolean {
  return !KNOWN_READS.has(method);
}

/** The configuration with nothing set: Anvil embedded, 127.0.0.1:8080, the seed's plans and limits. */
export function defaults(): Config {
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
    warnings: [],
  };
}
