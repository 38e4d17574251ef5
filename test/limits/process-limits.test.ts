/**
 * Limits that protect the process from its clients, with small configured
 * values so each shows quickly: slow-loris and silent connections on
 * HTTP/1.1 and HTTP/2 are cut off at the headers deadline, a body that
 * trickles at the request deadline, idle connections at the idle deadline; a
 * body sent without a length is still held to the size limit; one key may
 * hold only so many WebSocket connections, requests in progress and
 * subscriptions. Each refusal is a clear error, and nodegate keeps serving.
 * (The body-size limit with a length, the batch size and the WebSocket
 * message size are tested in test/jsonrpc and test/ws.)
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { acquireSubscription, KeyQuotas } from "../../src/auth/key-quotas.js";
import { ApiKeyStore } from "../../src/auth/api-keys.js";
import { ConfigError, DEFAULT_LIMITS, DEFAULT_PLANS, DEFAULT_WEBSOCKET } from "../../src/config/config.js";
import { loadConfig } from "../../src/config/load.js";
import { GatewayError } from "../../src/errors/gateway-error.js";
import { connectClient } from "../support/grpc-clients.js";
import { connectErrorOf, jsonRpcErrorOfConnect } from "../support/grpc-status.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";
import { openWsCaller, type WsCaller } from "../support/ws-calls.js";
import WebSocket from "ws";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { testTempDir } from "../support/temp-dir.js";

const HEADERS_MS = 400;
const REQUEST_MS = 800;
const IDLE_MS = 600;
const KEY = "limits-key-3c1d77aa";
const OTHER_KEY = "limits-other-key-90be";

let upstream: ProgrammableUpstream;
let ng: TestNodegate;
/** Upstream answers to eth_blockNumber wait this long, so requests stay in progress. */
let slowMs = 0;

