/**
 * The lean gRPC lane (unary application/grpc on HTTP/2) answers exactly as
 * Connect does on its other protocols: the same messages (whether the fast
 * transcoder or the object path wrote them), the same error statuses and
 * details, and the gRPC contract: deadlines, cancellation, compressed
 * requests, x-request-id, and many multi-MiB answers on one connection.
 */
import { create, equals, fromBinary, type DescMessage, type Message, toBinary } from "@bufbuild/protobuf";
import http2 from "node:http2";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import {
  type BlockNumberResponse,
  EthService,
  GetBlockByNumberRequestSchema,
  type GetBlockByNumberResponse,
  GetLogsRequestSchema,
  type GetLogsResponse,
  SubscribeLogsRequestSchema,
} from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { JsonRpcErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { CallRequestSchema, CallResponseSchema, JsonRpcService } from "../../gen/nodegate/jsonrpc/v1/jsonrpc_service_pb.js";
import { Health, type HealthCheckResponse, HealthCheckRequestSchema, HealthCheckResponse_ServingStatus, HealthCheckResponseSchema } from "../../gen/grpc/health/v1/health_pb.js";
import { connectClient } from "../support/grpc-clients.js";
import { post, rpc } from "../support/http.js";
import { connectErrorOf } from "../support/grpc-status.js";
import { useLaneFixture } from "../support/lane-fixture.js";
import { manyLogsAnswer } from "../support/programmable-upstream.js";

const f = useLaneFixture();

const m = EthService.method;
const numberOf = (n: bigint) => ({ kind: { case: "number" as const, value: n } });

/** A grpc-js call with what the helper does not offer: options, metadata out, cancellation. */
function grpcCall<O extends Message>(
  path: string,
  input: DescMessage,
  output: DescMessage,
  request: Message,
  options: { deadlineMs?: number; requestId?: string; channel?: grpc.ChannelOptions; cancelWhen?: Promise<unknown>; metadata?: Record<string, string> } = {},
): Promise<{ response: O; headers: grpc.Metadata }> {
  const client = new grpc.Client(f.ng.address, grpc.credentials.createInsecure(), { "grpc.max_receive_message_length": -1, ...options.channel });
  const metadata = new grpc.Metadata();
  metadata.set("x-api-key", f.ng.key);
  if (options.requestId) metadata.set("x-request-id", options.requestId);
  for (const [key, value] of Object.entries(options.metadata ?? {})) metadata.set(key, value);
  return new Promise((resolve, reject) => {
    let headers = new grpc.Metadata();
    const call = client.makeUnaryRequest(
      path,
      (m: Message) => Buffer.from(toBinary(input, m)),
      (b: Buffer) => fromBinary(output, b) as O,
      request,
      metadata,
      options.deadlineMs === undefined ? {} : { deadline: Date.now() + options.deadlineMs },
      (err, response) => {
        client.close();
        if (err) reject(err);
        else resolve({ response: response as O, headers });
      },
    );
    call.on("metadata", (md) => {
      headers = md;
    });
    void options.cancelWhen?.then(() => call.cancel());
  });
}

/** A gRPC length-prefixed message (uncompressed). */
function grpcFrame(bytes: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + bytes.length);
  out.writeUInt32BE(bytes.length, 1);
  out.set(bytes, 5);
  return out;
}

const blockPath = `/${EthService.typeName}/GetBlockByNumber`;
const logsPath = `/${EthService.typeName}/GetLogs`;

function getBlock(n: bigint, options?: Parameters<typeof grpcCall>[4]) {
  return grpcCall<GetBlockByNumberResponse>(blockPath, m.getBlockByNumber.input, m.getBlockByNumber.output, create(GetBlockByNumberRequestSchema, { block: numberOf(n), fullTransactions: true }), options);
}

