/**
 * An https node whose certificate this machine does not trust: callers and
 * the log read which check failed and how to trust a private CA. Found from
 * outside: both read only "upstream unavailable: request failed".
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import http2 from "node:http2";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { HttpUpstream } from "../../src/upstream/http-upstream.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { testTempDir } from "../support/temp-dir.js";

let server: https.Server;
let ng: TestNodegate;
/** A self-signed certificate for 127.0.0.1 and its key. */
let pair: { cert: Buffer; key: Buffer };

beforeAll(async () => {
  const dir = testTempDir("nodegate-untrusted-tls-");
  await promisify(execFile)("openssl", [
    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"),
    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
  ]);
  pair = { cert: readFileSync(join(dir, "cert.pem")), key: readFileSync(join(dir, "key.pem")) };
  server = https.createServer(pair, (_req, res) => {
    res.end('{"jsonrpc":"2.0","id":1,"result":"0x1"}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  ng = await startNodegate({ upstreamUrl: `https://127.0.0.1:${(server.address() as AddressInfo).port}` });
});

afterAll(async () => {
  await ng?.close();
  await new Promise((resolve) => server?.close(resolve));
});

it("a self-signed node certificate is named as such, with the way to trust it", async () => {
  const answer = await post(ng.rpcUrl, rpc("eth_blockNumber"));
  expect(answer.status).toBe(503);
  expect(answer.json.error).toEqual({
    code: -32050,
    message: "upstream unavailable: TLS: the node's certificate is not trusted (self-signed, or from a CA this machine does not know: NODE_EXTRA_CA_CERTS adds one)",
  });
});

it("a node that takes only HTTP/2 says so, where it read \"request failed\"", async () => {
  // Found from outside. The certificate is trusted here (tls.ca), so what fails is the protocol.
  const h2 = http2.createSecureServer(pair, (_req, res) => res.end('{"jsonrpc":"2.0","id":1,"result":"0x1"}'));
  await new Promise<void>((resolve) => h2.listen(0, "127.0.0.1", resolve));
  const upstream = new HttpUpstream({ url: `https://127.0.0.1:${(h2.address() as AddressInfo).port}`, label: "h2-only", tls: { ca: pair.cert } });
  try {
    const failed = await upstream.call("eth_blockNumber", "[]", { timeoutMs: 5000 }).then(() => undefined, (e: Error) => e);
    expect(failed?.message).toBe("upstream unavailable: TLS: the node takes only HTTP/2 (it refused HTTP/1.1 in the handshake); nodegate calls nodes over HTTP/1.1");
  } finally {
    await upstream.close();
    await new Promise((resolve) => h2.close(resolve));
  }
});