beforeAll(async () => {
  upstream = await startProgrammableUpstream((r) => {
    if (r.method === "eth_blockNumber" && slowMs > 0) return { delayMs: slowMs, then: { result: "0x10" } };
    // A 1 MB answer for one address (slow readers), 100 kB for the others.
    if (r.method === "eth_getCode") return { result: `0x${"ab".repeat(JSON.stringify(r.params).includes("ff".repeat(20)) ? 1_000_000 : 50_000)}` };
    return { result: r.method === "eth_chainId" ? "0x7a69" : "0x10" };
  });
  ng = await startNodegate({
    upstreamUrl: upstream.url,
    keys: [
      { key: KEY, plan: "custom" },
      { key: OTHER_KEY, plan: "custom" },
    ],
    config: {
      limits: {
        ...DEFAULT_LIMITS,
        maxBodyBytes: 4096,
        headersTimeoutMs: HEADERS_MS,
        requestTimeoutMs: REQUEST_MS,
        idleTimeoutMs: IDLE_MS,
        maxWsConnectionsPerKey: 2,
        maxConcurrentRequestsPerKey: 3,
        maxSubscriptionsPerKey: 2,
      },
    },
  });
});
afterAll(async () => {
  await ng?.close();
  await upstream?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A raw TCP connection to nodegate that records what it receives and when the server closes it. */
async function rawConnection(): Promise<{ socket: net.Socket; received: () => string; closed: Promise<void>; isClosed: () => boolean }> {
  const socket = net.connect(ng.port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  let text = "";
  let closedFlag = false;
  socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
  socket.on("error", () => {});
  const closed = new Promise<void>((resolve) =>
    socket.once("close", () => {
      closedFlag = true;
      resolve();
    }),
  );
  return { socket, received: () => text, closed, isClosed: () => closedFlag };
}

/** Sends `text` one byte every `everyMs` until the server closes the connection; resolves with how much it got out. */
async function trickle(conn: Awaited<ReturnType<typeof rawConnection>>, text: string, everyMs: number): Promise<number> {
  let sent = 0;
  while (sent < text.length && !conn.isClosed()) {
    conn.socket.write(text[sent] as string);
    sent++;
    await Promise.race([sleep(everyMs), conn.closed]);
  }
  return sent;
}

async function stillServing(): Promise<void> {
  expect((await post(ng.rpcUrl.replace(ng.key, KEY), rpc("eth_chainId"))).json.result).toBe("0x7a69");
}

describe("slow and silent clients (HTTP/1.1)", () => {
  it("a slow-loris client sending its headers a byte at a time is cut off at the headers deadline, with 408", async () => {
    const conn = await rawConnection();
    const head = `POST /v3/${KEY} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Padding: ${"x".repeat(200)}\r\n\r\n`;
    const sent = await trickle(conn, head, 50);
    await conn.closed;
    // Cut off long before the whole head went out (it would take about 14 s at this pace).
    expect(sent).toBeLessThan(head.length / 2);
    expect(conn.received()).toMatch(/^HTTP\/1\.1 408 /);
    await stillServing();
  });

  it("a request whose first bytes arrive one by one ('P', 'O', ...) is still read as HTTP/1.1 and served in time", async () => {
    const conn = await rawConnection();
    const body = JSON.stringify(rpc("eth_chainId"));
    const request = `POST /v3/${KEY} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
    for (const part of [request.slice(0, 1), request.slice(1, 2), request.slice(2)]) {
      conn.socket.write(part);
      await sleep(30);
    }
    await conn.closed;
    expect(conn.received()).toMatch(/^HTTP\/1\.1 200 [\s\S]*"result":"0x7a69"/);
  });

  it("a client that resets its connection before its protocol is known (nothing sent, or a lone 'P') leaves the process serving", async () => {
    // Found on review: the connection's socket had no error listener until it was handed to the HTTP/1.1 or HTTP/2
    // server, so a reset then (a load balancer's TCP health check, a port scan) was thrown and ended the process.
    for (const first of ["", "P"]) {
      const conn = await rawConnection();
      if (first !== "") conn.socket.write(first);
      await sleep(30);
      conn.socket.resetAndDestroy();
      await sleep(30);
      await stillServing();
    }
  });

  it("a client that connects and sends nothing is closed at the headers deadline", async () => {
    const conn = await rawConnection();
    await sleep(HEADERS_MS / 2);
    expect(conn.isClosed()).toBe(false);
    await conn.closed;
    expect(conn.received()).toBe("");
    await stillServing();
  });

  it("a body that trickles is cut off at the request deadline, with 408", async () => {
    const conn = await rawConnection();
    const body = JSON.stringify(rpc("eth_chainId"));
    conn.socket.write(`POST /v3/${KEY} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nx-request-id: trickled-native\r\nContent-Length: ${body.length}\r\n\r\n`);
    const sent = await trickle(conn, body, 100);
    await conn.closed;
    expect(sent).toBeLessThan(body.length);
    expect(conn.received()).toMatch(/^HTTP\/1\.1 408 /);
    // Found from outside: logged 499 Canceled, as if the client had left, though it stayed and was answered 408.
    await expect.poll(() => ng.logs.find((l) => l.requestId === "trickled-native")).toMatchObject({ status: 408, outcome: "DeadlineExceeded" });
    await stillServing();
  });

  it("a Connect call whose body trickles is cut off with 408 and logged DeadlineExceeded, not Canceled", async () => {
    const conn = await rawConnection();
    conn.socket.write(`POST /nodegate.eth.v1.EthService/ChainId HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/proto\r\nx-api-key: ${KEY}\r\nx-request-id: trickled-connect\r\nContent-Length: 40\r\n\r\n`);
    await trickle(conn, "\n".repeat(40), 100);
    await conn.closed;
    expect(conn.received()).toMatch(/^HTTP\/1\.1 408 /);
    await expect.poll(() => ng.logs.find((l) => l.requestId === "trickled-connect")?.status).toBe("DeadlineExceeded");
  });

  it("a chunked body Node cannot read is logged with the 400 Node answered, not as a client that left", async () => {
    const conn = await rawConnection();
    conn.socket.write(`POST /v3/${KEY} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nx-request-id: bad-chunk\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`);
    await conn.closed;
    expect(conn.received()).toMatch(/^HTTP\/1\.1 400 /);
    await expect.poll(() => ng.logs.find((l) => l.requestId === "bad-chunk")).toMatchObject({ status: 400, outcome: "-32600" });
  });

  it("a keep-alive connection left idle after its response is closed at the idle deadline", async () => {
    const conn = await rawConnection();
    const body = JSON.stringify(rpc("eth_chainId"));
    conn.socket.write(`POST /v3/${KEY} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await sleep(IDLE_MS / 2);
    expect(conn.received()).toMatch(/^HTTP\/1\.1 200 [\s\S]*"result":"0x7a69"/);
    expect(conn.isClosed()).toBe(false);
    await conn.closed;
  });

  it("a body sent without a length (chunked) is still held to the size limit: 413, and the connection serves on", async () => {
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({ host: "127.0.0.1", port: ng.port, path: `/v3/${KEY}`, method: "POST", headers: { "content-type": "application/json" } }, (r) => {
        let body = "";
        r.on("data", (d: Buffer) => (body += d.toString()));
        r.on("end", () => resolve({ status: r.statusCode ?? 0, body }));
      });
      req.on("error", reject);
      for (let i = 0; i < 10; i++) req.write(`{"pad":"${"a".repeat(1000)}"}`);
      req.end();
    });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "invalid request: request body exceeds 4096 bytes" } });
    await stillServing();
  });

  it("a body that never ends is answered 413 once it passes the limit, not 408 at the request deadline (HTTP/1.1 chunked, HTTP/2 without a length)", async () => {
    // Found from outside (h97): an HTTP/2 stream sending for good was read to the request deadline (30 s, 9 GiB) and
    // answered 408. The sender here keeps writing until it is answered.
    const piece = Buffer.alloc(1024, 32);
    const overHttp1 = await new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
      const req = http.request({ host: "127.0.0.1", port: ng.port, path: `/v3/${KEY}`, method: "POST", headers: { "content-type": "application/json" } }, (r) => {
        answered = true;
        r.resume();
        resolve({ status: r.statusCode ?? 0, connection: r.headers.connection });
        req.destroy();
      });
      let answered = false;
      req.on("error", (err) => (answered ? undefined : reject(err)));
      const pump = (): void => {
        if (!answered && !req.destroyed) req.write(piece, () => setImmediate(pump));
      };
      pump();
    });
    expect(overHttp1).toEqual({ status: 413, connection: "close" });
    const session = http2.connect(`http://127.0.0.1:${ng.port}`);
    session.on("error", () => {});
    try {
      const overHttp2 = await new Promise<{ status: unknown; body: string }>((resolve) => {
        const stream = session.request({ ":method": "POST", ":path": `/v3/${KEY}`, "content-type": "application/json" });
        stream.on("error", () => {});
        let status: unknown;
        let body = "";
        stream.on("response", (head) => (status = head[":status"]));
        stream.on("data", (d: Buffer) => (body += d.toString()));
        stream.on("close", () => resolve({ status, body }));
        const pump = (): void => {
          if (status === undefined && !stream.destroyed) stream.write(piece, () => setImmediate(pump));
        };
        pump();
      });
      expect(overHttp2.status).toBe(413);
      expect(JSON.parse(overHttp2.body)).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "invalid request: request body exceeds 4096 bytes" } });
      expect(JSON.parse(await chainIdOver(session))).toMatchObject({ result: "0x7a69" }); // the connection serves on
    } finally {
      session.destroy();
    }
  });
});

