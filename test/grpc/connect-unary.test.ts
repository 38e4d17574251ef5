/**
 * The Connect protocol's lean lane (unary POSTs of application/proto and
 * application/json) answers exactly as Connect's own handler does: the same
 * messages (whether the fast transcoder or the object path wrote them), the
 * same errors (HTTP status, JSON body, details), JSON read and compressed as
 * Connect does it (binary answers are never compressed), and the contract:
 * connect-timeout-ms, cancellation, body limit, x-request-id, one log line,
 * many multi-MiB answers on one HTTP/2 connection. Compressed requests, which
 * the lane leaves to Connect, are the reference it is compared with.
 */
import http from "node:http";
import { brotliCompressSync, brotliDecompressSync, constants as zlibConstants, gunzipSync, gzipSync, inflateSync } from "node:zlib";
import { create, equals, fromBinary, type Message, toBinary, toJson } from "@bufbuild/protobuf";
import { Code, createClient } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { EthService, GetBlockByNumberRequestSchema, GetLogsRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { JsonRpcErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { BROTLI_QUALITY, compressionBrotli } from "../../src/grpc/compressions.js";
import { compressedAnswer } from "../../src/grpc/connect-unary.js";
import { connectClient } from "../support/grpc-clients.js";
import { connectErrorOf } from "../support/grpc-status.js";
import { useLaneFixture } from "../support/lane-fixture.js";
import { manyLogsAnswer } from "../support/programmable-upstream.js";

const f = useLaneFixture();

const m = EthService.method;
const numberOf = (n: bigint) => ({ kind: { case: "number" as const, value: n } });
const blockPath = `/${EthService.typeName}/GetBlockByNumber`;

/** connect-es on the Connect protocol over HTTP/2 (the shared helper speaks it over HTTP/1.1). */
function connectOverHttp2() {
  return createClient(EthService, createConnectTransport({ baseUrl: f.ng.url, httpVersion: "2" }));
}

interface RawReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** One POST over HTTP/1.1 as a Connect client sends it, with the key; the reply as it came. */
function rawPost(path: string, body: Uint8Array | string, headers: Record<string, string>): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${f.ng.url}${path}`, { method: "POST", headers: { "x-api-key": f.ng.key, "connect-protocol-version": "1", ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/**
 * The same call as the lane takes it (binary and JSON) and as Connect's own handler does: a
 * compressed request, which the lane leaves to Connect.
 */
async function threeForms(path: string, request: Message, schema: Parameters<typeof toBinary>[0], headers: Record<string, string> = {}) {
  const text = JSON.stringify(toJson(schema, request));
  const proto = await rawPost(path, toBinary(schema, request), { "content-type": "application/proto", ...headers });
  const json = await rawPost(path, text, { "content-type": "application/json", ...headers });
  const connect = await rawPost(path, gzipSync(text), { "content-type": "application/json", "content-encoding": "gzip", ...headers });
  return { proto, json, connect };
}

/** A JSON reply's body, decompressed as its Content-Encoding says. */
function jsonOf(reply: RawReply): unknown {
  const encoding = reply.headers["content-encoding"];
  const body =
    encoding === "gzip" ? gunzipSync(reply.body) : encoding === "br" ? brotliDecompressSync(reply.body) : encoding === "deflate" ? inflateSync(reply.body) : reply.body;
  return JSON.parse(body.toString("utf8"));
}

describe("the same answers as Connect's own handler", () => {
  it("blocks with full transactions and logs, binary and JSON, over HTTP/1.1 and HTTP/2, equal gRPC-Web's", async () => {
    const web = connectClient(f.ng.url, EthService, f.ng.key, "grpc-web");
    const headers = { "x-api-key": f.ng.key };
    const lanes = [
      (httpVersion: "1.1" | "2") => createClient(EthService, createConnectTransport({ baseUrl: f.ng.url, httpVersion })),
      (httpVersion: "1.1" | "2") => createClient(EthService, createConnectTransport({ baseUrl: f.ng.url, httpVersion, useBinaryFormat: false })),
    ].flatMap((make) => [make("1.1"), make("2")]);
    const blockRequest = { block: numberOf(f.logsBlock), fullTransactions: true };
    const reference = await web.getBlockByNumber(blockRequest);
    expect(reference.block?.transactions?.full).toHaveLength(1);
    const logsRequest = { filter: { fromBlock: numberOf(f.logsBlock), toBlock: numberOf(f.logsBlock) } };
    const logs = await web.getLogs(logsRequest);
    expect(logs.logs).toHaveLength(40);
    for (const lane of lanes) {
      expect(equals(m.getBlockByNumber.output, await lane.getBlockByNumber(blockRequest, { headers }), reference)).toBe(true);
      expect(equals(m.getLogs.output, await lane.getLogs(logsRequest, { headers }), logs)).toBe(true);
    }
  });

  it("a binary answer leaves uncompressed even when gzip is accepted; a JSON answer is compressed as Connect compresses it", async () => {
    const request = create(GetLogsRequestSchema, { filter: { fromBlock: numberOf(f.logsBlock), toBlock: numberOf(f.logsBlock) } });
    for (const accepted of ["gzip", "deflate, br, gzip", "br, gzip"]) {
      const { proto, json, connect } = await threeForms(`/${EthService.typeName}/GetLogs`, request, m.getLogs.input, { "accept-encoding": accepted });
      expect(proto.status).toBe(200);
      expect(proto.headers["content-type"]).toBe("application/proto");
      expect(proto.headers["content-encoding"]).toBeUndefined();
      expect(Number(proto.headers["content-length"])).toBe(proto.body.length);
      const fromLane = fromBinary(m.getLogs.output, proto.body);
      expect(fromLane.logs).toHaveLength(40);
      for (const reply of [json, connect]) {
        expect(reply.status).toBe(200);
        expect(reply.headers["content-type"]).toBe("application/json");
        expect(reply.headers["content-encoding"]).toBe(accepted.split(",")[0]);
        expect(Number(reply.headers["content-length"])).toBe(reply.body.length);
        expect(jsonOf(reply)).toEqual(toJson(m.getLogs.output, fromLane));
      }
    }
    // Below 1 KiB neither compresses.
    const small = await threeForms(`/${EthService.typeName}/ChainId`, create(m.chainId.input), m.chainId.input, { "accept-encoding": "gzip" });
    expect([small.json.headers["content-encoding"], small.connect.headers["content-encoding"]]).toEqual([undefined, undefined]);
    expect(jsonOf(small.json)).toEqual(jsonOf(small.connect));
    expect(jsonOf(small.json)).toEqual({ chainId: "31337" });
  });

  it("JSON is read as Connect reads it: unknown members ignored, and the same refusal for what is not the request message", async () => {
    const statuses = [];
    for (const text of ['{"block":{"number":"5"},"notAField":1}', "{", '{"fullTransactions":"yes"}', '{"block":{"number":"-1"}}', "[]"]) {
      const lane = await rawPost(blockPath, text, { "content-type": "application/json" });
      const connect = await rawPost(blockPath, gzipSync(text), { "content-type": "application/json", "content-encoding": "gzip" });
      expect([lane.status, jsonOf(lane)], text).toEqual([connect.status, jsonOf(connect)]);
      statuses.push(lane.status);
    }
    expect(statuses).toEqual([200, 400, 400, 400, 400]);
    const ignored = await rawPost(blockPath, '{"block":{"number":"1"},"notAField":1}', { "content-type": "application/json; charset=utf-8" });
    expect(ignored.status).toBe(200);
    expect(jsonOf(ignored)).toMatchObject({ block: { number: "1" } });
  });

  it("an answer the fast path leaves to the object path (an escaped key) is answered all the same", async () => {
    f.override = (r) =>
      r.method === "eth_getBlockByNumber" ? { raw: `{"jsonrpc":"2.0","id":${JSON.stringify(r.id)},"result":{"\\u006eumber":"0x5","extraData":"0x"}}` } : undefined;
    const response = await connectClient(f.ng.url, EthService, f.ng.key).getBlockByNumber({ block: numberOf(5n) });
    expect(response.block?.number).toBe(5n);
    expect(response.block?.extraData?.length).toBe(0);
  });

  it("an answer that fits no type, a node error and a bad key: the same code, message and details as gRPC-Web", async () => {
    f.override = (r) => {
      if (r.method !== "eth_getBlockByNumber") return undefined;
      return JSON.stringify(r.params) === '["0x5",false]'
        ? { result: { number: "0x5", gasLimit: "0xzz" } }
        : { error: { code: -32000, message: "header not found", data: { why: "pruned" } } };
    };
    for (const [key, request] of [
      [f.ng.key, { block: numberOf(5n) }],
      [f.ng.key, { block: numberOf(6n) }],
      ["not-a-key-at-all", { block: numberOf(5n) }],
    ] as const) {
      const lane = await connectErrorOf(connectClient(f.ng.url, EthService, key).getBlockByNumber(request));
      const web = await connectErrorOf(connectClient(f.ng.url, EthService, key, "grpc-web").getBlockByNumber(request));
      expect([lane.code, lane.rawMessage, lane.findDetails(JsonRpcErrorSchema)]).toEqual([web.code, web.rawMessage, web.findDetails(JsonRpcErrorSchema)]);
    }
    const nodeError = await connectErrorOf(connectClient(f.ng.url, EthService, f.ng.key).getBlockByNumber({ block: numberOf(6n) }));
    expect(nodeError.findDetails(JsonRpcErrorSchema)[0]).toMatchObject({ code: -32000n, message: "header not found", data: '{"why":"pruned"}' });
  });

  it("errors carry the HTTP status and JSON body Connect writes for the same call", async () => {
    f.override = (r) => (r.method === "eth_getBlockByNumber" ? { error: { code: -32005, message: "daily request count exceeded, request rate limited" } } : undefined);
    const request = create(GetBlockByNumberRequestSchema, { block: numberOf(3n) });
    const cases = [
      await threeForms(blockPath, request, m.getBlockByNumber.input), // a provider's rate limit
      await threeForms(blockPath, request, m.getBlockByNumber.input, { "x-api-key": "not-a-key-at-all" }),
      await threeForms(blockPath, request, m.getBlockByNumber.input, { "connect-timeout-ms": "soon" }),
    ];
    const statuses = [];
    for (const { proto, json, connect } of cases) {
      statuses.push(connect.status);
      for (const lane of [proto, json]) {
        expect(lane.status).toBe(connect.status);
        expect(lane.headers["content-type"]).toBe("application/json");
        expect(jsonOf(lane)).toEqual(jsonOf(connect));
        expect(lane.headers["x-request-id"]).toBeTruthy();
      }
    }
    expect(statuses).toEqual([429, 401, 400]);
  });

  it("a body that is not the request message is an internal error in Connect's words, and the lane keeps serving", async () => {
    const reply = await rawPost(blockPath, Buffer.from([0x0a, 0xff]), { "content-type": "application/proto" });
    expect(reply.status).toBe(500);
    const body = JSON.parse(reply.body.toString("utf8")) as { code: string; message: string };
    expect(body.code).toBe("internal");
    expect(body.message).toMatch(/^parse binary: /);
    expect((await connectClient(f.ng.url, EthService, f.ng.key).chainId({})).chainId).toBe(31337n);
  });
});

describe("the Connect contract", () => {
  it("connect-timeout-ms: deadline_exceeded, and the upstream request is cancelled", async () => {
    f.override = (r) => (r.method === "eth_getBlockByNumber" ? { delayMs: 5000, then: { forward: f.anvil.url } } : undefined);
    const err = await connectErrorOf(connectClient(f.ng.url, EthService, f.ng.key).getBlockByNumber({ block: numberOf(7n) }, { timeoutMs: 1000 }));
    expect(err.code).toBe(Code.DeadlineExceeded);
    const sent = await f.upstream.arrived("eth_getBlockByNumber", '["0x7",false]');
    await expect.poll(() => sent.abandoned, { timeout: 5000 }).toBe(true);
  });

  it("gRPC-Web (Connect's own handler): a deadline that passes is deadline_exceeded, not cancelled", async () => {
    // Found from outside: the interrupted upstream call's "cancelled" used to win over Connect's deadline.
    // A raw request: a client that keeps the deadline itself would report deadline_exceeded whatever the server said.
    f.override = (r) => (r.method === "eth_getBlockByNumber" ? { delayMs: 5000, then: { forward: f.anvil.url } } : undefined);
    const message = toBinary(GetBlockByNumberRequestSchema, create(GetBlockByNumberRequestSchema, { block: numberOf(9n) }));
    const frame = Buffer.alloc(5 + message.length);
    frame.writeUInt32BE(message.length, 1);
    frame.set(message, 5);
    const res = await fetch(`${f.ng.url}/nodegate.eth.v1.EthService/GetBlockByNumber`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", "grpc-timeout": "1000m", "x-api-key": f.ng.key },
      body: frame,
    });
    const body = Buffer.from(await res.arrayBuffer());
    // The status is in the headers (trailers-only) or in the trailer frame (flag 0x80).
    const trailers = res.headers.get("grpc-status") !== null ? `grpc-status:${res.headers.get("grpc-status")}` : body[0] === 0x80 ? body.subarray(5).toString() : "";
    expect(trailers).toMatch(new RegExp(`grpc-status: ?${Code.DeadlineExceeded}\\b`));
    const sent = await f.upstream.arrived("eth_getBlockByNumber", '["0x9",false]');
    await expect.poll(() => sent.abandoned, { timeout: 5000 }).toBe(true);
  });

  it("a call the client aborts cancels the upstream request, and is logged as cancelled", async () => {
    f.override = (r) => (r.method === "eth_getBlockByNumber" ? { delayMs: 5000, then: { forward: f.anvil.url } } : undefined);
    const abort = new AbortController();
    const call = connectErrorOf(connectClient(f.ng.url, EthService, f.ng.key).getBlockByNumber({ block: numberOf(8n) }, { signal: abort.signal, headers: { "x-request-id": "abort-lane-8" } }));
    const sent = await f.upstream.arrived("eth_getBlockByNumber", '["0x8",false]');
    abort.abort();
    expect((await call).code).toBe(Code.Canceled);
    await expect.poll(() => sent.abandoned, { timeout: 5000 }).toBe(true);
    await expect.poll(() => f.ng.logs.find((l) => l.requestId === "abort-lane-8"), { timeout: 5000 }).toMatchObject({ door: "connect", status: "Canceled" });
  });

  it("a request larger than the body limit is refused with resource_exhausted, on the lane and on Connect's other forms", async () => {
    const huge = create(GetLogsRequestSchema, { filter: { address: Array.from({ length: 300_000 }, () => new Uint8Array(20)) } });
    for (const protocol of ["connect", "grpc-web"] as const) {
      const err = await connectErrorOf(connectClient(f.ng.url, EthService, f.ng.key, protocol).getLogs(huge));
      expect(err.code).toBe(Code.ResourceExhausted);
      expect(err.rawMessage).toContain("larger than");
    }
    expect((await connectClient(f.ng.url, EthService, f.ng.key).getBlockByNumber({ block: numberOf(1n) })).block?.number).toBe(1n);
  });

  it("gzip-compressed requests are read", async () => {
    const client = createClient(EthService, createConnectTransport({ baseUrl: f.ng.url, httpVersion: "1.1", sendCompression: compressionGzip, compressMinBytes: 0 }));
    const response = await client.getBlockByNumber({ block: numberOf(1n) }, { headers: { "x-api-key": f.ng.key } });
    expect(response.block?.number).toBe(1n);
  });

  it("x-request-id comes back in the response headers and in the log line", async () => {
    let echoed: string | null = null;
    await connectClient(f.ng.url, EthService, f.ng.key).getBlockByNumber(
      { block: numberOf(1n) },
      { headers: { "x-request-id": "trace-connect-42" }, onHeader: (h) => (echoed = h.get("x-request-id")) },
    );
    expect(echoed).toBe("trace-connect-42");
    expect(f.ng.logs.some((l) => l.requestId === "trace-connect-42" && l.door === "connect" && l.method === "nodegate.eth.v1.EthService/GetBlockByNumber" && l.status === "ok")).toBe(true);
  });

  it("an error carries x-request-id once, on every transport and encoding (lean lanes and Connect's)", async () => {
    // Found from outside: gRPC-Web, and gRPC with JSON, said it in the head and again in the trailers ("id, id").
    f.override = (r) => (r.method === "eth_getBlockByNumber" ? { error: { code: -32000, message: "node says no" } } : undefined);
    const transports = {
      "connect binary": createConnectTransport({ baseUrl: f.ng.url, httpVersion: "1.1" }),
      "connect json": createConnectTransport({ baseUrl: f.ng.url, httpVersion: "1.1", useBinaryFormat: false }),
      "grpc binary": createGrpcTransport({ baseUrl: f.ng.url }),
      "grpc json": createGrpcTransport({ baseUrl: f.ng.url, useBinaryFormat: false }),
      "grpc-web binary": createGrpcWebTransport({ baseUrl: f.ng.url, httpVersion: "1.1" }),
      "grpc-web json": createGrpcWebTransport({ baseUrl: f.ng.url, httpVersion: "1.1", useBinaryFormat: false }),
    };
    try {
      for (const [name, transport] of Object.entries(transports)) {
        const client = createClient(EthService, transport);
        for (const [what, headers] of [
          ["node error", { "x-api-key": f.ng.key, "x-request-id": "once-1" }],
          ["no key", { "x-request-id": "once-1" }],
        ] as const) {
          const err = await connectErrorOf(client.getBlockByNumber({ block: numberOf(1n) }, { headers }));
          expect([name, what, err.code === Code.Unauthenticated, err.metadata.get("x-request-id")]).toEqual([name, what, what === "no key", "once-1"]);
        }
      }
    } finally {
      f.override = undefined;
    }
  });

  it("many multi-MiB answers at once on one HTTP/2 connection", async () => {
    f.override = manyLogsAnswer();
    const client = connectOverHttp2();
    const request = { filter: { fromBlock: numberOf(9n), toBlock: numberOf(9n) } };
    const answers = await Promise.all(Array.from({ length: 8 }, () => client.getLogs(request, { headers: { "x-api-key": f.ng.key } })));
    for (const a of answers) {
      expect(a.logs).toHaveLength(6000);
      expect(a.logs[5999]?.logIndex).toBe(5999n);
    }
  });
});

describe("compressed answers of shared results", () => {
  const body = Buffer.from(JSON.stringify({ block: "x".repeat(4096) }));
  const counting = (fail: boolean) => {
    const counted = { name: "gzip", calls: 0 };
    return Object.assign(counted, {
      compress: async (bytes: Uint8Array) => {
        counted.calls++;
        if (fail && counted.calls === 1) throw new Error("zlib failed");
        // As zlib does for a small result: a view of a larger output buffer.
        const gz = gzipSync(bytes);
        return Buffer.concat([gz, Buffer.alloc(16 * 1024)]).subarray(0, gz.length);
      },
      decompress: async (bytes: Uint8Array) => gunzipSync(bytes),
    });
  };

  it("an answer several calls share is compressed once for each compression", async () => {
    const gzip = counting(false);
    const first = await compressedAnswer(body, gzip as never);
    expect(await compressedAnswer(body, gzip as never)).toBe(first);
    expect(gunzipSync(first).equals(body)).toBe(true);
    expect(first.buffer.byteLength).toBe(first.length); // kept in a buffer of its own, not pinning zlib's
    expect(gzip.calls).toBe(1);
    // Another answer with the same bytes is another answer: compressed on its own.
    await compressedAnswer(Buffer.from(body), gzip as never);
    expect(gzip.calls).toBe(2);
  });

  it("a failed compression is not kept: the next call compresses afresh", async () => {
    const gzip = counting(true);
    const answer = Buffer.from(body);
    await expect(compressedAnswer(answer, gzip as never)).rejects.toThrow("zlib failed");
    expect(gunzipSync(await compressedAnswer(answer, gzip as never)).equals(body)).toBe(true);
    expect(gzip.calls).toBe(2);
  });
});

describe("answer compressions", () => {
  it("br compresses at quality 4: zlib's default (11) took 290 ms of CPU for a block's JSON answer", async () => {
    const answer = Buffer.from(JSON.stringify({ transactions: Array.from({ length: 200 }, (_, i) => ({ hash: `0x${i.toString(16).padStart(64, "7")}`, value: String(i * 1e15) })) }));
    const compressed = await compressionBrotli.compress(answer);
    const atQuality = (quality: number) => brotliCompressSync(answer, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: quality, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: answer.length } });
    expect(Buffer.from(compressed).equals(atQuality(BROTLI_QUALITY))).toBe(true);
    expect(brotliDecompressSync(compressed).equals(answer)).toBe(true);
  });
});
