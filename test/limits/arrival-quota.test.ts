/**
 * limits.maxConcurrentRequestsPerKey counts a request from its headers, not
 * from its body's end: a client that opens streams (or HTTP/1.1 requests)
 * with a valid key and never sends their body held none of its key's
 * requests, so one key pinned any number of streams, 5-10 KB each, until the
 * request deadline (found from outside: 20,000 on a limit of 50). Each such
 * request now holds one; past the limit the next is refused at once, in its
 * door's terms; and every request gives its one back however it ends
 * (answered, reset, its session gone, cut off at the request deadline), never
 * twice.
 */
import http2 from "node:http2";
import net from "node:net";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { JsonRpcService } from "../../gen/nodegate/jsonrpc/v1/jsonrpc_service_pb.js";
import { DEFAULT_LIMITS } from "../../src/config/config.js";
import { connectClient } from "../support/grpc-clients.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const LIMIT = 3;
const REQUEST_MS = 1500;
const KEY = "arrival-key-5be1c0de";
const OTHER_KEY = "arrival-other-key-77aa";
const QUOTA_MESSAGE = "too many concurrent requests for this key";

let upstream: ProgrammableUpstream;
let ng: TestNodegate;
/** Upstream answers to eth_blockNumber wait this long, so requests stay in progress. */
let slowMs = 0;

beforeAll(async () => {
  upstream = await startProgrammableUpstream((r) => {
    if (r.method === "eth_blockNumber" && slowMs > 0) return { delayMs: slowMs, then: { result: "0x10" } };
    return { result: r.method === "eth_chainId" ? "0x7a69" : "0x10" };
  });
  ng = await startNodegate({
    upstreamUrl: upstream.url,
    keys: [
      { key: KEY, plan: "custom" },
      { key: OTHER_KEY, plan: "custom" },
    ],
    config: { limits: { ...DEFAULT_LIMITS, headersTimeoutMs: 500, requestTimeoutMs: REQUEST_MS, maxConcurrentRequestsPerKey: LIMIT } },
  });
});
afterAll(async () => {
  await ng?.close();
  await upstream?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The key's requests in progress, as nodegate counts them. */
function held(key = KEY): number {
  return ng.gateway.quotas.held(ng.gateway.access.authenticate({ key, authorization: undefined, origin: undefined, userAgent: undefined }), "requests");
}

interface Ended {
  status: number | undefined;
  grpcStatus: string | undefined;
  grpcMessage: string | undefined;
  body: Buffer;
  /** The answer was one HEADERS frame that ended the stream (gRPC's Trailers-Only). */
  trailersOnly: boolean;
  ms: number;
}

/** A stream that sends its headers and never its body; `ended` resolves once nodegate ends it. */
function bodiless(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders): { stream: http2.ClientHttp2Stream; ended: Promise<Ended> } {
  const started = performance.now();
  const stream = session.request({ ":method": "POST", ...headers }, { endStream: false });
  stream.on("error", () => {});
  const chunks: Buffer[] = [];
  const ended = new Promise<Ended>((resolve) => {
    let status: number | undefined;
    let grpcStatus: string | undefined;
    let grpcMessage: string | undefined;
    let trailersOnly = false;
    const take = (h: http2.IncomingHttpHeaders) => {
      if (h["grpc-status"] !== undefined) {
        grpcStatus = String(h["grpc-status"]);
        grpcMessage = decodeURIComponent(String(h["grpc-message"] ?? ""));
      }
    };
    stream.on("response", (h, flags) => {
      status = Number(h[":status"]);
      trailersOnly = (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0;
      take(h);
    });
    stream.on("trailers", take);
    stream.on("data", (d: Buffer) => chunks.push(d));
    stream.once("close", () =>
      resolve({ status, grpcStatus, grpcMessage, body: Buffer.concat(chunks), trailersOnly, ms: performance.now() - started }),
    );
  });
  return { stream, ended };
}

/** Sessions opened by a test, destroyed at its end. */
function h2Session(): http2.ClientHttp2Session {
  const session = http2.connect(ng.url);
  session.on("error", () => {});
  return session;
}

const GRPC = { "content-type": "application/grpc", te: "trailers", "x-api-key": KEY };

/** Each door's bodiless request, and what its client reads when its key holds its maximum. */
const doors: { name: string; headers: http2.OutgoingHttpHeaders; refused: (e: Ended) => void }[] = [
  {
    name: "gRPC (the method table's lean lane)",
    headers: { ":path": "/nodegate.eth.v1.EthService/ChainId", ...GRPC },
    refused: (e) => {
      expect(e).toMatchObject({ status: 200, grpcStatus: String(Code.ResourceExhausted), grpcMessage: QUOTA_MESSAGE, trailersOnly: true });
    },
  },
  {
    name: "gRPC to a service Connect's handlers serve (JsonRpcService)",
    headers: { ":path": "/nodegate.jsonrpc.v1.JsonRpcService/Call", ...GRPC },
    refused: (e) => {
      expect(e).toMatchObject({ status: 200, grpcStatus: String(Code.ResourceExhausted), grpcMessage: QUOTA_MESSAGE, trailersOnly: true });
    },
  },
  {
    name: "gRPC-Web",
    headers: { ":path": "/nodegate.eth.v1.EthService/ChainId", "content-type": "application/grpc-web+proto", "x-api-key": KEY },
    refused: (e) => {
      expect(e.status).toBe(200);
      expect(e.body[0]).toBe(0x80);
      expect(e.body.subarray(5).toString()).toContain(`grpc-status: ${Code.ResourceExhausted}`);
    },
  },
  {
    name: "the Connect protocol, unary",
    headers: { ":path": "/nodegate.eth.v1.EthService/ChainId", "content-type": "application/proto", "x-api-key": KEY },
    refused: (e) => {
      expect(e.status).toBe(429);
      expect(JSON.parse(e.body.toString())).toMatchObject({ code: "resource_exhausted", message: QUOTA_MESSAGE });
    },
  },
  {
    name: "the Connect protocol, a server stream (StreamLogs)",
    headers: { ":path": "/nodegate.eth.v1.EthService/StreamLogs", "content-type": "application/connect+proto", "x-api-key": KEY },
    refused: (e) => {
      expect(e.status).toBe(200);
      expect(e.body[0]).toBe(0x02);
      expect(JSON.parse(e.body.subarray(5).toString())).toMatchObject({ error: { code: "resource_exhausted", message: QUOTA_MESSAGE } });
    },
  },
  {
    name: "the native door over HTTP/2",
    headers: { ":path": `/v3/${KEY}`, "content-type": "application/json" },
    refused: (e) => {
      expect(e.status).toBe(429);
      expect(JSON.parse(e.body.toString())).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32005, message: QUOTA_MESSAGE, data: { limit: LIMIT } } });
    },
  },
];