describe("the same answers as Connect's other protocols", () => {
  it("blocks with full transactions and logs, on grpc-js and connect-es gRPC, equal gRPC-Web's", async () => {
    const web = connectClient(f.ng.url, EthService, f.ng.key, "grpc-web");
    const viaConnectGrpc = connectClient(f.ng.url, EthService, f.ng.key, "grpc");
    const blockRequest = { block: numberOf(f.logsBlock), fullTransactions: true };
    const reference = await web.getBlockByNumber(blockRequest);
    expect(reference.block?.transactions?.full).toHaveLength(1);
    expect(equals(m.getBlockByNumber.output, (await getBlock(f.logsBlock)).response, reference)).toBe(true);
    expect(equals(m.getBlockByNumber.output, await viaConnectGrpc.getBlockByNumber(blockRequest), reference)).toBe(true);

    const logsRequest = create(GetLogsRequestSchema, { filter: { fromBlock: numberOf(f.logsBlock), toBlock: numberOf(f.logsBlock) } });
    const logs = await web.getLogs(logsRequest);
    expect(logs.logs).toHaveLength(40);
    const { response } = await grpcCall<GetLogsResponse>(logsPath, m.getLogs.input, m.getLogs.output, logsRequest);
    expect(equals(m.getLogs.output, response, logs)).toBe(true);
  });

  it("an answer the fast path leaves to the object path (an escaped key) is answered all the same", async () => {
    f.override = (r) =>
      r.method === "eth_getBlockByNumber" ? { raw: `{"jsonrpc":"2.0","id":${JSON.stringify(r.id)},"result":{"\\u006eumber":"0x5","extraData":"0x"}}` } : undefined;
    const { response } = await getBlock(5n);
    expect(response.block?.number).toBe(5n);
    expect(response.block?.extraData?.length).toBe(0);
  });

  it("an answer that fits no type: the same status, message and details as gRPC-Web", async () => {
    f.override = (r) => (r.method === "eth_getBlockByNumber" ? { result: { number: "0x5", gasLimit: "0xzz" } } : undefined);
    const request = { block: numberOf(5n), fullTransactions: false };
    const lean = await connectErrorOf(connectClient(f.ng.url, EthService, f.ng.key, "grpc").getBlockByNumber(request));
    const web = await connectErrorOf(connectClient(f.ng.url, EthService, f.ng.key, "grpc-web").getBlockByNumber(request));
    expect(lean.code).toBe(web.code);
    expect(lean.rawMessage).toBe(web.rawMessage);
    expect(lean.findDetails(JsonRpcErrorSchema)).toEqual(web.findDetails(JsonRpcErrorSchema));
    expect(lean.rawMessage).toContain("gasLimit");
  });

  it("node errors and nodegate's own refusals carry the same details", async () => {
    f.override = (r) => (r.method === "eth_getBlockByNumber" ? { error: { code: -32000, message: "header not found", data: { why: "pruned" } } } : undefined);
    const request = { block: numberOf(6n), fullTransactions: false };
    const lean = await connectErrorOf(connectClient(f.ng.url, EthService, f.ng.key, "grpc").getBlockByNumber(request));
    const web = await connectErrorOf(connectClient(f.ng.url, EthService, f.ng.key, "grpc-web").getBlockByNumber(request));
    expect([lean.code, lean.rawMessage]).toEqual([web.code, web.rawMessage]);
    expect(lean.findDetails(JsonRpcErrorSchema)[0]).toMatchObject({ code: -32000n, message: "header not found", data: '{"why":"pruned"}' });
    const badKey = await connectErrorOf(connectClient(f.ng.url, EthService, "not-a-key-at-all", "grpc").chainId({}));
    const badKeyWeb = await connectErrorOf(connectClient(f.ng.url, EthService, "not-a-key-at-all", "grpc-web").chainId({}));
    expect([badKey.code, badKey.rawMessage, badKey.findDetails(JsonRpcErrorSchema)]).toEqual([badKeyWeb.code, badKeyWeb.rawMessage, badKeyWeb.findDetails(JsonRpcErrorSchema)]);
  });
});