/** A whole native eth_chainId request on an HTTP/2 session; the answer's text. */
function chainIdOver(session: http2.ClientHttp2Session): Promise<string> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": "POST", ":path": `/v3/${KEY}`, "content-type": "application/json" });
    let text = "";
    stream.on("data", (d: Buffer) => (text += d.toString()));
    stream.on("end", () => resolve(text));
    stream.on("error", reject);
    stream.end(JSON.stringify(rpc("eth_chainId")));
  });
}

describe("slow and silent clients (HTTP/2)", () => {
  it("a client trickling the connection preface is cut off at the headers deadline", async () => {
    const conn = await rawConnection();
    const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".padEnd(200, "\0");
    const sent = await trickle(conn, preface, 50);
    await conn.closed;
    expect(sent).toBeLessThan(preface.length / 2);
    await stillServing();
  });

  it("a session that never opens a stream, or goes idle, is told to go away at the idle deadline, not the headers one", async () => {
    // Found from outside: grpc-go dials ahead of its first call; closed at the headers deadline, an unused channel
    // reconnected every 10 s for as long as it stayed unused.
    const silent = http2.connect(ng.url);
    silent.on("error", () => {});
    const silentClosed = new Promise<void>((resolve) => silent.once("close", () => resolve()));
    let silentGoaway = false;
    silent.once("goaway", () => (silentGoaway = true));
    await sleep(HEADERS_MS + 100);
    expect(silent.closed || silent.destroyed).toBe(false);
    await silentClosed;
    expect(silentGoaway).toBe(true);

    const idle = http2.connect(ng.url);
    idle.on("error", () => {});
    const idleClosed = new Promise<void>((resolve) => idle.once("close", () => resolve()));
    let goaway = false;
    idle.once("goaway", () => (goaway = true));
    expect(JSON.parse(await chainIdOver(idle)).result).toBe("0x7a69");
    // Past the headers deadline, a session that has had a stream is not cut off for that...
    await sleep(HEADERS_MS + 100);
    expect(idle.closed || idle.destroyed).toBe(false);
    // ...but it is told to go away (GOAWAY) once idle for the idle deadline.
    await idleClosed;
    expect(goaway).toBe(true);
    await stillServing();
  });

  it("streams whose body trickles are cut off at the request deadline (408; gRPC: DEADLINE_EXCEEDED), on the native and gRPC paths, and the session serves on", async () => {
    // Found from outside: a session with open streams was left alone, so trickled bodies were never cut off.
    const session = http2.connect(ng.url);
    session.on("error", () => {});
    const trickled = (headers: http2.OutgoingHttpHeaders) => {
      const stream = session.request({ ":method": "POST", ...headers });
      stream.on("error", () => {});
      const beat = setInterval(() => stream.write("{"), 100);
      return new Promise<{ status: number | undefined; grpcStatus: unknown; closedAfterMs: number }>((resolve) => {
        const started = performance.now();
        let status: number | undefined;
        let grpcStatus: unknown;
        stream.on("response", (h) => {
          status = Number(h[":status"]);
          grpcStatus = h["grpc-status"];
        });
        stream.on("data", () => {});
        stream.once("close", () => {
          clearInterval(beat);
          resolve({ status, grpcStatus, closedAfterMs: performance.now() - started });
        });
      });
    };
    const native = trickled({ ":path": `/v3/${KEY}`, "content-type": "application/json" });
    const grpcCall = trickled({ ":path": "/nodegate.eth.v1.EthService/ChainId", "content-type": "application/grpc", "x-api-key": KEY, "x-request-id": "trickled-grpc" });
    // A stream whose request arrived whole, in the same session, is not touched.
    expect(JSON.parse(await chainIdOver(session)).result).toBe("0x7a69");
    const [n, g] = await Promise.all([native, grpcCall]);
    expect(n.status).toBe(408);
    // A gRPC caller hears it in gRPC's terms: DEADLINE_EXCEEDED in a trailers-only answer.
    expect(g.status).toBe(200);
    expect(g.grpcStatus).toBe("4");
    // Found from outside: the log said InvalidArgument ("incomplete envelope"), not what the client was told.
    await expect.poll(() => ng.logs.find((l) => l.requestId === "trickled-grpc")?.status).toBe("DeadlineExceeded");
    expect(n.closedAfterMs).toBeGreaterThanOrEqual(REQUEST_MS - 50);
    expect(session.closed || session.destroyed).toBe(false);
    session.close();
    await stillServing();
  });
});