describe("a request whose body never comes holds one of its key's requests", () => {
  for (const door of doors) {
    it(`${door.name}: past the limit the next is refused at once; other keys are served; the key is free again once they go`, async () => {
      const session = h2Session();
      try {
        const holders = [bodiless(session, door.headers), bodiless(session, door.headers), bodiless(session, door.headers)];
        await expect.poll(() => held()).toBe(LIMIT);
        const refused = await bodiless(session, door.headers).ended;
        door.refused(refused);
        // Answered at once, not at the request deadline.
        expect(refused.ms).toBeLessThan(REQUEST_MS / 2);
        // A call of the key is refused too (with its own id on the native door: its body came with its head)...
        const native = await post(`${ng.url}/v3/${KEY}`, rpc("eth_chainId", [], 9));
        expect(native.status).toBe(429);
        expect(native.json).toEqual({ jsonrpc: "2.0", id: 9, error: { code: -32005, message: QUOTA_MESSAGE, data: { limit: LIMIT } } });
        // ...another key's is not.
        expect((await post(`${ng.url}/v3/${OTHER_KEY}`, rpc("eth_chainId"))).json.result).toBe("0x7a69");
        // Reset by the client, or gone with their session: each gives its one back.
        holders[0]?.stream.close(http2.constants.NGHTTP2_CANCEL);
        await expect.poll(() => held()).toBe(LIMIT - 1);
        session.destroy();
        await expect.poll(() => held()).toBe(0);
        expect((await post(`${ng.url}/v3/${KEY}`, rpc("eth_chainId"))).json.result).toBe("0x7a69");
      } finally {
        session.destroy();
      }
    });
  }

  it("the native door over HTTP/1.1: a head whose body never comes holds one; past the limit the next is refused with 429 at once", async () => {
    const head = `POST /v3/${KEY} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 60\r\n\r\n`;
    const sockets: net.Socket[] = [];
    try {
      for (let i = 0; i < LIMIT; i++) {
        const socket = net.connect(ng.port, "127.0.0.1");
        socket.on("error", () => {});
        socket.write(head);
        sockets.push(socket);
      }
      await expect.poll(() => held()).toBe(LIMIT);
      const started = performance.now();
      const socket = net.connect(ng.port, "127.0.0.1");
      socket.on("error", () => {});
      sockets.push(socket);
      const answer = new Promise<string>((resolve) => {
        let text = "";
        socket.on("data", (d: Buffer) => {
          text += d.toString("latin1");
          if (text.includes("}")) resolve(text);
        });
      });
      socket.write(head);
      const text = await answer;
      expect(performance.now() - started).toBeLessThan(REQUEST_MS / 2);
      expect(text).toMatch(/^HTTP\/1\.1 429 /);
      expect(text).toContain('"error":{"code":-32005,"message":"too many concurrent requests for this key"');
      for (const s of sockets) s.destroy();
      await expect.poll(() => held()).toBe(0);
    } finally {
      for (const s of sockets) s.destroy();
    }
  });

  it("one cut off at the request deadline gives its one back", async () => {
    const session = h2Session();
    try {
      const holders = [0, 1, 2].map(() => bodiless(session, { ":path": "/nodegate.eth.v1.EthService/ChainId", ...GRPC }));
      await expect.poll(() => held()).toBe(LIMIT);
      const ended = await Promise.all(holders.map((h) => h.ended));
      expect(ended.map((e) => e.grpcStatus)).toEqual(["4", "4", "4"]);
      expect(held()).toBe(0);
      expect(session.destroyed).toBe(false);
    } finally {
      session.destroy();
    }
  });
});

