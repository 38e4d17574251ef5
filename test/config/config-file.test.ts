import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/config.js";
import { loadConfig } from "../../src/config/load.js";
import { testTempDir } from "../support/temp-dir.js";

function file(text: string): string {
  const path = join(testTempDir("nodegate-config-"), "nodegate.yaml");
  writeFileSync(path, text);
  return path;
}

function errorOf(text: string, env: NodeJS.ProcessEnv = {}): string {
  try {
    loadConfig(env, file(text));
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

const VALID = `
listen:
  host: 0.0.0.0
  port: 9000
networks:
  - name: mainnet
    family: ethereum
    upstreams:
      - label: provider
        url: https://mainnet.example/v3/\${PROVIDER_KEY}
      - label: partner
        url: https://partner.example/rpc
    failover:
      methods: [eth_getBlockByHash, eth_getBlockByNumber]
      plans: [growth]
keys:
  - key: abcdefgh12345678
    plan: growth
    secret: s3cret
    rateLimit: { requestsPerSecond: 5 }
    allowlists:
      methods: [eth_call]
      contractAddresses: ["0x1111111111111111111111111111111111111111"]
limits:
  getLogsMaxResults: 500
`;

describe("configuration file", () => {
  it("reads a full file, with environment interpolation", () => {
    const config = loadConfig({ PROVIDER_KEY: "pk" }, file(VALID));
    expect(config.port).toBe(9000);
    expect(config.host).toBe("0.0.0.0");
    expect(config.defaultNetwork).toBe("mainnet");
    expect(config.networks[0]?.upstreams.map((u) => u.url)).toEqual(["https://mainnet.example/v3/pk", "https://partner.example/rpc"]);
    expect(config.networks[0]?.failover).toEqual({ methods: ["eth_getBlockByHash", "eth_getBlockByNumber"], plans: ["growth"] });
    expect(config.keys?.[0]).toMatchObject({ key: "abcdefgh12345678", plan: "growth", secret: "s3cret", rateLimit: { requestsPerSecond: 5 } });
    expect(config.limits.getLogsMaxResults).toBe(500);
    expect(config.limits.getLogsMaxParams).toBe(5000);
    expect(config.embeddedAnvil).toBe(false);
  });

  it("one key's share of the reply budget is half of maxReplyBytesInFlight unless set", () => {
    expect(loadConfig({ PROVIDER_KEY: "pk" }, file(VALID)).limits.maxReplyBytesPerKey).toBe(512 * 1024 * 1024);
    expect(loadConfig({ PROVIDER_KEY: "pk" }, file(`${VALID}  maxReplyBytesInFlight: 100000000\n`)).limits.maxReplyBytesPerKey).toBe(50_000_000);
    expect(loadConfig({ PROVIDER_KEY: "pk" }, file(`${VALID}  maxReplyBytesInFlight: 100000000\n  maxReplyBytesPerKey: 90000000\n`)).limits.maxReplyBytesPerKey).toBe(90_000_000);
    // Found from outside: a share the size of the budget or more was taken silently, though it bounds nothing.
    const path = file(`${VALID}  maxReplyBytesInFlight: 100000000\n  maxReplyBytesPerKey: 134217728\n`);
    expect(loadConfig({ PROVIDER_KEY: "pk" }, path).warnings).toEqual([`${path}:27:24: limits.maxReplyBytesPerKey: not below limits.maxReplyBytesInFlight (100000000): one key's clients may hold the whole budget`]);
  });

  it("environment variables override the file", () => {
    const config = loadConfig({ PROVIDER_KEY: "pk", NODEGATE_PORT: "7000", NODEGATE_API_KEYS: "client-k1:custom,client-k2", NODEGATE_UPSTREAM_URL: "http://127.0.0.1:1" }, file(VALID));
    expect(config.port).toBe(7000);
    expect(config.keys).toEqual([
      { key: "client-k1", plan: "custom" },
      { key: "client-k2", plan: "core" },
    ]);
    expect(config.networks[0]?.upstreams[0]?.url).toBe("http://127.0.0.1:1");
    expect(config.networks[0]?.upstreams[1]?.label).toBe("partner");
    // The URL changes, the file's label stays: a partner labelled "primary" must not share the primary's series.
    expect(config.networks[0]?.upstreams[0]?.label).toBe("provider");
    // So do its connections, for another http(s) URL.
    const capped = file(VALID.replace("label: provider", "label: provider\n        connections: 8"));
    expect(loadConfig({ PROVIDER_KEY: "pk" }, capped).networks[0]?.upstreams[0]?.connections).toBe(8);
    expect(loadConfig({ PROVIDER_KEY: "pk", NODEGATE_UPSTREAM_URL: "http://127.0.0.1:1" }, capped).networks[0]?.upstreams[0]?.connections).toBe(8);
    expect(loadConfig({ PROVIDER_KEY: "pk", NODEGATE_UPSTREAM_WS_URL: "ws://127.0.0.1:1" }, capped).networks[0]?.upstreams[0]?.connections).toBeUndefined();
    // And its batch size.
    const unbatched = file(VALID.replace("label: provider", "label: provider\n        batchSize: 1"));
    expect(loadConfig({ PROVIDER_KEY: "pk" }, unbatched).networks[0]?.upstreams[0]?.batchSize).toBe(1);
    expect(loadConfig({ PROVIDER_KEY: "pk", NODEGATE_UPSTREAM_URL: "http://127.0.0.1:1" }, unbatched).networks[0]?.upstreams[0]?.batchSize).toBe(1);
    expect(loadConfig({ PROVIDER_KEY: "pk", NODEGATE_UPSTREAM_WS_URL: "ws://127.0.0.1:1" }, unbatched).networks[0]?.upstreams[0]?.batchSize).toBeUndefined();
    const clash = loadConfig({ PROVIDER_KEY: "pk", NODEGATE_UPSTREAM_URL: "http://127.0.0.1:1" }, file(VALID.replace("label: partner", "label: primary")));
    expect(clash.networks[0]?.upstreams.map((u) => u.label)).toEqual(["provider", "primary"]);
  });

  it.each([
    ["unknown top-level setting", "lisen:\n  port: 1\n", /:1:1: lisen: unknown setting/],
    ["bad port", "listen:\n  port: 99999\n", /:2:9: listen\.port: want an integer from 0 to 65535/],
    ["bad plan", "keys:\n  - key: abcdefgh12345678\n    plan: gold\n", /:3:11: keys\[0\]\.plan: want one of core, growth, custom/],
    ["bad address", "keys:\n  - key: abcdefgh12345678\n    allowlists:\n      contractAddresses: [0x12]\n", /:4:27: keys\[0\]\.allowlists\.contractAddresses\[0\]: want a string \(YAML reads unquoted 0x\.\.\. as a number/],
    ["a CORS origin that can never match", "cors:\n  origins: [\"*.\"]\n", /:2:13: cors\.origins\[0\]: want an origin such as/],
    ["an allowlist origin that can never match", "keys:\n  - key: abcdefgh12345678\n    allowlists:\n      origins: [\"http://\"]\n", /keys\[0\]\.allowlists\.origins\[0\]: want an origin such as/],
    ["a number where a string goes, not hex: no hex hint", "keys:\n  - key: 1234567890\n", /:2:10: keys\[0\]\.key: want a string$/],
    ["short address", 'keys:\n  - key: abcdefgh12345678\n    allowlists:\n      contractAddresses: ["0x12"]\n', /:4:27: keys\[0\]\.allowlists\.contractAddresses\[0\]: want a 0x-prefixed 20-byte address/],
    ["bad upstream URL", "networks:\n  - name: x\n    upstreams:\n      - url: ftp://x\n", /:4:14: networks\[0\]\.upstreams\[0\]\.url: want a http:\/\/ or https:\/\/ or ws:\/\/ or wss:\/\/ URL/],
    ["missing environment variable", "networks:\n  - name: x\n    upstreams:\n      - url: https://a/\${NOPE}\n", /upstreams\[0\]\.url: environment variable NOPE is not set/],
    ["network without upstream", "networks:\n  - name: other\n    family: starknet\n", /:2:5: networks\[0\]: network other: the embedded Anvil serves only an ethereum network/],
    // Found from outside: this one alone named no line.
    ["a second network without upstream", "networks:\n  - name: main\n    upstreams:\n      - url: http://a/\n  - name: other\n    family: starknet\n", /:5:5: networks\[1\]: network other: no upstream configured/],
    ["invalid YAML", "listen: [\n", /:2:1: invalid YAML/],
    // Found from outside: these passed check-config, or failed without naming the field and line.
    ["empty upstream list", "networks:\n  - name: x\n    upstreams: []\n", /:3:16: networks\[0\]\.upstreams: want at least one upstream/],
    ["a network named ws", "networks:\n  - name: ws\n    upstreams:\n      - url: http://a/\n", /:2:11: networks\[0\]\.name: "ws" is part of the JSON-RPC paths/],
    ["a network named v3", "networks:\n  - name: v3\n    upstreams:\n      - url: http://a/\n", /networks\[0\]\.name: "v3" is part of the JSON-RPC paths/],
    [
      "two upstreams with one label",
      "networks:\n  - name: x\n    upstreams:\n      - url: http://a/\n        label: one\n      - url: http://b/\n        label: one\n",
      /:7:16: networks\[0\]\.upstreams\[1\]\.label: duplicate label one in this network/,
    ],
    // Found from outside: a write method on the pass-through list was forwarded although allowWrites was false.
    ["a write method listed without allowWrites", "passThrough:\n  methods: [eth_chainId, starknet_addInvokeTransaction]\n", /:2:26: passThrough\.methods\[1\]: starknet_addInvokeTransaction writes to the chain: forwarded only with passThrough\.allowWrites: true/],
    ["unknown log level", "log:\n  level: verbose\n", /:2:10: log\.level: want one of fatal, error, warn, info, debug, trace, silent, got "verbose"/],
    // Found from outside: these passed check-config, then a timer fired at once, a WebSocket upstream failed every
    // call for good, nodegate ended its start with a URIError, and any empty password passed.
    ["a timeout longer than a Node timer takes", "limits:\n  getLogsTimeoutMs: 3000000000\n", /:2:21: limits\.getLogsTimeoutMs: want an integer from 1 to 2147483647/],
    ["an upstream URL with a fragment", "networks:\n  - name: x\n    upstreams:\n      - url: ws://a/ws#main\n", /:4:14: networks\[0\]\.upstreams\[0\]\.url: a URL fragment \(#\.\.\.\) is never sent to the node/],
    ["a bare % in an upstream password", "networks:\n  - name: x\n    upstreams:\n      - url: http://user:50%off@a/\n", /:4:14: networks\[0\]\.upstreams\[0\]\.url: the user or password has a % that starts no %XX escape/],
    ["log.pretty, which nothing reads", "log:\n  pretty: true\n", /:2:3: log\.pretty: unknown setting/],
    ["connections for a WebSocket upstream", "networks:\n  - name: x\n    upstreams:\n      - url: ws://a/\n        connections: 8\n", /:5:22: networks\[0\]\.upstreams\[0\]\.connections: applies to http\(s\) upstreams only/],
    ["a batch size for a WebSocket upstream", "networks:\n  - name: x\n    upstreams:\n      - url: ws://a/\n        batchSize: 10\n", /:5:20: networks\[0\]\.upstreams\[0\]\.batchSize: applies to http\(s\) upstreams only/],
    ["a batch size past the largest", "networks:\n  - name: x\n    upstreams:\n      - url: http://a/\n        batchSize: 1001\n", /:5:20: networks\[0\]\.upstreams\[0\]\.batchSize: want an integer from 1 to 1000/],
    ["no connections at all", "networks:\n  - name: x\n    upstreams:\n      - url: http://a/\n        connections: 0\n", /:5:22: networks\[0\]\.upstreams\[0\]\.connections: want an integer from 1 to 4096/],
    ["an empty secret", 'keys:\n  - key: abcdefgh12345678\n    secret: ""\n', /:3:13: keys\[0\]\.secret: an empty secret would accept any request/],
  ])("names the field and line: %s", (_, text, pattern) => {
    expect(errorOf(text)).toMatch(pattern);
  });

  it("environment errors name the variable", () => {
    expect(() => loadConfig({ NODEGATE_PORT: "x" })).toThrow(/NODEGATE_PORT: want a port number/);
    expect(() => loadConfig({ NODEGATE_UPSTREAM_URL: "ftp://x" })).toThrow(/NODEGATE_UPSTREAM_URL: want a http/);
    // The message never repeats the URL: its password is a secret.
    expect(() => loadConfig({ NODEGATE_UPSTREAM_URL: "https://u:50%off@node.example/" })).toThrow(/^NODEGATE_UPSTREAM_URL: the user or password has a % that starts no %XX escape \(a % in a password is written %25\)$/);
    expect(() => loadConfig({ NODEGATE_UPSTREAM_WS_URL: "wss://node.example/ws#x" })).toThrow(/^NODEGATE_UPSTREAM_WS_URL: a URL fragment/);
    // Keys follow the file's rules, and an error names the entry by position: a key's characters are never printed.
    expect(() => loadConfig({ NODEGATE_API_KEYS: "good-key-1:growth,secret-key-2:gold" })).toThrow(/^NODEGATE_API_KEYS: entry 2: want one of core, growth, custom$/);
    expect(() => loadConfig({ NODEGATE_API_KEYS: "sEcr3" })).toThrow(/^NODEGATE_API_KEYS: entry 1: want 8 to 128 letters, digits, - or _$/);
    expect(() => loadConfig({ NODEGATE_API_KEYS: "good-key-1,good-key-1" })).toThrow(/^NODEGATE_API_KEYS: entry 2: duplicate key$/);
    expect(() => loadConfig({ NODEGATE_API_KEYS: "good-key-1:growth:extra" })).toThrow(/^NODEGATE_API_KEYS: entry 1: want "key" or "key:plan", got 3 parts/);
    expect(() => loadConfig({ NODEGATE_PORT: "0x50" })).toThrow(/NODEGATE_PORT: want a port number/);
    expect(() => loadConfig({ NODEGATE_LOG_LEVEL: "verbose" })).toThrow(/NODEGATE_LOG_LEVEL: want one of fatal, error/);
  });

  it("with no upstream anywhere, the embedded Anvil is the default", () => {
    const config = loadConfig({});
    expect(config.embeddedAnvil).toBe(true);
    expect(config.keys).toBeUndefined();
  });
});

describe("found by check-config, not at start", () => {
  const minimal = (extra: string) => `networks:\n  - name: mainnet\n    family: ethereum\n    upstreams:\n      - label: a\n        url: http://127.0.0.1:8545\n${extra}`;

  it.each(["keys: []\n", "keys:\n"])("an empty key list (%j) is refused: every call would be refused", (keys) => {
    expect(errorOf(minimal(keys))).toMatch(/keys: want at least one key/);
  });

  it("a certificate or key that the TLS server could not use is refused, naming the field", async () => {
    const dir = testTempDir("nodegate-tls-check-");
    const pair = (name: string) => {
      execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(dir, `${name}-key.pem`), "-out", join(dir, `${name}-cert.pem`), "-days", "1", "-subj", "/CN=localhost"], { stdio: "ignore" });
      return { cert: join(dir, `${name}-cert.pem`), key: join(dir, `${name}-key.pem`) };
    };
    const a = pair("a");
    const b = pair("b");
    const garbage = join(dir, "garbage.pem");
    writeFileSync(garbage, "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n");
    const tls = (cert: string, key: string) => minimal(`tls:\n  certFile: ${cert}\n  keyFile: ${key}\n`);
    expect(() => loadConfig({}, file(tls(a.cert, a.key)))).not.toThrow();
    expect(errorOf(tls(garbage, a.key))).toMatch(/tls\.certFile: not a PEM certificate/);
    expect(errorOf(tls(a.key, a.cert))).toMatch(/tls\.certFile: not a PEM certificate/);
    expect(errorOf(tls(a.cert, garbage))).toMatch(/tls\.keyFile: not a PEM private key/);
    expect(errorOf(tls(a.cert, b.key))).toMatch(/tls\.keyFile: does not match the certificate/);
    // Found from outside: a key of another type than the certificate's (an EC key for an RSA certificate) passed,
    // then every handshake failed; an encrypted key was called "not a PEM private key".
    const ecKey = join(dir, "ec-key.pem");
    execFileSync("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", ecKey], { stdio: "ignore" });
    expect(errorOf(tls(a.cert, ecKey))).toMatch(/tls\.keyFile: does not match the certificate in certFile \(a ec key for a certificate whose key is rsa\)/);
    const encrypted = join(dir, "encrypted-key.pem");
    execFileSync("openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-aes256", "-pass", "pass:secret", "-out", encrypted], { stdio: "ignore" });
    expect(errorOf(tls(a.cert, encrypted))).toMatch(/tls\.keyFile: the private key is encrypted, and nodegate takes no passphrase/);
  });

  it("relative certificate and key paths are read beside the configuration file", () => {
    const dir = testTempDir("nodegate-tls-relative-");
    execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-days", "1", "-subj", "/CN=localhost"], { stdio: "ignore" });
    const path = join(dir, "nodegate.yaml");
    writeFileSync(path, minimal("tls:\n  certFile: cert.pem\n  keyFile: ./key.pem\n"));
    expect(loadConfig({}, path).tls).toEqual({ certFile: join(dir, "cert.pem"), keyFile: join(dir, "key.pem") });
  });
});

describe("method names no call matches: warnings, with the line", () => {
  const withUpstream = (extra: string) => `networks:\n  - name: mainnet\n    upstreams:\n      - url: http://127.0.0.1:8545\n${extra}`;
  const warningsOf = (text: string) => loadConfig({}, file(text)).warnings.map((w) => w.replace(/^.*nodegate\.yaml:/, ""));

  it("a misspelt method in a key's allowlist, with the name it was likely meant to be", () => {
    const text = withUpstream("keys:\n  - key: abcdefgh12345678\n    allowlists:\n      methods: [eth_call, eth_getBlockByNumbr, eth_*, eth_chainId, eth_subscribe, GetLogs, trace_block]\n");
    expect(warningsOf(text)).toEqual([
      "8:27: keys[0].allowlists.methods[1]: eth_getBlockByNumbr is neither a method nodegate translates nor in passThrough.methods, so no call matches it (did you mean eth_getBlockByNumber?); a call to it gets -32601 whatever this list says",
      "8:83: keys[0].allowlists.methods[5]: GetLogs is neither a method nodegate translates nor in passThrough.methods, so no call matches it; a call to it gets -32601 whatever this list says",
      "8:92: keys[0].allowlists.methods[6]: trace_block is neither a method nodegate translates nor in passThrough.methods, so no call matches it; a call to it gets -32601 whatever this list says",
    ]);
    // A method the file adds to the pass-through list is one a call can match.
    expect(warningsOf(`${text}passThrough:\n  methods: [trace_block]\n`)).toHaveLength(2);
  });

  it("failover entries that match no call, or name a method never sent twice", () => {
    const text = withUpstream("    failover:\n      methods: [eth_getBlockByHash, eth_*, eth_getTransactionReciept, eth_newFilter]\n");
    expect(warningsOf(text)).toEqual([
      "6:37: networks[0].failover.methods[1]: failover.methods takes exact method names: eth_* matches no call",
      "6:44: networks[0].failover.methods[2]: eth_getTransactionReciept is neither a method nodegate translates nor in passThrough.methods, so no call matches it (did you mean eth_getTransactionReceipt?)",
      "6:71: networks[0].failover.methods[3]: eth_newFilter is sent to one node once, never retried nor failed over",
    ]);
  });

  it("a failover policy that names no method of its network's family: its partners would take no call", () => {
    // Found from outside: a Starknet network with a partner under the default policy (eth_getBlockByHash) never
    // failed over, and nothing said so.
    const starknet = (extra: string) =>
      `networks:\n  - name: mainnet\n    upstreams:\n      - url: http://127.0.0.1:8545\n  - name: starknet\n    family: starknet\n    upstreams:\n      - url: http://127.0.0.1:9545\n      - url: http://127.0.0.1:9546\n${extra}`;
    expect(warningsOf(starknet(""))).toEqual([
      "5:5: networks[1]: network starknet has a partner upstream, but the default failover policy (eth_getBlockByHash) names no Starknet method: no call fails over to it (list the methods that may, in failover.methods)",
    ]);
    expect(warningsOf(starknet("    failover:\n      methods: [eth_getBlockByHash]\n"))).toEqual([
      "11:17: networks[1].failover.methods[0]: eth_getBlockByHash is an Ethereum method; network starknet serves Starknet methods, so no call matches it",
      "11:16: networks[1].failover.methods: network starknet has a partner upstream, but its failover.methods names no Starknet method: no call fails over to it (list the methods that may, in failover.methods)",
    ]);
    expect(warningsOf(starknet("    failover:\n      methods: [starknet_getBlockWithTxHashes]\n"))).toEqual([]);
    // Without partners, the default policy names nothing that matters.
    expect(warningsOf(withUpstream(""))).toEqual([]);
  });

  it("a partner with its primary's URL (a failover reaches the same node), and reconnect delays or request timeouts the wrong way round", () => {
    // Found from outside: both were accepted silently.
    const twin = "networks:\n  - name: mainnet\n    upstreams:\n      - url: http://127.0.0.1:8545\n      - url: http://127.0.0.1:8545\n";
    expect(warningsOf(twin)).toEqual(["5:14: networks[0].upstreams[1].url: the same URL as upstreams[0]: a call failed over to it goes to the same node"]);
    expect(() => loadConfig({}, file(withUpstream("websocket:\n  reconnectMinDelayMs: 5000\n")))).toThrow(/websocket\.reconnectMinDelayMs: reconnectMinDelayMs \(5000\) is more than reconnectMaxDelayMs \(1000\)/);
    // A head that may take longer than the whole request would time out as the wrong one.
    expect(() => loadConfig({}, file(withUpstream("limits:\n  headersTimeoutMs: 20000\n  requestTimeoutMs: 10000\n")))).toThrow(/limits\.headersTimeoutMs: headersTimeoutMs must not exceed requestTimeoutMs/);
    expect(() => loadConfig({}, file(withUpstream("limits:\n  headersTimeoutMs: 10000\n  requestTimeoutMs: 10000\n")))).not.toThrow();
  });

  it("pings WebSocket upstreams every 5 s by default, apart from the native clients' 30 s keep-alive, and reads both", () => {
    expect(loadConfig({}, file(withUpstream(""))).websocket).toMatchObject({ pingIntervalMs: 30_000, upstreamPingIntervalMs: 5_000, pongTimeoutMs: 5_000 });
    expect(loadConfig({}, file(withUpstream("websocket:\n  upstreamPingIntervalMs: 2000\n  pingIntervalMs: 45000\n"))).websocket).toMatchObject({ pingIntervalMs: 45_000, upstreamPingIntervalMs: 2_000 });
  });

  it("the shipped example configuration has none", () => {
    const env = { PROVIDER_KEY: "p", PARTNER_URL: "https://partner.example/rpc", CLIENT_KEY_1: "client-key-1-xyz", CLIENT_KEY_2: "client-key-2-xyz", CLIENT_SECRET_2: "s" };
    expect(loadConfig(env, join(import.meta.dirname, "../../examples/nodegate.example.yaml")).warnings).toEqual([]);
  });
});

describe("${NAME} in the file", () => {
  const withUpstream = (url: string, extra = "") => `networks:\n  - name: mainnet\n    family: ethereum\n    upstreams:\n      - label: a\n        url: ${url}\n${extra}`;

  it("reads lower-case names too (they were left as literal text in the URL)", () => {
    const config = loadConfig({ provider_key: "pk1" }, file(withUpstream("https://node.example/v3/${provider_key}")));
    expect(config.networks[0]?.upstreams[0]?.url).toBe("https://node.example/v3/pk1");
  });

  it("a whole number field may come from a variable; a value that is not one is named", () => {
    expect(loadConfig({ PORT: "9123" }, file(withUpstream("http://127.0.0.1:8545", "listen:\n  port: ${PORT}\n"))).port).toBe(9123);
    expect(errorOf(withUpstream("http://127.0.0.1:8545", "listen:\n  port: ${PORT}\n"), { PORT: "80a" })).toMatch(/listen\.port: want an integer from 0 to 65535 \(\$\{PORT\} is "80a"\)/);
  });

  it("a variable set to nothing is refused (an empty secret would pass every request)", () => {
    const text = withUpstream("http://127.0.0.1:8545", "keys:\n  - key: abcdefgh12345678\n    secret: ${CLIENT_SECRET}\n");
    expect(errorOf(text, { CLIENT_SECRET: "" })).toMatch(/keys\[0\]\.secret: environment variable CLIENT_SECRET is empty/);
  });
});