describe("HTTP/2 answers a client does not take", () => {
  /** A native eth_getCode (a 100 kB answer) on `session`; how its stream ended. */
  const unread = (session: http2.ClientHttp2Session) => {
    const stream = session.request({ ":method": "POST", ":path": `/v3/${KEY}`, "content-type": "application/json" });
    stream.on("error", () => {});
    stream.end(JSON.stringify(rpc("eth_getCode", [`0x${"12".repeat(20)}`, "latest"])));
    return new Promise<{ status: number | undefined; rstCode: number }>((resolve) => {
      let status: number | undefined;
      stream.on("response", (h) => (status = Number(h[":status"])));
      stream.once("close", () => resolve({ status, rstCode: stream.rstCode ?? -1 }));
    });
  };

  /** One call on `session` read in bursts: 256 KiB, then a pause of `pauseMs`; how much arrived and how the stream ended. */
  const readSlowly = (session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body: Buffer | string, pauseMs: number) =>
    new Promise<{ bytes: number; rstCode: number; ms: number }>((resolve) => {
      const started = performance.now();
      const stream = session.request({ ":method": "POST", ...headers });
      stream.on("error", () => {});
      let bytes = 0;
      let sincePause = 0;
      stream.on("data", (d: Buffer) => {
        bytes += d.length;
        sincePause += d.length;
        if (sincePause < 256 * 1024) return;
        sincePause = 0;
        stream.pause();
        setTimeout(() => stream.resume(), pauseMs);
      });
      stream.once("close", () => resolve({ bytes, rstCode: stream.rstCode ?? -1, ms: performance.now() - started }));
      stream.end(body);
    });

  it("a session whose client takes nothing of its answers (a window it never opens) is ended at the request deadline; others are served", async () => {
    // Found from outside: such answers were held for good, and with enough streams the process grew without bound.
    const session = http2.connect(ng.url, { settings: { initialWindowSize: 0 } });
    session.on("error", () => {});
    const goaway = new Promise<number>((resolve) => session.once("goaway", (code: number) => resolve(code)));
    const started = performance.now();
    const ended = await unread(session);
    expect(ended.status).toBe(200);
    expect(await goaway).toBe(http2.constants.NGHTTP2_CANCEL);
    expect(performance.now() - started).toBeGreaterThanOrEqual(REQUEST_MS - 50);
    await stillServing();
  });

  it("a typed stream on such a session ends with it, and nodegate_open_streams comes back down", async () => {
    // Found from outside: streams reset under unsent writes left their handlers waiting, and the gauge one higher, for good.
    const openStreams = async () => (await ng.gateway.metrics.openStreams.get()).values[0]?.value ?? 0;
    const before = await openStreams();
    const session = http2.connect(ng.url, { settings: { initialWindowSize: 0 } });
    session.on("error", () => {});
    const closed = new Promise<void>((resolve) => session.once("close", () => resolve()));
    const watch = session.request({ ":method": "POST", ":path": "/grpc.health.v1.Health/Watch", "content-type": "application/grpc", te: "trailers" });
    watch.on("error", () => {});
    watch.end(Buffer.from([0, 0, 0, 0, 0]));
    for (let i = 0; i < 100 && (await openStreams()) === before; i++) await sleep(10);
    expect(await openStreams()).toBe(before + 1);
    await closed;
    for (let i = 0; i < 100 && (await openStreams()) !== before; i++) await sleep(20);
    expect(await openStreams()).toBe(before);
  });

  it("a typed stream whose client leaves while an answer waits unsent ends, and nodegate_open_streams comes back down", async () => {
    // Found from outside: Connect waited for a 'drain' a closed stream never emits, so such calls never ended.
    const openStreams = async () => (await ng.gateway.metrics.openStreams.get()).values[0]?.value ?? 0;
    const before = await openStreams();
    const session = http2.connect(ng.url, { settings: { initialWindowSize: 0 } });
    session.on("error", () => {});
    const watch = session.request({ ":method": "POST", ":path": "/grpc.health.v1.Health/Watch", "content-type": "application/grpc", te: "trailers" });
    watch.on("error", () => {});
    watch.end(Buffer.from([0, 0, 0, 0, 0]));
    for (let i = 0; i < 100 && (await openStreams()) === before; i++) await sleep(10);
    expect(await openStreams()).toBe(before + 1);
    await sleep(100);
    session.destroy();
    for (let i = 0; i < 100 && (await openStreams()) !== before; i++) await sleep(20);
    expect(await openStreams()).toBe(before);
  });

  it("PINGs alone do not keep such a session alive (what a connection writes for them is not taking answers)", async () => {
    // Found from outside: PING acknowledgements counted as progress, so a client pinging every 500 ms held its answers for good.
    const session = http2.connect(ng.url, { settings: { initialWindowSize: 0 } });
    session.on("error", () => {});
    const goaway = new Promise<number>((resolve) => session.once("goaway", (code: number) => resolve(code)));
    const pinging = setInterval(() => session.ping(() => {}), 100);
    try {
      await unread(session);
      expect(await goaway).toBe(http2.constants.NGHTTP2_CANCEL);
    } finally {
      clearInterval(pinging);
    }
  });

  it("one answer larger than maxWsUnreadBytes, read slowly, arrives whole (the cap counts what Node buffers, not the answer itself)", async () => {
    // Found from outside: a 72 MB answer behind a 5 MB/s link was cut off a second in.
    const own = await startNodegate({ upstreamUrl: upstream.url, keys: [KEY], config: { limits: { ...DEFAULT_LIMITS, maxWsUnreadBytes: 256 * 1024 } } });
    try {
      const session = http2.connect(own.url, { settings: { initialWindowSize: 128 * 1024 } });
      session.on("error", () => {});
      const { bytes, rstCode } = await readSlowly(session, { ":path": `/v3/${KEY}`, "content-type": "application/json" }, JSON.stringify(rpc("eth_getCode", [`0x${"ff".repeat(20)}`, "latest"])), 300);
      expect(rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
      expect(bytes).toBeGreaterThan(2_000_000);
      session.close();
    } finally {
      await own.close();
    }
  });

  it("a session holding more unsent answers than maxWsUnreadBytes is ended with GOAWAY ENHANCE_YOUR_CALM", async () => {
    const own = await startNodegate({ upstreamUrl: upstream.url, keys: [KEY], config: { limits: { ...DEFAULT_LIMITS, maxWsUnreadBytes: 256 * 1024 } } });
    try {
      const session = http2.connect(own.url, { settings: { initialWindowSize: 0 } });
      session.on("error", () => {});
      const goaway = new Promise<number>((resolve) => session.once("goaway", (code: number) => resolve(code)));
      const streams = Array.from({ length: 6 }, () => unread(session));
      expect(await goaway).toBe(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
      await Promise.all(streams);
      expect((await post(own.rpcUrl, rpc("eth_chainId"))).json.result).toBe("0x7a69");
    } finally {
      await own.close();
    }
  });

  it("slow readers are not cut off: a 2 MB answer read in small bursts for longer than the request deadline arrives whole, on the native and gRPC lanes", async () => {
    // Found from outside: the first version of this guard judged each stream by its buffer, which does not move while a
    // piece is on its way, and reset clients that were reading all along.
    const session = http2.connect(ng.url, { settings: { initialWindowSize: 128 * 1024 } });
    session.on("error", () => {});
    const slowly = (headers: http2.OutgoingHttpHeaders, body: Buffer | string) => readSlowly(session, headers, body, 150);
    const address = `0x${"ff".repeat(20)}`;
    const grpcBody = Buffer.from(toBinary(EthService.method.getCode.input, create(EthService.method.getCode.input, { address: Buffer.from("ff".repeat(20), "hex") })));
    const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), grpcBody]);
    frame.writeUInt32BE(grpcBody.length, 1);
    const [native, grpcLane] = await Promise.all([
      slowly({ ":path": `/v3/${KEY}`, "content-type": "application/json" }, JSON.stringify(rpc("eth_getCode", [address, "latest"]))),
      slowly({ ":path": "/nodegate.eth.v1.EthService/GetCode", "content-type": "application/grpc", "x-api-key": KEY, te: "trailers" }, frame),
    ]);
    expect(native.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(native.bytes).toBeGreaterThan(2_000_000);
    expect(grpcLane.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(grpcLane.bytes).toBeGreaterThan(1_000_000);
    // Longer than the request deadline in all, with no pause as long as it.
    expect(Math.max(native.ms, grpcLane.ms)).toBeGreaterThan(REQUEST_MS);
    session.close();
  });

  it("a gRPC call whose client cancels is logged Canceled, though Node's client ends the body before its reset", async () => {
    // Found from outside: a cancel part way through the message was logged InvalidArgument ("incomplete envelope"),
    // and one after a whole message but before the end of the body was logged ok, an answer nobody read.
    const session = http2.connect(ng.url);
    session.on("error", () => {});
    const cases = [
      ["cancel-mid-message", Buffer.from([0, 0, 0, 0]), 0],
      ["cancel-before-end", Buffer.alloc(5), 0],
      ["cancel-before-end-slow-node", Buffer.alloc(5), 300],
    ] as const;
    try {
      for (const [requestId, body, nodeMs] of cases) {
        slowMs = nodeMs;
        const stream = session.request({ ":method": "POST", ":path": "/nodegate.eth.v1.EthService/BlockNumber", "content-type": "application/grpc", "x-api-key": KEY, "x-request-id": requestId });
        stream.on("error", () => {});
        stream.write(body);
        await sleep(100);
        stream.close(http2.constants.NGHTTP2_CANCEL);
        await expect.poll(() => ng.logs.find((l) => l.requestId === requestId)?.status, { timeout: 5000 }).toBe("Canceled");
      }
    } finally {
      slowMs = 0;
      session.close();
    }
    await stillServing();
  });

  it("a stream answered while its client is still sending (an early error) is reset with NO_ERROR, so the client stops", async () => {
    const session = http2.connect(ng.url);
    session.on("error", () => {});
    const stream = session.request({ ":method": "POST", ":path": "/nodegate.jsonrpc.v1.JsonRpcService/Call", "content-type": "application/grpc", "x-api-key": KEY, te: "trailers" });
    stream.on("error", () => {});
    let trailers: http2.IncomingHttpHeaders | undefined;
    stream.on("trailers", (t) => (trailers = t));
    stream.on("data", () => {});
    // More than the body limit (4096 bytes), never ended: the answer (RESOURCE_EXHAUSTED) comes first.
    stream.write(Buffer.alloc(16 * 1024));
    const rstCode = await new Promise<number>((resolve) => stream.once("close", () => resolve(stream.rstCode ?? -1)));
    expect(rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(trailers?.["grpc-status"] ?? stream.sentHeaders).toBeDefined();
    session.close();
    await stillServing();
  });
});

/** Tries a WebSocket upgrade; the refusal's status, headers and body, or "open" (and the caller). */
async function upgrade(key: string): Promise<{ status: number; retryAfter: string | undefined; body: string } | WsCaller> {
  try {
    return await openWsCaller(`ws://127.0.0.1:${ng.port}/ws/v3/${key}`);
  } catch {
    return new Promise((resolve, reject) => {
      const req = http.request({
        host: "127.0.0.1",
        port: ng.port,
        path: `/ws/v3/${key}`,
        headers: { connection: "Upgrade", upgrade: "websocket", "sec-websocket-version": "13", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==" },
      });
      req.on("upgrade", (_res, socket) => {
        socket.destroy();
        reject(new Error("the second attempt was accepted"));
      });
      req.on("response", (res) => {
        let body = "";
        res.on("data", (d: Buffer) => (body += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers["retry-after"], body }));
      });
      req.on("error", reject);
      req.end();
    });
  }
}

describe("per-key quotas", () => {
  it("WebSocket connections: the one over the limit is refused with 429 and -32005; closing one makes room; other keys are not affected", async () => {
    const first = await openWsCaller(`ws://127.0.0.1:${ng.port}/ws/v3/${KEY}`);
    const second = await openWsCaller(`ws://127.0.0.1:${ng.port}/ws/v3/${KEY}`);
    const third = await upgrade(KEY);
    expect("status" in third && third).toEqual({
      status: 429,
      retryAfter: "1",
      body: JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32005, message: "too many connections for this key", data: { limit: 2 } } }),
    });
    const other = await openWsCaller(`ws://127.0.0.1:${ng.port}/ws/v3/${OTHER_KEY}`);
    expect((await other.call("eth_chainId", [])).result).toBe("0x7a69");
    expect((await second.call("eth_chainId", [])).result).toBe("0x7a69");
    await first.close();
    const again = await upgrade(KEY);
    expect("call" in again).toBe(true);
    for (const c of [second, other, again as WsCaller]) await c.close();
  });

  it("requests in progress: over the limit, -32005 on every door (HTTP 429); when they finish, the key is served again", async () => {
    slowMs = 500;
    try {
      const url = `${ng.url}/v3/${KEY}`;
      const inProgress = [post(url, rpc("eth_blockNumber", [], 1)), post(url, rpc("eth_blockNumber", [], 2)), post(url, rpc("eth_blockNumber", [], 3))];
      for (let i = 0; i < 100 && upstream.count("eth_blockNumber") < 3; i++) await sleep(10);
      const native = await post(url, rpc("eth_chainId", [], 4));
      expect(native.status).toBe(429);
      expect(native.headers.get("retry-after")).toBe("1");
      expect(native.json).toEqual({ jsonrpc: "2.0", id: 4, error: { code: -32005, message: "too many concurrent requests for this key", data: { limit: 3 } } });
      const typed = await connectErrorOf(connectClient(ng.url, EthService, KEY, "grpc").chainId({}));
      expect(typed.code).toBe(Code.ResourceExhausted);
      expect(jsonRpcErrorOfConnect(typed)).toMatchObject({ code: -32005n, message: "too many concurrent requests for this key" });
      // Another key is not held back by this one.
      expect((await post(`${ng.url}/v3/${OTHER_KEY}`, rpc("eth_chainId"))).json.result).toBe("0x7a69");
      expect((await Promise.all(inProgress)).map((r) => r.json.result)).toEqual(["0x10", "0x10", "0x10"]);
      expect((await post(url, rpc("eth_chainId"))).json.result).toBe("0x7a69");
    } finally {
      slowMs = 0;
    }
  });

  it("subscriptions: the check a subscription takes refuses the one over the limit, and a release makes room", () => {
    const quotas = new KeyQuotas({ ...DEFAULT_LIMITS, maxSubscriptionsPerKey: 2 });
    const [key, other] = ["sub-key-1234567", "sub-key-7654321"].map((k) => new ApiKeyStore([{ key: k, plan: "core" }], DEFAULT_PLANS).lookup(k)) as [never, never];
    const first = acquireSubscription(quotas, key);
    acquireSubscription(quotas, key);
    const refused = (() => {
      try {
        acquireSubscription(quotas, key);
      } catch (err) {
        return err;
      }
      return undefined;
    })();
    expect(refused).toBeInstanceOf(GatewayError);
    expect(refused).toMatchObject({ code: -32005, message: "too many subscriptions for this key", grpcCode: Code.ResourceExhausted, httpStatus: 429 });
    expect(acquireSubscription(quotas, other)).toBeTypeOf("function");
    first();
    first(); // a second release gives nothing more back
    expect(quotas.held(key, "subscriptions")).toBe(1);
    expect(acquireSubscription(quotas, key)).toBeTypeOf("function");
    expect(quotas.held(key, "subscriptions")).toBe(2);
  });
});

