/**
 * The start banner: where each door listens and two commands to try, in
 * plaintext by default and spelled for TLS when a certificate is set (found
 * from outside: the banner printed http://, ws:// and --http2-prior-knowledge
 * for a TLS port, and its commands failed).
 */
import { describe, expect, it } from "vitest";
import { banner } from "../../src/banner.js";
import { loadConfig } from "../../src/config.js";

const config = loadConfig({ NODEGATE_UPSTREAM_URL: "http://127.0.0.1:8545" }, undefined);

describe("start banner", () => {
  it("plaintext: http, ws and buf curl over HTTP/2 with prior knowledge", () => {
    const text = banner(config, "127.0.0.1", 8080, "some-key-123", false, undefined);
    expect(text).toContain("JSON-RPC (HTTP):   http://127.0.0.1:8080/v3/some-key-123");
    expect(text).toContain("JSON-RPC (WS):     ws://127.0.0.1:8080/ws/v3/some-key-123");
    expect(text).toContain("(plaintext HTTP/2;");
    expect(text).toContain("--protocol grpc --http2-prior-knowledge");
  });

  it("TLS: https, wss, and buf curl by ALPN", () => {
    const text = banner({ ...config, tls: { certFile: "c.pem", keyFile: "k.pem" } }, "0.0.0.0", 8443, "some-key-123", false, undefined);
    expect(text).toContain("JSON-RPC (HTTP):   https://127.0.0.1:8443/v3/some-key-123");
    expect(text).toContain("JSON-RPC (WS):     wss://127.0.0.1:8443/ws/v3/some-key-123");
    expect(text).toContain("https://127.0.0.1:8443/nodegate.eth.v1.EthService/GetBlockByNumber");
    const doors = text.split("\n").filter((line) => !line.includes("upstream:")).join("\n");
    expect(doors).not.toMatch(/http:\/\/|ws:\/\/|prior-knowledge|plaintext/);
  });
});