describe("a request whose headers name no key nodegate knows", () => {
  // Found from outside: such requests held nothing to count them against, so 5,000 bodiless streams with an unknown
  // key stayed until the request deadline. Refused at their headers now, as the native door refuses a key in its path.
  for (const [name, headers, refused] of [
    ["gRPC (the method table's lean lane), no key", { ":path": "/nodegate.eth.v1.EthService/ChainId", ...GRPC, "x-api-key": undefined }, "grpc"],
    ["gRPC (the method table's lean lane), an unknown key", { ":path": "/nodegate.eth.v1.EthService/ChainId", ...GRPC, "x-api-key": "no-such-key-123456" }, "grpc"],
    ["gRPC to a service Connect's handlers serve (JsonRpcService)", { ":path": "/nodegate.jsonrpc.v1.JsonRpcService/Call", ...GRPC, "x-api-key": "no-such-key-123456" }, "grpc"],
    ["the Connect protocol, unary", { ":path": "/nodegate.eth.v1.EthService/ChainId", "content-type": "application/proto", "x-api-key": "no-such-key-123456" }, "connect"],
    // Found from outside: Connect serves the RPC with a query string too, which skipped the check.
    ["JsonRpcService with a query string", { ":path": "/nodegate.jsonrpc.v1.JsonRpcService/Call?x=1", ...GRPC, "x-api-key": "no-such-key-123456" }, "grpc"],
    ["the native door (a key in its path it does not know)", { ":path": "/v3/no-such-key-123456", "content-type": "application/json" }, "native"],
  ] as const) {
    it(`${name}: refused UNAUTHENTICATED at once, not at the request deadline`, async () => {
      const session = h2Session();
      try {
        const ended = await bodiless(session, Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined))).ended;
        expect(ended.ms).toBeLessThan(REQUEST_MS / 2);
        if (refused === "grpc") expect(ended).toMatchObject({ status: 200, grpcStatus: String(Code.Unauthenticated), trailersOnly: true });
        else expect(ended.status).toBe(401);
        if (refused === "native") expect(JSON.parse(ended.body.toString())).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "invalid project id" } });
      } finally {
        session.destroy();
      }
    });
  }

  it("health and reflection take no key: a health check whose body comes later is answered, not refused at its headers", async () => {
    const session = h2Session();
    try {
      const { stream, ended } = bodiless(session, { ":path": "/grpc.health.v1.Health/Check", "content-type": "application/grpc", te: "trailers" });
      await sleep(200);
      // An empty HealthCheckRequest: the whole server's status.
      stream.end(Buffer.from([0, 0, 0, 0, 0]));
      const answer = await ended;
      expect(answer.grpcStatus).toBe("0");
      expect([...answer.body]).toEqual([0, 0, 0, 0, 2, 8, 1]);
    } finally {
      session.destroy();
    }
  });
});

describe("a request whose body comes holds one, not two", () => {
  it("on every door, as many calls as the limit run at once and are answered, and the key holds none after", async () => {
    slowMs = 300;
    try {
      const eth = connectClient(ng.url, EthService, KEY, "grpc");
      const viaConnect = connectClient(ng.url, JsonRpcService, KEY, "connect");
      const url = `${ng.url}/v3/${KEY}`;
      const rounds: (() => Promise<unknown>)[] = [
        () => eth.blockNumber({}).then((r) => r.number),
        () => viaConnect.call({ method: "eth_blockNumber", paramsJson: "[]" }).then((r) => r.resultJson),
        () => post(url, rpc("eth_blockNumber")).then((r) => r.json.result),
      ];
      for (const round of rounds) {
        const answers = await Promise.all(Array.from({ length: LIMIT }, round));
        expect(answers).toHaveLength(LIMIT);
        expect(answers.every((a) => a === 16n || a === '"0x10"' || a === "0x10")).toBe(true);
        expect(held()).toBe(0);
      }
    } finally {
      slowMs = 0;
    }
  });
});