describe("a WebSocket client that asks but does not read", () => {
  it("is disconnected once its unread answers pass the limit; others are served", async () => {
    // Its own nodegate: the default quotas, so every answer is a large one.
    const own = await startNodegate({ upstreamUrl: upstream.url, keys: [KEY], config: { limits: { ...DEFAULT_LIMITS, maxWsUnreadBytes: 256 * 1024 } } });
    const reader = await openWsCaller(`ws://127.0.0.1:${own.port}/ws/v3/${KEY}`);
    const hog = new WebSocket(`ws://127.0.0.1:${own.port}/ws/v3/${KEY}`, { perMessageDeflate: false });
    hog.on("error", () => {});
    await new Promise((resolve) => hog.once("open", resolve));
    const open = async () => (await own.gateway.metrics.openWebSockets.get()).values[0]?.value;
    expect(await open()).toBe(2);
    hog.pause(); // reads nothing more
    const request = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getCode", params: [`0x${"12".repeat(20)}`, "latest"] });
    // 400 answers of 100 kB: far more than the socket buffers hold, so they pile up in nodegate.
    for (let i = 0; i < 400; i++) hog.send(request);
    for (let i = 0; i < 300 && (await open()) !== 1; i++) await sleep(20);
    expect(await open()).toBe(1);
    hog.resume();
    expect(await new Promise((resolve) => hog.once("close", resolve))).toBe(1006);
    expect((await reader.call("eth_chainId", [])).result).toBe("0x7a69");
    await reader.close();
    await own.close();
  });
});

