/** The YAML configuration file: validated with messages that name the bad field and its line. */
import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { createSecureContext } from "node:tls";
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document } from "yaml";
import type { ChainFamily } from "../methods/method-table.js";
import { parseRedisUrl } from "../redis/redis-url.js";
import {
  type Allowlists,
  type Config,
  ConfigError,
  DEFAULT_CACHE,
  DEFAULT_FAILOVER,
  DEFAULT_LIMITS,
  DEFAULT_SUBSCRIPTIONS,
  DEFAULT_WEBSOCKET,
  type KeyConfig,
  type Limits,
  type NetworkConfig,
  PLANS,
  type RateLimit,
  type StoresConfig,
  type SubscriptionSettings,
  type UpstreamConfig,
  type WebSocketSettings,
  WRITE_METHODS,
} from "./config.js";
import { type FailoverOfNetwork, failoverFamilyWarnings, type MethodLists, methodNameWarnings } from "./method-name-warnings.js";
import { httpUrl, KEY_PATTERN, LOG_LEVELS, MAX_TIMER_MS, plan } from "./values.js";

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
    // The file's top level has no name of its own (found from outside: "list.yaml:1:1: : want a mapping").
    if (path.length === 0) throw new ConfigError(`${this.where(path).replace(/: $/, "")}: the file: ${message === "want a mapping" ? "want a mapping of settings" : message}`);
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

/**
 * Applies a YAML configuration text onto `config`. Throws ConfigError naming
 * the field and line; adds to config.warnings what is valid but does nothing
 * (method names no call matches, checked against `served`: the methods
 * nodegate serves itself).
 */
export function applyConfigFile(config: Config, text: string, file: string, env: NodeJS.ProcessEnv, served: ReadonlySet<string>): void {
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
  if (config.websocket.reconnectMinDelayMs > config.websocket.reconnectMaxDelayMs) {
    const which = r.has(["websocket", "reconnectMinDelayMs"]) ? "reconnectMinDelayMs" : "reconnectMaxDelayMs";
    r.fail(["websocket", which], `reconnectMinDelayMs (${config.websocket.reconnectMinDelayMs}) is more than reconnectMaxDelayMs (${config.websocket.reconnectMaxDelayMs})`);
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
  r.keys(["log"], ["level"]);

  r.keys(["limits"], Object.keys(DEFAULT_LIMITS));
  for (const name of Object.keys(DEFAULT_LIMITS) as (keyof Limits)[]) {
    // Node's timers take at most 2^31-1 ms (about 24.8 days); a longer one fires at once (found from outside: every
    // eth_getLogs timed out in 1 ms).
    config.limits[name] = r.number(["limits", name], 1, name.endsWith("Ms") ? MAX_TIMER_MS : 1_000_000_000_000) ?? config.limits[name];
  }
  if (!r.has(["limits", "maxReplyBytesPerKey"])) config.limits.maxReplyBytesPerKey = Math.floor(config.limits.maxReplyBytesInFlight / 2);
  else if (config.limits.maxReplyBytesPerKey >= config.limits.maxReplyBytesInFlight) {
    config.warnings.push(`${r.where(["limits", "maxReplyBytesPerKey"])}: not below limits.maxReplyBytesInFlight (${config.limits.maxReplyBytesInFlight}): one key's clients may hold the whole budget`);
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
        r.keys(up, ["label", "url", "connections", "batchSize"]);
        const url = r.string([...up, "url"]) ?? r.fail([...up, "url"], "required");
        httpUrl(url, (m) => r.fail([...up, "url"], m), ["http:", "https:", "ws:", "wss:"]);
        const label = r.string([...up, "label"]) ?? (j === 0 ? "primary" : `partner-${j}`);
        // Labels name the upstream in logs and metrics: two of one network would be one series.
        if (upstreams.some((other) => other.label === label)) r.fail([...up, "label"], `duplicate label ${label} in this network`);
        // Valid, but a failover to the same node reaches what failed (found from outside: accepted silently).
        const twin = upstreams.findIndex((other) => other.url === url);
        if (twin >= 0) config.warnings.push(`${r.where([...up, "url"])}: the same URL as upstreams[${twin}]: a call failed over to it goes to the same node`);
        const connections = r.number([...up, "connections"], 1, 4096);
        if (connections !== undefined && /^wss?:/i.test(url)) r.fail([...up, "connections"], "applies to http(s) upstreams only (nodegate speaks to a WebSocket node over one connection)");
        const batchSize = r.number([...up, "batchSize"], 1, 1000);
        if (batchSize !== undefined && /^wss?:/i.test(url)) r.fail([...up, "batchSize"], "applies to http(s) upstreams only (a WebSocket node's calls never wait for a connection)");
        upstreams.push({ label, url, ...(connections === undefined ? {} : { connections }), ...(batchSize === undefined ? {} : { batchSize }) });
      }
      const network: NetworkConfig = { name, family, upstreams, definedAt: r.where(p) };
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
    // A set, not a search of the list: a file of 20,000 keys took 20 s to load (found from outside).
    const seen = new Set<string>();
    for (let i = 0; i < n; i++) {
      const p: Path = ["keys", i];
      r.keys(p, ["key", "plan", "secret", "rateLimit", "allowlists"]);
      const key = r.string([...p, "key"]) ?? r.fail([...p, "key"], "required");
      if (!KEY_PATTERN.test(key)) r.fail([...p, "key"], "want 8 to 128 letters, digits, - or _");
      if (seen.has(key)) r.fail([...p, "key"], "duplicate key");
      seen.add(key);
      const entry: KeyConfig = { key, plan: plan(r.string([...p, "plan"]), (m) => r.fail([...p, "plan"], m)) };
      const secret = r.string([...p, "secret"]);
      // An empty secret would pass any Basic header with an empty password, as an empty ${VAR} would (refused above).
      if (secret === "") r.fail([...p, "secret"], "an empty secret would accept any request: remove the line, or set one");
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

  const lists: MethodLists = {
    allowlists: (config.keys ?? []).flatMap((k, i) => (k.allowlists?.methods ? [{ path: ["keys", i, "allowlists", "methods"], methods: k.allowlists.methods }] : [])),
    failover: config.networks.flatMap((n, i) => (n.failover && r.has(["networks", i, "failover", "methods"]) ? [{ path: ["networks", i, "failover", "methods"], methods: n.failover.methods }] : [])),
  };
  const forwarded = config.passThrough.allowWrites ? [...config.passThrough.methods, "eth_sendRawTransaction"] : config.passThrough.methods;
  for (const w of methodNameWarnings(lists, served, forwarded)) config.warnings.push(`${r.where(w.path)}: ${w.message}`);
  const policies: FailoverOfNetwork[] = config.networks.map((n, i) => {
    const byDefault = !r.has(["networks", i, "failover", "methods"]);
    return { path: ["networks", i, "failover"], name: n.name, family: n.family, partners: n.upstreams.length - 1, methods: byDefault ? DEFAULT_FAILOVER.methods : (n.failover?.methods ?? []), byDefault };
  });
  for (const w of failoverFamilyWarnings(policies)) config.warnings.push(`${r.where(w.path)}: ${w.message}`);
}

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
