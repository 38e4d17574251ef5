/**
 * The spec's transports are HTTPS and wss. nodegate, given a certificate,
 * serves TLS on its own port: the native path over HTTPS and wss, the typed
 * path as gRPC over HTTP/2 (ALPN), checked with real TLS clients (node:https,
 * ws, @grpc/grpc-js and connect-es) that trust only the test's self-signed
 * certificate.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import http2 from "node:http2";
import https from "node:https";
import net from "node:net";
import tls from "node:tls";
import { join } from "node:path";
import { promisify } from "node:util";
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ChainIdResponseSchema, EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { BlockTag } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { recordSeen } from "../support/secret-scan.js";
import { openWsCaller } from "../support/ws-calls.js";
import { noteDoor, specRule } from "./harness/spec-rule.js";
import { testTempDir } from "../support/temp-dir.js";

let anvil: AnvilNode;
let secure: TestNodegate;
let cert: Buffer;
let tlsFiles: { certFile: string; keyFile: string };

beforeAll(async () => {
  const dir = testTempDir("nodegate-spec-tls-");
  const [node] = await Promise.all([
    startAnvil(),
    promisify(execFile)("openssl", [
      "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"),
      "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
    ]),
  ]);
  anvil = node;
  cert = readFileSync(join(dir, "cert.pem"));
  tlsFiles = { certFile: join(dir, "cert.pem"), keyFile: join(dir, "key.pem") };
  secure = await startNodegate({ upstreamUrl: anvil.url, config: { tls: tlsFiles } });
});
afterAll(async () => {
  await secure?.close();
  await anvil?.stop();
});

function postHttps(path: string, body: string): Promise<{ status: number; text: string }> {
  return postTo(secure, body, path);
}

function postTo(nodegate: TestNodegate, body: string, path = `/v3/${nodegate.key}`): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: "localhost", port: nodegate.port, path, method: "POST", ca: cert, headers: { "content-type": "application/json" } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

specRule("transport.tls", async () => {
  noteDoor("http");
  const answer = await postHttps(`/v3/${secure.key}`, '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}');
  recordSeen("HTTPS answer", answer.text);
  expect(answer).toEqual({ status: 200, text: '{"jsonrpc":"2.0","id":1,"result":"0x7a69"}' });

  noteDoor("ws");
  const ws = await openWsCaller(`wss://localhost:${secure.port}/ws/v3/${secure.key}`, { ca: cert });
  try {
    expect(await ws.call("eth_chainId", [])).toEqual({ jsonrpc: "2.0", id: 1, result: "0x7a69" });
  } finally {
    await ws.close();
  }

  noteDoor("typed");
  const client = new grpc.Client(`localhost:${secure.port}`, grpc.credentials.createSsl(cert));
  try {
    const md = new grpc.Metadata();
    md.set("x-api-key", secure.key);
    const reply = await new Promise<Buffer>((resolve, reject) => {
      client.makeUnaryRequest("/nodegate.eth.v1.EthService/ChainId", (x: Buffer) => x, (x: Buffer) => x, Buffer.alloc(0), md, (err, res) => (err ? reject(err) : resolve(res as Buffer)));
    });
    expect(fromBinary(ChainIdResponseSchema, reply).chainId).toBe(31337n);
  } finally {
    client.close();
  }
  const connect = createClient(EthService, createGrpcTransport({ baseUrl: `https://localhost:${secure.port}`, nodeOptions: { ca: cert } }));
  expect((await connect.chainId({}, { headers: { "x-api-key": secure.key } })).chainId).toBe(31337n);
});

it("a client that resets its connection to the TLS port before its first bytes leaves the process serving", async () => {
  // Found on review: the TLS port's first-bytes listener had no error listener on the socket: a reset then was thrown.
  for (const first of ["", "\x16"]) {
    const socket = net.connect(secure.port, "127.0.0.1");
    socket.on("error", () => {});
    await new Promise((resolve) => socket.once("connect", resolve));
    if (first !== "") socket.write(first);
    await new Promise((r) => setTimeout(r, 30));
    socket.resetAndDestroy();
    await new Promise((r) => setTimeout(r, 30));
  }
  const answer = await postHttps(`/v3/${secure.key}`, '{"jsonrpc":"2.0","id":3,"method":"eth_chainId","params":[]}');
  expect(answer).toEqual({ status: 200, text: '{"jsonrpc":"2.0","id":3,"result":"0x7a69"}' });
});

it("a plain HTTP request sent to the TLS port is answered 400 saying so, and TLS callers are served as before", async () => {
  // Found from outside: the TLS server closed such a connection with no word (curl: "Empty reply from server").
  const res = await fetch(`http://127.0.0.1:${secure.port}/v3/${secure.key}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
  });
  expect(res.status).toBe(400);
  expect(await res.text()).toBe("This port speaks TLS: call it with https:// (wss:// for WebSocket).\n");
  // One whose first segment holds one byte ("P" may begin "POST" or an HTTP/2 preface) is answered too.
  const socket = net.connect(secure.port, "127.0.0.1");
  socket.on("error", () => {});
  await new Promise((resolve) => socket.once("connect", resolve));
  let reply = "";
  socket.on("data", (d: Buffer) => (reply += d.toString()));
  const ended = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.write("P");
  await new Promise((r) => setTimeout(r, 50));
  socket.write(`OST /v3/${secure.key} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 0\r\n\r\n`);
  await ended;
  expect(reply).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*This port speaks TLS/);
  const answer = await postHttps(`/v3/${secure.key}`, '{"jsonrpc":"2.0","id":2,"method":"eth_chainId","params":[]}');
  expect(answer).toEqual({ status: 200, text: '{"jsonrpc":"2.0","id":2,"result":"0x7a69"}' });
});

it("a plaintext gRPC client (an insecure channel) on the TLS port gets UNAVAILABLE saying the port speaks TLS", async () => {
  // Found from outside: cleartext HTTP/2 went to the TLS server, which dropped it with no word (grpc-js: "No connection
  // established").
  const client = new grpc.Client(`127.0.0.1:${secure.port}`, grpc.credentials.createInsecure());
  try {
    const metadata = new grpc.Metadata();
    metadata.set("x-api-key", secure.key);
    const err = await new Promise<grpc.ServiceError | null>((resolve) =>
      client.makeUnaryRequest(`/${EthService.typeName}/ChainId`, (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(0), metadata, (e) => resolve(e)),
    );
    expect(err?.code).toBe(grpc.status.UNAVAILABLE);
    expect(err?.details).toContain("This port speaks TLS");
  } finally {
    client.close();
  }
  // A Connect client over h2c reads the same text (found from outside: connect-es said only "HTTP 400").
  const connect = createClient(EthService, createConnectTransport({ baseUrl: `http://127.0.0.1:${secure.port}`, httpVersion: "2" }));
  const connectErr = await connect.chainId({}).then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  expect([connectErr?.code, connectErr?.rawMessage]).toEqual([Code.Unavailable, expect.stringContaining("This port speaks TLS")]);
  // And a Connect GET (a read without side effects, ?connect=v1; found from outside: it got "HTTP 400").
  const connectGet = createClient(EthService, createConnectTransport({ baseUrl: `http://127.0.0.1:${secure.port}`, httpVersion: "2", useHttpGet: true }));
  const getErr = await connectGet.chainId({}).then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  expect([getErr?.code, getErr?.rawMessage]).toEqual([Code.Unavailable, expect.stringContaining("This port speaks TLS")]);
  // Every call on a reused connection, and Connect streams (found from outside: the second call on one h2c connection
  // got INTERNAL, REFUSED_STREAM; a Connect stream "HTTP 400").
  const grpcOverH2c = createClient(EthService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${secure.port}` }));
  for (let i = 0; i < 3; i++) {
    const again = await grpcOverH2c.chainId({}).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect([again?.code, again?.rawMessage], `call ${i}`).toEqual([Code.Unavailable, expect.stringContaining("This port speaks TLS")]);
  }
  const streamErr = await (async () => {
    try {
      for await (const _ of connect.subscribeNewHeads({}));
      return undefined;
    } catch (e) {
      return ConnectError.from(e);
    }
  })();
  expect([streamErr?.code, streamErr?.rawMessage]).toEqual([Code.Unavailable, expect.stringContaining("This port speaks TLS")]);
  // A native JSON-RPC call over h2c gets the plain 400, not a Connect error.
  const native = await new Promise<{ status: number | undefined; body: string }>((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${secure.port}`);
    session.on("error", reject);
    const req = session.request({ ":method": "POST", ":path": `/v3/${secure.key}`, "content-type": "application/json" });
    let status: number | undefined;
    let body = "";
    req.on("response", (h) => (status = h[":status"]));
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      session.close();
      resolve({ status, body });
    });
    req.end('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}');
  });
  expect(native).toEqual({ status: 400, body: "This port speaks TLS: call it with https:// (wss:// for WebSocket).\n" });
  // TLS callers are served as before.
  const answer = await postHttps(`/v3/${secure.key}`, '{"jsonrpc":"2.0","id":3,"method":"eth_chainId","params":[]}');
  expect(answer).toEqual({ status: 200, text: '{"jsonrpc":"2.0","id":3,"result":"0x7a69"}' });
});

it("Connect and gRPC-Web clients over cleartext HTTP/1.1 on the TLS port (connect-web's transport in browsers) get UNAVAILABLE saying the port speaks TLS", async () => {
  // Found from outside: over HTTP/1.1 they said only "HTTP 400" (h2c was answered in words already).
  const base = `http://127.0.0.1:${secure.port}`;
  const transports = {
    "Connect POST": createConnectTransport({ baseUrl: base, httpVersion: "1.1" }),
    "Connect GET": createConnectTransport({ baseUrl: base, httpVersion: "1.1", useHttpGet: true }),
    "gRPC-Web": createGrpcWebTransport({ baseUrl: base, httpVersion: "1.1" }),
  };
  for (const [name, transport] of Object.entries(transports)) {
    const err = await createClient(EthService, transport)
      .chainId({})
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect([err?.code, err?.rawMessage], name).toEqual([Code.Unavailable, "This port speaks TLS: call it with https:// (wss:// for WebSocket)."]);
  }
  // A large request is read before the answer: answered while still sending, the client read EPIPE (found from outside).
  const input = new Uint8Array(1 << 20);
  for (const [name, transport] of Object.entries({ "Connect POST": transports["Connect POST"], "gRPC-Web": transports["gRPC-Web"] })) {
    for (let i = 0; i < 5; i++) {
      const err = await createClient(EthService, transport)
        .call({ transaction: { input }, block: { kind: { case: "tag", value: BlockTag.LATEST } } })
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect([err?.code, err?.rawMessage], `${name}, 1 MiB, call ${i}`).toEqual([Code.Unavailable, "This port speaks TLS: call it with https:// (wss:// for WebSocket)."]);
    }
  }
  const streamErr = await (async () => {
    try {
      for await (const _ of createClient(EthService, transports["Connect POST"]).subscribeNewHeads({}));
      return undefined;
    } catch (e) {
      return ConnectError.from(e);
    }
  })();
  expect([streamErr?.code, streamErr?.rawMessage]).toEqual([Code.Unavailable, expect.stringContaining("This port speaks TLS")]);
  // A WebSocket upgrade gets the plain 400.
  const socket = net.connect(secure.port, "127.0.0.1");
  socket.on("error", () => {});
  let reply = "";
  socket.on("data", (d: Buffer) => (reply += d.toString()));
  const ended = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.write(`GET /ws/v3/${secure.key} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
  await ended;
  expect(reply).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*This port speaks TLS/);
  const answer = await postHttps(`/v3/${secure.key}`, '{"jsonrpc":"2.0","id":4,"method":"eth_chainId","params":[]}');
  expect(answer).toEqual({ status: 200, text: '{"jsonrpc":"2.0","id":4,"result":"0x7a69"}' });
});

it("an HTTPS request asking for an upgrade other than WebSocket (curl --http2's h2c) is served as a plain request", async () => {
  // Found from outside: on the TLS port it got an empty reply (curl: "Empty reply from server"), where the plain port served it.
  const body = '{"jsonrpc":"2.0","id":3,"method":"eth_chainId","params":[]}';
  const socket = tls.connect({ host: "127.0.0.1", port: secure.port, servername: "localhost", ca: cert, ALPNProtocols: ["http/1.1"] });
  socket.on("error", () => {});
  await new Promise((resolve) => socket.once("secureConnect", resolve));
  let reply = "";
  socket.on("data", (d: Buffer) => (reply += d.toString()));
  const ended = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.write(
    `POST /v3/${secure.key} HTTP/1.1\r\nhost: localhost\r\nconnection: Upgrade, HTTP2-Settings, close\r\nupgrade: h2c\r\n` +
      `http2-settings: AAMAAABkAAQCAAAAAAIAAAAA\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
  );
  await Promise.race([ended, new Promise((r) => setTimeout(r, 5000))]);
  socket.destroy();
  expect(reply).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  expect(reply.endsWith('{"jsonrpc":"2.0","id":3,"result":"0x7a69"}')).toBe(true);
});

it("a connection to the TLS port that has sent nothing does not hold the drain past the calls in flight", async () => {
  // Found from outside: such a connection was not among those the drain closes, and the stop waited for its headers
  // deadline (10 s by default; 30 s with headersTimeoutMs: 30000), past drainMs.
  const own = await startNodegate({ upstreamUrl: anvil.url, config: { tls: tlsFiles } });
  const socket = net.connect(own.port, "127.0.0.1");
  socket.on("error", () => {});
  await new Promise((resolve) => socket.once("connect", resolve));
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  const drained = own.server.close(60_000).then(() => "closed");
  expect(await Promise.race([drained, new Promise((r) => setTimeout(() => r("still draining after 5 s"), 5000))])).toBe("closed");
  await closed;
  await own.close();
});

it("a cleartext HTTP/2 connection to the TLS port (answered in words) does not hold the drain either", async () => {
  // Found from outside: handed to the server that answers it, it was no longer among those the drain closes, and the
  // stop waited 10 s for it.
  const own = await startNodegate({ upstreamUrl: anvil.url, config: { tls: tlsFiles } });
  const socket = net.connect(own.port, "127.0.0.1");
  socket.on("error", () => {});
  await new Promise((resolve) => socket.once("connect", resolve));
  socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  // Answered (its SETTINGS) shows the connection was handed on.
  await new Promise<void>((resolve) => socket.once("data", () => resolve()));
  const drained = own.server.close(60_000).then(() => "closed");
  expect(await Promise.race([drained, new Promise((r) => setTimeout(() => r("still draining after 5 s"), 5000))])).toBe("closed");
  await closed;
  await own.close();
});

it("a connection part way through its TLS handshake, or after a lone P, does not hold the drain past the calls in flight", async () => {
  // Seen: one that sent the start of a ClientHello was handed to TLS, and the stop waited for its handshake deadline.
  const own = await startNodegate({ upstreamUrl: anvil.url, config: { tls: tlsFiles } });
  const socket = net.connect(own.port, "127.0.0.1");
  socket.on("error", () => {});
  await new Promise((resolve) => socket.once("connect", resolve));
  // A handshake record header announcing 512 bytes, and 4 of them.
  socket.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc]));
  // And one that sent a lone "P", which nodegate waits on to tell "POST" from an HTTP/2 preface.
  const loneP = net.connect(own.port, "127.0.0.1");
  loneP.on("error", () => {});
  await new Promise((resolve) => loneP.once("connect", resolve));
  loneP.write("P");
  const loneClosed = new Promise<void>((resolve) => loneP.once("close", () => resolve()));
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  // The listener has handed the socket on once the bytes were read; a call answered after them shows they were.
  expect((await postTo(own, '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}')).status).toBe(200);
  const drained = own.server.close(60_000).then(() => "closed");
  expect(await Promise.race([drained, new Promise((r) => setTimeout(() => r("still draining after 5 s"), 5000))])).toBe("closed");
  await closed;
  await loneClosed;
  await own.close();
});