describe("a WebSocket client that keeps asking small things but never reads", () => {
  it("is closed by the keep-alive once answers of its wait unread: its messages do not count as answers to pings", async () => {
    // Found from outside: clients that never read, sending a small call every 2 s, stayed open for good, and held the
    // whole reply budget: other keys' large answers were refused.
    const own = await startNodegate({ upstreamUrl: upstream.url, keys: [KEY], config: { websocket: { ...DEFAULT_WEBSOCKET, pingIntervalMs: 150 } } });
    const hog = new WebSocket(`ws://127.0.0.1:${own.port}/ws/v3/${KEY}`, { perMessageDeflate: false });
    hog.on("error", () => {});
    await new Promise((resolve) => hog.once("open", resolve));
    const open = async () => (await own.gateway.metrics.openWebSockets.get()).values[0]?.value;
    hog.pause(); // reads nothing more
    // 100 answers of 100 kB: more than the socket buffers hold, well under the unread limit (64 MiB).
    for (let i = 0; i < 100; i++) hog.send(JSON.stringify({ jsonrpc: "2.0", id: i, method: "eth_getCode", params: [`0x${"12".repeat(20)}`, "latest"] }));
    for (let i = 0; i < 100 && (await open()) !== 0; i++) {
      hog.send(JSON.stringify({ jsonrpc: "2.0", id: 1000 + i, method: "eth_chainId", params: [] }));
      await sleep(50);
    }
    expect(await open()).toBe(0);
    hog.terminate();
    await own.close();
  });
});