describe("the gRPC contract", () => {
  it("grpc-timeout: DEADLINE_EXCEEDED, and the upstream request is cancelled", async () => {
    f.override = (r) => (r.method === "eth_getBlockByNumber" ? { delayMs: 5000, then: { forward: f.anvil.url } } : undefined);
    const err = (await getBlock(7n, { deadlineMs: 1000 }).catch((e: unknown) => e)) as grpc.ServiceError;
    expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    const sent = await f.upstream.arrived("eth_getBlockByNumber", '["0x7",true]');
    await expect.poll(() => sent.abandoned, { timeout: 5000 }).toBe(true);
  });

  it("a call with hundreds of metadata entries is served, on the lane and on Connect's handler", async () => {
    // Found from outside: Node's HTTP/2 default of 128 header pairs reset a call with 120 entries (ENHANCE_YOUR_CALM).
    const metadata = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`x-trace-${i}`, String(i)]));
    const { response } = await getBlock(0n, { metadata });
    expect(response.block?.number).toBe(0n);
    const health = await grpcCall<HealthCheckResponse>(`/${Health.typeName}/Check`, HealthCheckRequestSchema, HealthCheckResponseSchema, create(HealthCheckRequestSchema), { metadata });
    expect(health.response.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("a deadline that passes while the request body is still arriving is DEADLINE_EXCEEDED on the lanes and on Connect's handler alike", async () => {
    // Found from outside: Connect's clock runs only around its handler, so JsonRpcService and health held such a
    // stream (and the key's concurrency slot) until the 30 s request timeout, while the lean lane answered at the deadline.
    const session = http2.connect(f.ng.url);
    try {
      const statusOf = (path: string, headers: http2.OutgoingHttpHeaders): Promise<string | undefined> =>
        new Promise((resolve, reject) => {
          const stream = session.request({ ":method": "POST", ":path": path, "x-api-key": f.ng.key, ...headers }, { endStream: false });
          let status: string | undefined;
          stream.on("response", (h) => {
            status ??= (h["grpc-status"] as string | undefined) ?? (h["content-type"] === "application/json" ? `HTTP ${h[":status"]}` : undefined);
          });
          stream.on("trailers", (t) => {
            status ??= t["grpc-status"] as string | undefined;
          });
          stream.on("close", () => resolve(status));
          stream.on("error", reject);
          stream.resume();
          // The start of a frame announcing 100 bytes, and nothing more.
          stream.write(Buffer.from([0, 0, 0, 0, 100, 1, 2]));
        });
      const grpcHeaders = { "content-type": "application/grpc", te: "trailers", "grpc-timeout": "300m" };
      expect(await statusOf(`/${EthService.typeName}/GetBalance`, grpcHeaders)).toBe(String(grpc.status.DEADLINE_EXCEEDED));
      expect(await statusOf(`/${JsonRpcService.typeName}/Call`, grpcHeaders)).toBe(String(grpc.status.DEADLINE_EXCEEDED));
      expect(await statusOf(`/${Health.typeName}/Check`, grpcHeaders)).toBe(String(grpc.status.DEADLINE_EXCEEDED));
      // The Connect protocol's unary form: its error is JSON under HTTP 504.
      expect(await statusOf(`/${JsonRpcService.typeName}/Call`, { "content-type": "application/proto", "connect-timeout-ms": "300" })).toBe("HTTP 504");
      const logged = f.ng.logs.filter((l) => l.method === `${Health.typeName}/Check` || l.method === `${JsonRpcService.typeName}/Call`).map((l) => l.status);
      expect(logged.filter((status) => status === "DeadlineExceeded")).toHaveLength(3);
    } finally {
      session.close();
    }
    expect((await post(f.ng.rpcUrl, rpc("eth_chainId", []))).json.result).toBe("0x7a69");
  });

  it("a deadline longer than a timer holds (30 days and more) is served on every protocol, not failed at once", async () => {
    // Found from outside: Node's timers hold 2^31-1 ms; a month-long deadline fired at once as DEADLINE_EXCEEDED.
    const month = 30 * 24 * 3600 * 1000;
    const { response } = await getBlock(0n, { deadlineMs: 365 * 24 * 3600 * 1000 });
    expect(response.block?.hash).toHaveLength(32);
    for (const protocol of ["connect", "grpc", "grpc-web"] as const) {
      const client = connectClient(f.ng.url, EthService, f.ng.key, protocol);
      // Set as a header: connect-es's own timer would overflow on the client side.
      const deadline = { headers: protocol === "connect" ? { "connect-timeout-ms": String(month) } : { "grpc-timeout": "720H" } };
      const block = await client.getBlockByNumber({ block: numberOf(0n) }, deadline);
      expect(block.block?.hash, protocol).toHaveLength(32);
      // A server stream goes through Connect's own handler.
      const pages = [];
      for await (const page of client.streamLogs({ filter: { fromBlock: numberOf(0n), toBlock: numberOf(0n) } }, deadline)) pages.push(page);
      expect(pages.map((p) => p.toBlock), protocol).toEqual([0n]);
    }
  });

  it("a deadline under a millisecond is DEADLINE_EXCEEDED without asking the node; one longer than the protocol allows is refused", async () => {
    // Found from outside: "0m" and "1u" raced the call (4-8 of 10 answered OK, the node asked either way), and an
    // 11-digit timeout was lowered to the longest timer and taken while a 9-digit one was refused.
    const session = http2.connect(f.ng.url);
    try {
      const answer = (headers: http2.OutgoingHttpHeaders, body: Buffer): Promise<{ status: string | undefined; http: number | undefined }> =>
        new Promise((resolve, reject) => {
          const stream = session.request({ ":method": "POST", ":path": `/${EthService.typeName}/GetBalance`, "x-api-key": f.ng.key, ...headers });
          let status: string | undefined;
          let http: number | undefined;
          stream.on("response", (h) => {
            http = h[":status"];
            status ??= h["grpc-status"] as string | undefined;
          });
          stream.on("trailers", (t) => {
            status ??= t["grpc-status"] as string | undefined;
          });
          stream.on("close", () => resolve({ status, http }));
          stream.on("error", reject);
          stream.resume();
          stream.end(body);
        });
      const message = Buffer.from(toBinary(m.getBalance.input, create(m.getBalance.input, { address: new Uint8Array(20), block: { kind: { case: "tag", value: 1 } } })));
      const grpcBody = Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), message]);
      const asked = f.upstream.count("eth_getBalance");
      for (const timeout of ["0m", "0n", "1u", "999u"]) {
        for (let i = 0; i < 5; i++) expect((await answer({ "content-type": "application/grpc", te: "trailers", "grpc-timeout": timeout }, grpcBody)).status, timeout).toBe(String(grpc.status.DEADLINE_EXCEEDED));
      }
      expect((await answer({ "content-type": "application/proto", "connect-timeout-ms": "0" }, message)).http).toBe(504);
      expect(f.upstream.count("eth_getBalance")).toBe(asked);
      // grpc-js sends "0m" with under a millisecond left, then resets the stream at its deadline: the call is logged and
      // counted DeadlineExceeded, as the client saw it (found from outside: 9 of 10 logged Canceled).
      for (let i = 0; i < 5; i++) {
        const requestId = `passed-deadline-${i}`;
        const stream = session.request({ ":method": "POST", ":path": `/${EthService.typeName}/GetBalance`, "x-api-key": f.ng.key, "content-type": "application/grpc", te: "trailers", "grpc-timeout": "0m", "x-request-id": requestId });
        stream.on("error", () => {});
        stream.end(grpcBody);
        stream.close(http2.constants.NGHTTP2_CANCEL);
        await expect.poll(() => f.ng.logs.find((l) => l.msg === "request" && l.requestId === requestId)?.status, { timeout: 5000 }).toBe("DeadlineExceeded");
      }
      for (const timeout of ["99999999999H", "100000000m"]) {
        expect((await answer({ "content-type": "application/grpc", te: "trailers", "grpc-timeout": timeout }, grpcBody)).status, timeout).toBe(String(grpc.status.INVALID_ARGUMENT));
      }
      expect((await answer({ "content-type": "application/proto", "connect-timeout-ms": "12345678901" }, message)).http).toBe(400);
      // The longest the protocols allow still works.
      expect((await answer({ "content-type": "application/grpc", te: "trailers", "grpc-timeout": "99999999H" }, grpcBody)).status).toBe("0");
      expect((await answer({ "content-type": "application/proto", "connect-timeout-ms": "9999999999" }, message)).http).toBe(200);
    } finally {
      session.close();
    }
  });

  it("on Connect's own handlers too, a deadline under a millisecond is DEADLINE_EXCEEDED before the handler runs: streams, JsonRpcService, health", async () => {
    // Found from outside: streams with "0m" ran unbounded, JsonRpcService asked the node and sometimes answered OK
    // with "500u", and health answered SERVING.
    const session = http2.connect(f.ng.url);
    try {
      const statusOf = (path: string, timeout: string, body: Buffer): Promise<string | undefined> =>
        new Promise((resolve, reject) => {
          const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", "grpc-timeout": timeout, "x-api-key": f.ng.key });
          let status: string | undefined;
          stream.on("response", (h) => {
            status ??= h["grpc-status"] as string | undefined;
          });
          stream.on("trailers", (t) => {
            status ??= t["grpc-status"] as string | undefined;
          });
          stream.on("close", () => resolve(status));
          stream.on("error", reject);
          stream.resume();
          stream.end(body);
        });
      const frame = (message: Uint8Array) => Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), Buffer.from(message)]);
      const call = frame(toBinary(CallRequestSchema, create(CallRequestSchema, { method: "eth_chainId", paramsJson: "[]" })));
      const asked = f.upstream.count("eth_chainId");
      for (const timeout of ["0m", "500u", "999999n"]) {
        for (let i = 0; i < 3; i++) expect(await statusOf(`/${JsonRpcService.typeName}/Call`, timeout, call), `Call ${timeout}`).toBe(String(grpc.status.DEADLINE_EXCEEDED));
        expect(await statusOf(`/${Health.typeName}/Check`, timeout, frame(toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema)))), `Check ${timeout}`).toBe(String(grpc.status.DEADLINE_EXCEEDED));
        expect(await statusOf(`/${EthService.typeName}/SubscribeNewHeads`, timeout, frame(new Uint8Array(0))), `SubscribeNewHeads ${timeout}`).toBe(String(grpc.status.DEADLINE_EXCEEDED));
      }
      expect(f.upstream.count("eth_chainId")).toBe(asked);
    } finally {
      session.close();
    }
  });

  it("an error from a call Connect serves carries x-request-id in grpc-js's status.metadata over gRPC, and once in the head over Connect and gRPC-Web", async () => {
    // Found from outside (h94): JsonRpcService errors and a refused subscription reached grpc-js with no id in their
    // trailers, the place the README points grpc-js callers to.
    const callPath = `/${JsonRpcService.typeName}/Call`;
    const nosuch = create(CallRequestSchema, { method: "eth_nosuch", paramsJson: "[]" });
    const unary = (await grpcCall(callPath, CallRequestSchema, CallResponseSchema, nosuch, { requestId: "failed-call-1" }).catch((e: unknown) => e)) as grpc.ServiceError;
    expect([unary.code, unary.metadata.get("x-request-id")]).toEqual([grpc.status.UNIMPLEMENTED, ["failed-call-1"]]);

    const client = new grpc.Client(f.ng.address, grpc.credentials.createInsecure());
    try {
      const metadata = new grpc.Metadata();
      metadata.set("x-api-key", f.ng.key);
      metadata.set("x-request-id", "failed-stream-2");
      const refused = create(SubscribeLogsRequestSchema, { filter: { blockHash: new Uint8Array(32) } });
      const stream = client.makeServerStreamRequest(
        `/${EthService.typeName}/SubscribeLogs`,
        (m: typeof refused) => Buffer.from(toBinary(SubscribeLogsRequestSchema, m)),
        (b: Buffer) => b,
        refused,
        metadata,
      );
      stream.on("data", () => undefined);
      const err = await new Promise<grpc.ServiceError>((resolve) => stream.on("error", resolve));
      expect([err.code, err.metadata.get("x-request-id")]).toEqual([grpc.status.INVALID_ARGUMENT, ["failed-stream-2"]]);
    } finally {
      client.close();
    }

    // Connect writes an error's metadata as response headers: one id there, not two.
    const json = JSON.stringify({ method: "eth_nosuch", paramsJson: "[]" });
    const connect = await fetch(`${f.ng.url}${callPath}`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": f.ng.key, "x-request-id": "failed-call-3" }, body: json });
    expect([connect.status, connect.headers.get("x-request-id")]).toEqual([501, "failed-call-3"]);
    const message = toBinary(CallRequestSchema, nosuch);
    const web = await fetch(`${f.ng.url}${callPath}`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", "x-api-key": f.ng.key, "x-request-id": "failed-call-4" },
      body: grpcFrame(message),
    });
    await web.arrayBuffer();
    expect([web.status, web.headers.get("x-request-id")]).toEqual([200, "failed-call-4"]);
  });

  it("an unknown method is UNIMPLEMENTED naming it, in each protocol's own form, with x-request-id", async () => {
    // Found from outside: a bare HTTP 404 text/plain, which gRPC clients report as "Received HTTP status code 404".
    const path = `/${EthService.typeName}/NoSuchMethod`;
    const err = (await grpcCall(path, m.chainId.input, m.chainId.output, create(m.chainId.input), { requestId: "unknown-rpc-1" }).catch((e: unknown) => e)) as grpc.ServiceError;
    expect(err.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(err.details).toBe(`unknown method ${path}`);
    expect(err.metadata.get("x-request-id")).toEqual(["unknown-rpc-1"]);
    const connect = await fetch(`${f.ng.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect([connect.status, await connect.json(), connect.headers.get("x-request-id")?.length]).toEqual([404, { code: "unimplemented", message: `unknown method ${path}` }, 36]);
    const web = await fetch(`${f.ng.url}${path}`, { method: "POST", headers: { "content-type": "application/grpc-web+proto", "x-request-id": "unknown-rpc-2" }, body: new Uint8Array(5) });
    expect([web.status, web.headers.get("grpc-status"), web.headers.get("x-request-id")]).toEqual([200, "12", "unknown-rpc-2"]);
    // A request Connect's own handler refuses before any interceptor runs still carries the id.
    const empty = await fetch(`${f.ng.url}/${EthService.typeName}/SubscribeNewHeads`, { method: "POST", headers: { "content-type": "application/grpc-web+proto" }, body: new Uint8Array(0) });
    expect(empty.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("a Connect GET whose base64 message is malformed is invalid_argument (400), not an internal error", async () => {
    const get = (message: string) =>
      fetch(`${f.ng.url}/${EthService.typeName}/ChainId?connect=v1&encoding=json&base64=1&message=${encodeURIComponent(message)}`, { headers: { "x-api-key": f.ng.key } });
    const bad = await get("@@@");
    expect([bad.status, ((await bad.json()) as { code: string }).code, bad.headers.get("vary")]).toEqual([400, "invalid_argument", "accept-encoding, x-api-key, authorization, x-nodegate-network, origin"]);
    const good = await get(Buffer.from("{}").toString("base64url"));
    expect(good.status).toBe(200);
    expect(((await good.json()) as { chainId?: string }).chainId).toBeDefined();
  });

  it("a Connect GET whose JSON message Connect would misread (0x hex bytes, an enum not named in full) is refused as a POST is", async () => {
    const get = (message: unknown, base64 = false) => {
      const text = JSON.stringify(message);
      const query = base64 ? `base64=1&message=${Buffer.from(text).toString("base64url")}` : `message=${encodeURIComponent(text)}`;
      return fetch(`${f.ng.url}/${EthService.typeName}/GetBalance?connect=v1&encoding=json&${query}`, { headers: { "x-api-key": f.ng.key } });
    };
    const address = `0x${"44".repeat(20)}`;
    for (const base64 of [false, true]) {
      const hex = await get({ address }, base64);
      expect([hex.status, await hex.json()]).toEqual([
        400,
        { code: "invalid_argument", message: 'address: "0x4444444444444444…" is 0x hex; in JSON, bytes are base64 (these bytes are "RERERERERERERERERERERE…")' },
      ]);
      const tag = await get({ address: Buffer.alloc(20, 0x44).toString("base64"), block: { tag: "latest" } }, base64);
      expect([tag.status, ((await tag.json()) as { message: string }).message]).toEqual([400, 'block.tag: "latest" is not a BlockTag value (in JSON, an enum value is named in full, as "BLOCK_TAG_LATEST")']);
      const good = await get({ address: Buffer.alloc(20, 0x44).toString("base64"), block: { tag: "BLOCK_TAG_LATEST" } }, base64);
      expect(good.status).toBe(200);
    }
  });

  it("a Connect GET's answer, compressed as its Accept-Encoding asks, says it varies with Accept-Encoding, and with the key and network (found from outside: a shared cache could serve one key's answer to callers with none)", async () => {
    const url = `${f.ng.url}/${EthService.typeName}/GetBlockByNumber?connect=v1&encoding=json&message=${encodeURIComponent(JSON.stringify({ block: { number: "1" }, fullTransactions: true }))}`;
    const answer = await fetch(url, { headers: { "x-api-key": f.ng.key, "accept-encoding": "gzip" } });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-encoding")).toBe("gzip");
    expect(answer.headers.get("vary")).toBe("accept-encoding, x-api-key, authorization, x-nodegate-network, origin");
    await answer.arrayBuffer();
  });

  it("a call the client cancels cancels the upstream request", async () => {
    f.override = (r) => (r.method === "eth_getBlockByNumber" ? { delayMs: 5000, then: { forward: f.anvil.url } } : undefined);
    // Cancelled once the node has the request, so there is an upstream request to cancel.
    const err = (await getBlock(8n, { cancelWhen: f.upstream.arrived("eth_getBlockByNumber", '["0x8",true]') }).catch((e: unknown) => e)) as grpc.ServiceError;
    expect(err.code).toBe(grpc.status.CANCELLED);
    const sent = await f.upstream.arrived("eth_getBlockByNumber", '["0x8",true]');
    await expect.poll(() => sent.abandoned, { timeout: 5000 }).toBe(true);
  });

  it("a request larger than the body limit is refused with RESOURCE_EXHAUSTED", async () => {
    const huge = create(GetLogsRequestSchema, { filter: { address: Array.from({ length: 300_000 }, () => new Uint8Array(20)) } });
    const err = (await grpcCall(logsPath, m.getLogs.input, m.getLogs.output, huge).catch((e: unknown) => e)) as grpc.ServiceError;
    expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(err.details).toContain("larger than");
    expect((await getBlock(1n)).response.block?.number).toBe(1n); // and the connection still serves
  });

  it("gzip-compressed requests are read", async () => {
    const { response } = await getBlock(1n, { channel: { "grpc.default_compression_algorithm": 2 } });
    expect(response.block?.number).toBe(1n);
  });

  it("deflate- and br-compressed requests are read, on this lane and on the calls Connect serves (found from outside: deflate was UNIMPLEMENTED there)", async () => {
    expect((await getBlock(1n, { channel: { "grpc.default_compression_algorithm": 1 } })).response.block?.number).toBe(1n);
    const session = http2.connect(f.ng.url);
    try {
      const request = toBinary(m.getBlockByNumber.input, create(GetBlockByNumberRequestSchema, { block: numberOf(1n) }));
      const stream = session.request({ ":method": "POST", ":path": blockPath, "content-type": "application/grpc", "grpc-encoding": "br", "x-api-key": f.ng.key, te: "trailers" });
      stream.end(framed(brotliCompressSync(request)));
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve) => stream.on("trailers", resolve));
      expect(trailers["grpc-status"]).toBe("0");
      expect(fromBinary(m.getBlockByNumber.output, Buffer.concat(chunks).subarray(5)).block?.number).toBe(1n);
    } finally {
      session.close();
    }
    const health = await grpcCall<HealthCheckResponse>("/grpc.health.v1.Health/Check", HealthCheckRequestSchema, HealthCheckResponseSchema, create(HealthCheckRequestSchema), {
      channel: { "grpc.default_compression_algorithm": 1 },
    });
    expect(health.response.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("corrupt or truncated compressed data on an RPC Connect serves is INVALID_ARGUMENT, whatever the encoding", async () => {
    // Found from outside: deflate was refused there; then truncated gzip and br were INTERNAL.
    const session = http2.connect(f.ng.url);
    try {
      const statuses: string[] = [];
      const whole = Buffer.alloc(2000, 7);
      const cut = { gzip: gzipSync(whole).subarray(0, 10), br: brotliCompressSync(whole).subarray(0, 5), deflate: deflateSync(whole).subarray(0, 6) };
      for (const [encoding, body] of [
        ["deflate", Buffer.from([1, 2, 3])],
        ["gzip", Buffer.from([1, 2, 3])],
        ["br", Buffer.from([1, 2, 3])],
        ...Object.entries(cut),
      ] as [string, Buffer][]) {
        const stream = session.request({ ":method": "POST", ":path": "/grpc.health.v1.Health/Check", "content-type": "application/grpc", "grpc-encoding": encoding, te: "trailers" });
        stream.end(framed(body));
        stream.resume();
        const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve) => {
          stream.on("trailers", resolve);
          stream.on("response", (h) => h["grpc-status"] !== undefined && resolve(h));
        });
        statuses.push(String(trailers["grpc-status"]));
      }
      expect(statuses).toEqual(["3", "3", "3", "3", "3", "3"]);
    } finally {
      session.close();
    }
  });

  it("an unknown request compression is UNIMPLEMENTED, and the answer says which ones are read (grpc-accept-encoding)", async () => {
    const session = http2.connect(f.ng.url);
    try {
      const body = Buffer.concat([Buffer.from([1, 0, 0, 0, 3]), Buffer.from([1, 2, 3])]);
      const stream = session.request({ ":method": "POST", ":path": blockPath, "content-type": "application/grpc", "grpc-encoding": "snappy", "x-api-key": f.ng.key, te: "trailers" });
      stream.end(body);
      const [headers, trailers] = await new Promise<[http2.IncomingHttpHeaders, http2.IncomingHttpHeaders]>((resolve) => {
        let head: http2.IncomingHttpHeaders = {};
        stream.on("response", (h) => {
          head = h;
          // An error status that fits one head comes trailers-only.
          if (h["grpc-status"] !== undefined) resolve([h, h]);
        });
        stream.on("trailers", (t) => resolve([head, t]));
        stream.resume();
      });
      expect(headers["grpc-accept-encoding"]).toBe("gzip,deflate,br");
      expect(trailers["grpc-status"]).toBe("12");
    } finally {
      session.close();
    }
  });

  it.each([
    // Found from outside: INTERNAL here, INVALID_ARGUMENT for the same data on the RPCs Connect serves.
    ["corrupt gzip data: INVALID_ARGUMENT saying it could not be decompressed", Buffer.from([1, 0, 0, 0, 3, 1, 2, 3]), "gzip", "3", /failed to decompress the gzip message/],
    ["corrupt deflate data: the same", Buffer.from([1, 0, 0, 0, 3, 1, 2, 3]), "deflate", "3", /failed to decompress the deflate message/],
    ["corrupt br data: the same", Buffer.from([1, 0, 0, 0, 3, 1, 2, 3]), "br", "3", /failed to decompress the br message/],
    ["a prefix declaring more than was sent: INVALID_ARGUMENT saying so", Buffer.from([0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3]), undefined, "3", /cut short \(3 of the 4294967295 bytes/],
    ["reserved flag bits: INVALID_ARGUMENT", Buffer.from([0x80, 0, 0, 0, 0]), undefined, "3", /invalid message flags 0x80/],
    ["two messages for a unary call: INVALID_ARGUMENT saying so", Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), undefined, "3", /^protocol error: want exactly one message for a unary call$/],
    ["the compressed flag without grpc-encoding: INTERNAL saying so", Buffer.from([1, 0, 0, 0, 0]), undefined, "13", /^protocol error: received compressed message without grpc-encoding$/],
    // Found from outside: said "without grpc-encoding" though the header was sent, as identity.
    ["the compressed flag with grpc-encoding identity: INTERNAL naming it", Buffer.from([1, 0, 0, 0, 0]), "identity", "13", /^protocol error: received compressed message with grpc-encoding "identity"$/],
    // Found from outside: 1 MB of gzip inflated to 1 GB, stalling every caller for seconds.
    ["gzip that inflates past the body limit: RESOURCE_EXHAUSTED, without inflating it all", framed(gzipSync(Buffer.alloc(64 * 1024 * 1024))), "gzip", "8", /larger than \d+ bytes after decompression/],
  ])("%s", async (_, body, encoding, status, message) => {
    const session = http2.connect(f.ng.url);
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": blockPath,
        "content-type": "application/grpc",
        "x-api-key": f.ng.key,
        te: "trailers",
        ...(encoding === undefined ? {} : { "grpc-encoding": encoding }),
      });
      stream.end(body);
      const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve) => {
        stream.on("trailers", resolve);
        stream.on("response", (h) => h["grpc-status"] !== undefined && resolve(h));
        stream.resume();
      });
      expect(trailers["grpc-status"]).toBe(status);
      expect(decodeURIComponent(String(trailers["grpc-message"]))).toMatch(message);
    } finally {
      session.close();
    }
  });

  // Found from outside (Python grpcio): an error sent as headers, then trailers, counts as a committed response, so a
  // client's retry policy (gRFC A6) never retried nodegate's UNAVAILABLE, though the node was back within the window.
  it("an error status comes trailers-only, so a client's retry policy retries UNAVAILABLE", async () => {
    let refused = 0;
    f.override = (r) => (r.method === "eth_blockNumber" && refused++ < 2 ? { destroy: true } : undefined);
    const session = http2.connect(f.ng.url);
    try {
      const stream = session.request({ ":method": "POST", ":path": `/${EthService.typeName}/BlockNumber`, "content-type": "application/grpc", te: "trailers", "x-api-key": f.ng.key });
      stream.end(Buffer.alloc(5));
      let trailers = false;
      stream.on("trailers", () => (trailers = true));
      const head = await new Promise<http2.IncomingHttpHeaders>((resolve) => stream.on("response", resolve));
      stream.resume();
      await new Promise((resolve) => stream.on("close", resolve));
      expect([head["grpc-status"], head["x-request-id"] !== undefined, head["content-type"], trailers]).toEqual([String(grpc.status.UNAVAILABLE), true, "application/grpc+proto", false]);
    } finally {
      session.close();
    }
    const retrying = {
      methodConfig: [
        {
          name: [{ service: EthService.typeName }],
          retryPolicy: { maxAttempts: 4, initialBackoff: "0.05s", maxBackoff: "0.2s", backoffMultiplier: 2, retryableStatusCodes: ["UNAVAILABLE"] },
        },
      ],
    };
    const answered = await grpcCall<BlockNumberResponse>(`/${EthService.typeName}/BlockNumber`, m.blockNumber.input, m.blockNumber.output, create(m.blockNumber.input), {
      channel: { "grpc.service_config": JSON.stringify(retrying) },
    });
    expect(refused).toBe(3);
    expect(typeof answered.response.number).toBe("bigint");
  });

  it("x-request-id comes back in the response headers and in the log line", async () => {
    const { headers } = await getBlock(1n, { requestId: "trace-lean-42" });
    expect(headers.get("x-request-id")).toEqual(["trace-lean-42"]);
    expect(f.ng.logs.some((l) => l.requestId === "trace-lean-42" && l.door === "grpc" && l.method === "nodegate.eth.v1.EthService/GetBlockByNumber" && l.status === "ok")).toBe(true);
  });

  it("many multi-MiB answers at once on one connection", async () => {
    f.override = manyLogsAnswer();
    const client = new grpc.Client(f.ng.address, grpc.credentials.createInsecure(), { "grpc.max_receive_message_length": -1 });
    const metadata = new grpc.Metadata();
    metadata.set("x-api-key", f.ng.key);
    const request = create(GetLogsRequestSchema, { filter: { fromBlock: numberOf(9n), toBlock: numberOf(9n) } });
    const answers = await Promise.all(
      Array.from(
        { length: 8 },
        () =>
          new Promise<GetLogsResponse>((resolve, reject) =>
            client.makeUnaryRequest(
              logsPath,
              (x: Message) => Buffer.from(toBinary(m.getLogs.input, x as typeof request)),
              (b: Buffer) => fromBinary(m.getLogs.output, b),
              request,
              metadata,
              (err, res) => (err ? reject(err) : resolve(res as GetLogsResponse)),
            ),
          ),
      ),
    );
    client.close();
    for (const a of answers) {
      expect(a.logs).toHaveLength(6000);
      expect(a.logs[5999]?.logIndex).toBe(5999n);
    }
  });

  it("a client that reads slowly does not make large answers overrun the session", async () => {
    // Unsent answers count against the HTTP/2 session's memory (10 MiB); once over it, the session fails every stream.
    f.override = manyLogsAnswer();
    const session = http2.connect(f.ng.url);
    const frame = (m: Message, schema: DescMessage) => grpcFrame(toBinary(schema, m));
    const call = (path: string, body: Buffer) => {
      const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", "x-api-key": f.ng.key });
      req.end(body);
      return req;
    };
    const logsRequest = frame(create(GetLogsRequestSchema, { filter: { fromBlock: numberOf(9n), toBlock: numberOf(9n) } }), m.getLogs.input);
    const slow = Array.from({ length: 8 }, () => call(logsPath, logsRequest));
    for (const req of slow) req.pause();
    await new Promise((r) => setTimeout(r, 1000)); // nodegate answers all eight meanwhile; the client reads none
    const received = (req: http2.ClientHttp2Stream) =>
      new Promise<{ bytes: number; status: string | undefined }>((resolve, reject) => {
        let bytes = 0;
        let status: string | undefined;
        req.on("trailers", (t) => {
          status = String(t["grpc-status"]);
        });
        req.on("data", (chunk: Buffer) => {
          bytes += chunk.length;
        });
        req.on("end", () => resolve({ bytes, status }));
        req.on("error", reject);
        req.resume();
      });
    const chainId = await received(call(`/${EthService.typeName}/ChainId`, frame(create(m.chainId.input), m.chainId.input)));
    expect(chainId.status).toBe("0");
    const answers = await Promise.all(slow.map(received));
    session.close();
    for (const a of answers) {
      expect(a.status).toBe("0");
      expect(a.bytes).toBeGreaterThan(1_500_000);
    }
  });

  it("large answers Connect's handler writes, refused by the client, leave the connection serving its other calls", async () => {
    // Found from outside: grpc-go (a 4 MiB receive limit) refused a 12 MB JsonRpcService answer, which Connect had
    // handed to the session whole; the session then refused every new stream on that connection with
    // ENHANCE_YOUR_CALM for about a minute, and grpc-go does not reconnect for that.
    f.override = manyLogsAnswer(9000); // about 5.4 MB of JSON each
    const session = http2.connect(f.ng.url);
    session.on("error", () => {});
    const frame = grpcFrame;
    const call = (path: string, body: Buffer) => {
      const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", "x-api-key": f.ng.key });
      req.on("error", () => {});
      req.end(body);
      return req;
    };
    const refused = Array.from({ length: 3 }, () =>
      call(`/${JsonRpcService.typeName}/Call`, frame(toBinary(CallRequestSchema, create(CallRequestSchema, { method: "eth_getLogs", paramsJson: "[{}]" })))),
    );
    // As grpc-go does with a message over its limit: reads the start, then resets the stream.
    await Promise.all(
      refused.map(
        (req) =>
          new Promise<void>((resolve) => {
            req.once("data", () => {
              req.close(http2.constants.NGHTTP2_CANCEL);
              resolve();
            });
            req.once("close", () => resolve());
          }),
      ),
    );
    const status = (req: http2.ClientHttp2Stream) =>
      new Promise<string>((resolve) => {
        let got = "no status";
        req.on("response", (h) => {
          if (h["grpc-status"] !== undefined) got = String(h["grpc-status"]);
        });
        req.on("trailers", (t) => {
          got = String(t["grpc-status"]);
        });
        req.on("close", () => resolve(req.rstCode ? `reset ${req.rstCode}` : got));
        req.resume();
      });
    for (let i = 0; i < 5; i++) {
      expect(await status(call(`/${EthService.typeName}/ChainId`, frame(toBinary(m.chainId.input, create(m.chainId.input)))))).toBe("0");
      expect(await status(call(`/${JsonRpcService.typeName}/Call`, frame(toBinary(CallRequestSchema, create(CallRequestSchema, { method: "eth_chainId", paramsJson: "[]" })))))).toBe("0");
    }
    session.close();
  });

  it("the native path over HTTP/2 also carries several multi-MiB answers at once", async () => {
    f.override = manyLogsAnswer();
    const session = http2.connect(f.ng.url);
    const replies = await Promise.all(
      Array.from(
        { length: 6 },
        (_, i) =>
          new Promise<string>((resolve, reject) => {
            const req = session.request({ ":method": "POST", ":path": `/v3/${f.ng.key}`, "content-type": "application/json" });
            let text = "";
            req.setEncoding("utf8");
            req.on("data", (chunk: string) => {
              text += chunk;
            });
            req.on("end", () => resolve(text));
            req.on("error", reject);
            req.end(JSON.stringify(rpc("eth_getLogs", [{ fromBlock: "0x9", toBlock: "0x9" }], i)));
          }),
      ),
    );
    session.close();
    replies.forEach((text, i) => {
      const reply = JSON.parse(text) as { id: number; result: unknown[] };
      expect(reply.id).toBe(i);
      expect(reply.result).toHaveLength(6000);
    });
    expect((await post(f.ng.rpcUrl, rpc("eth_chainId", []))).json.result).toBe("0x7a69");
  });
});

/** One compressed gRPC message: flag 1, the length, the bytes. */
function framed(compressed: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head[0] = 1;
  head.writeUInt32BE(compressed.length, 1);
  return Buffer.concat([head, compressed]);
}
