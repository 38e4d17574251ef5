/**
 * The start banner: where each door listens and two commands to try, in
 * plaintext by default and spelled for TLS when a certificate is set (found
 * from outside: the banner printed http://, ws:// and --http2-prior-knowledge
 * for a TLS port, and its commands failed).
 */
import { describe, expect, it } from "vitest";
import { banner } from "../../src/banner.js";
import { loadConfig } from "../../src/config/load.js";
import { redactUrl } from "../../src/upstream/upstream.js";
import { startNodegate } from "../support/nodegate.js";
import { startStarknetFixtureUpstream } from "../support/starknet-fixture-upstream.js";

const config = loadConfig({ NODEGATE_UPSTREAM_URL: "http://127.0.0.1:8545" }, undefined);

describe("start banner", () => {
  it("plaintext: http, ws and buf curl over HTTP/2 with prior knowledge", () => {
    const text = banner(config, "127.0.0.1", 8080, "some-key-123", false, undefined);
    expect(text).toContain("JSON-RPC (HTTP):   http://127.0.0.1:8080/v3/some-key-123");
    expect(text).toContain("JSON-RPC (WS):     ws://127.0.0.1:8080/ws/v3/some-key-123");
    expect(text).toContain("(plaintext HTTP/2;");
    expect(text).toContain("--protocol grpc --http2-prior-knowledge");
  });

  it("another network's line keeps a space between its name and its URL, however long the name", () => {
    // Found from outside: names of 9 characters or more ran into the URL ("JSON-RPC redirect301:http://...").
    const net = (name: string) => ({ ...config.networks[0]!, name });
    const text = banner({ ...config, networks: [...config.networks, net("polygon"), net("redirect301")] }, "127.0.0.1", 8080, "k", false, undefined);
    expect(text).toContain("JSON-RPC polygon:  http://127.0.0.1:8080/polygon/v3/k");
    expect(text).toContain("JSON-RPC redirect301: http://127.0.0.1:8080/redirect301/v3/k");
  });

  it("TLS: https, wss, and buf curl by ALPN", () => {
    const text = banner({ ...config, tls: { certFile: "c.pem", keyFile: "k.pem" } }, "0.0.0.0", 8443, "some-key-123", false, undefined);
    expect(text).toContain("JSON-RPC (HTTP):   https://127.0.0.1:8443/v3/some-key-123");
    expect(text).toContain("JSON-RPC (WS):     wss://127.0.0.1:8443/ws/v3/some-key-123");
    expect(text).toContain("https://127.0.0.1:8443/nodegate.eth.v1.EthService/GetBlockByNumber");
    const doors = text.split("\n").filter((line) => !line.includes("upstream:")).join("\n");
    expect(doors).not.toMatch(/http:\/\/|ws:\/\/|prior-knowledge|plaintext/);
  });

  it("IPv6 listen addresses are bracketed, and commands quote their URLs (a configured key shows as <KEY>)", () => {
    const text = banner(config, "::1", 8080, "<KEY>", false, undefined);
    expect(text).toContain("http://[::1]:8080/v3/<KEY>");
    expect(text).toContain("curl -s 'http://[::1]:8080/v3/<KEY>'");
    // Found from outside: with keys configured, the examples looked copy-paste but answered 401.
    expect(text).toContain("API key:           <KEY>   (one of your configured keys, never printed: put it in place of <KEY> below)");
  });

  it.each([
    ["https://mainnet.infura.io/v3/0123456789abcdef0123456789abcdef", "https://mainnet.infura.io/v3/<redacted>"],
    ["https://eth-mainnet.g.alchemy.com/v2/ALCHEMYKEY123", "https://eth-mainnet.g.alchemy.com/v2/<redacted>"],
    ["https://old-x.quiknode.pro/QUICKNODETOKEN/", "https://old-x.quiknode.pro/<redacted>/"],
    ["wss://user:secret@node.example:8546/ws?token=abc", "wss://node.example:8546/ws"],
    ["http://127.0.0.1:8545", "http://127.0.0.1:8545/"],
    // A Starknet node's spec version in its path is no key (found from outside: shown as /rpc/<redacted>).
    ["https://starknet.example/rpc/v0_8", "https://starknet.example/rpc/v0_8"],
    ["https://starknet.example/rpc/v0.7/0123456789abcdef0123456789abcdef", "https://starknet.example/rpc/v0.7/<redacted>"],
  ])("the upstream %s is shown as %s", (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
    expect(banner({ ...config, networks: [{ ...config.networks[0]!, upstreams: [{ ...config.networks[0]!.upstreams[0]!, url }] }] }, "127.0.0.1", 8080, "k", false, undefined)).toContain(`upstream:          ${shown}`);
  });
});

describe("start banner, Starknet as the default network", () => {
  it("its two commands are Starknet's, and both are answered (found from outside: they were Ethereum's, and failed)", async () => {
    const upstream = await startStarknetFixtureUpstream();
    const networks = [{ name: "starknet", family: "starknet" as const, upstreams: [{ label: "fixtures", url: upstream.url }] }];
    const ng = await startNodegate({ upstreamUrl: upstream.url, networks, config: { defaultNetwork: "starknet" } });
    try {
      const text = banner({ ...config, networks, defaultNetwork: "starknet" }, "127.0.0.1", ng.port, ng.key, false, undefined);
      const bodies = [...text.matchAll(/-d '([^']+)'/g)].map((m) => m[1] as string);
      const rpc = /\/(nodegate\.[\w.]+\/\w+)'/.exec(text)?.[1];
      expect(bodies).toHaveLength(2);
      const native = await (await fetch(ng.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: bodies[0] })).json();
      expect(native).toEqual({ jsonrpc: "2.0", id: 1, result: "0x534e5f5345504f4c4941" });
      const typed = await fetch(`${ng.url}/${rpc}`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": ng.key }, body: bodies[1] });
      expect(typed.status, await typed.clone().text()).toBe(200);
      expect(upstream.requests.map((r) => r.method)).toEqual(["starknet_chainId", "starknet_getTransactionByBlockIdAndIndex"]);
    } finally {
      await ng.close();
      await upstream.close();
    }
  });
});