describe("a WebSocket client that reads slowly, but reads", () => {
  it("is not closed by the keep-alive while it works through a backlog longer than two ping rounds", async () => {
    // Found from outside: a client reading three 17 MB answers at 0.5 MB/s was cut off, its pong being behind them.
    const own = await startNodegate({ upstreamUrl: upstream.url, keys: [KEY], config: { websocket: { ...DEFAULT_WEBSOCKET, pingIntervalMs: 1000 } } });
    const ws = new WebSocket(`ws://127.0.0.1:${own.port}/ws/v3/${KEY}`, { perMessageDeflate: false });
    await new Promise((resolve) => ws.once("open", resolve));
    const count = 500;
    let answered = 0;
    const all = new Promise<void>((resolve, reject) => {
      ws.on("message", () => {
        // One answer, then a pause: some 3 s for the 500, while tens of MB wait in nodegate and its pings behind them.
        if (++answered === count) resolve();
        ws.pause();
        setTimeout(() => ws.resume(), 6);
      });
      ws.once("close", (code) => reject(new Error(`closed ${code} after ${answered} answers`)));
    });
    // 500 answers of 100 kB, 50 MB: within the unread limit (64 MiB), far more than the socket buffers hold.
    for (let i = 0; i < count; i++) ws.send(JSON.stringify({ jsonrpc: "2.0", id: i, method: "eth_getCode", params: [`0x${"12".repeat(20)}`, "latest"] }));
    await all;
    expect(answered).toBe(count);
    ws.close();
    await own.close();
  });
});

describe("a WebSocket client that reads as fast as it can", () => {
  it("gets every answer, however many pile up at once past the unread limit", async () => {
    // Found from outside: 60 pipelined 1.5 MB answers from the cache were queued at once, past the 64 MiB limit, and the
    // client, reading at full speed, was cut off (1006) after the second.
    // The node answers after a while, and identical calls share its answer: all of them are ready at once.
    const slow = await startProgrammableUpstream((r) => (r.method === "eth_getCode" ? { delayMs: 300, then: { result: `0x${"ab".repeat(50_000)}` } } : { forward: upstream.url }));
    // Answers go out as the socket takes them: about 2 MB wait at most here (the client reads nothing until they
    // are ready), past the 1 MiB limit and within 4 times it, past which a client is closed at once, reading or not.
    // (With a 256 KiB limit, the test passed only on some runs: what waited at most passed 4 times that.) The calls that
    // wait for a connection are sent one by one (batchSize 1), as this was measured: the answers of a batch arrive
    // together, up to 100 of them (10 MB here), past 4 times this test's limit at once.
    const own = await startNodegate({
      upstreamUrl: slow.url,
      keys: [KEY],
      networks: [{ name: "ethereum", family: "eth", upstreams: [{ label: "primary", url: slow.url, batchSize: 1 }] }],
      config: { limits: { ...DEFAULT_LIMITS, maxWsUnreadBytes: 1024 * 1024 } },
    });
    const ws = new WebSocket(`ws://127.0.0.1:${own.port}/ws/v3/${KEY}`, { perMessageDeflate: false });
    await new Promise((resolve) => ws.once("open", resolve));
    const answered = new Set<number>();
    const all = new Promise<void>((resolve, reject) => {
      ws.on("message", (data) => {
        answered.add((JSON.parse(String(data)) as { id: number }).id);
        if (answered.size === 400) resolve();
      });
      ws.once("close", (code) => reject(new Error(`closed ${code} after ${answered.size} answers`)));
    });
    // 400 answers of 100 kB, 40 MB in all, asked at once.
    for (let i = 0; i < 400; i++) ws.send(JSON.stringify({ jsonrpc: "2.0", id: i, method: "eth_getCode", params: [`0x${"12".repeat(20)}`, "latest"] }));
    ws.pause();
    await slow.arrived("eth_getCode", JSON.stringify([`0x${"12".repeat(20)}`, "latest"]));
    await new Promise((r) => setTimeout(r, 450)); // the node's 300 ms, and the answers queued
    ws.resume(); // well within the second a client over its limit may take nothing
    await all;
    expect(answered.size).toBe(400);
    ws.close();
    await own.close();
    await slow.close();
  });
});

describe("what the limits leave behind", () => {
  it("a client that goes away part way through its body is not an error; none of the above was logged as one", async () => {
    const conn = await rawConnection();
    conn.socket.write(`POST /v3/${KEY} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"jsonrpc"`);
    await sleep(50);
    conn.socket.destroy();
    await conn.closed;
    await stillServing();
    expect(ng.logs.filter((l) => (l.level as number) >= 50)).toEqual([]);
  });
});

describe("configuration", () => {
  it("the deadlines and quotas are YAML limits, and a headers deadline beyond the request deadline is refused", () => {
    const dir = testTempDir("nodegate-limits-");
    const good = join(dir, "good.yaml");
    writeFileSync(good, "limits:\n  headersTimeoutMs: 5000\n  requestTimeoutMs: 20000\n  idleTimeoutMs: 30000\n  maxWsConnectionsPerKey: 7\n  maxConcurrentRequestsPerKey: 8\n  maxSubscriptionsPerKey: 9\n");
    expect(loadConfig({}, good).limits).toMatchObject({
      headersTimeoutMs: 5000,
      requestTimeoutMs: 20000,
      idleTimeoutMs: 30000,
      maxWsConnectionsPerKey: 7,
      maxConcurrentRequestsPerKey: 8,
      maxSubscriptionsPerKey: 9,
    });
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "limits:\n  requestTimeoutMs: 1000\n  headersTimeoutMs: 2000\n");
    expect(() => loadConfig({}, bad)).toThrow(ConfigError);
    expect(() => loadConfig({}, bad)).toThrow(/bad\.yaml:3:21: limits\.headersTimeoutMs: headersTimeoutMs must not exceed requestTimeoutMs/);
  });
});
