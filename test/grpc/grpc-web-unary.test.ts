/**
 * gRPC-Web: the method table's unary calls, binary and text mode
 * (application/grpc-web-text, the default of Google's grpc-web browser
 * client, which Connect's handler does not speak), are served on the lane
 * core; the RPCs Connect serves (streams, JsonRpcService, health) get text
 * mode by transcoding to its binary gRPC-Web. Answers are compared across
 * the two modes, with gRPC's (grpc-js) and with a real gRPC-Web client
 * (connect-es). Requests are raw, as the protocol describes them: base64 of
 * the binary protocol's bytes in text mode.
 */
import { create, equals, fromBinary, type Message, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EthService, type GetBlockByNumberRequest, GetBlockByNumberRequestSchema, GetBlockByNumberResponseSchema, StreamLogsRequestSchema, StreamLogsResponseSchema, SubscribeNewHeadsRequestSchema, SubscribeNewHeadsResponseSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { Health, HealthCheckRequestSchema, HealthCheckResponse_ServingStatus, HealthCheckResponseSchema } from "../../gen/grpc/health/v1/health_pb.js";
import { CallRequestSchema, CallResponseSchema, JsonRpcService } from "../../gen/nodegate/jsonrpc/v1/jsonrpc_service_pb.js";
import { JsonRpcErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { connectClient } from "../support/grpc-clients.js";
import { connectErrorOf } from "../support/grpc-status.js";
import { useLaneFixture } from "../support/lane-fixture.js";

const f = useLaneFixture();
const blockPath = `/${EthService.typeName}/GetBlockByNumber`;
const numberOf = (n: bigint) => ({ kind: { case: "number" as const, value: n } });

function frame(flags: number, payload: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + payload.length);
  out[0] = flags;
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, 5);
  return out;
}

interface Frames {
  status: number;
  contentType: string | null;
  messages: Buffer[];
  trailers: Record<string, string>;
}

/** The frames of a gRPC-Web answer body (binary). */
function readFrames(status: number, contentType: string | null, body: Buffer): Frames {
  const messages: Buffer[] = [];
  const trailers: Record<string, string> = {};
  for (let at = 0; at < body.length; ) {
    const length = body.readUInt32BE(at + 1);
    const payload = body.subarray(at + 5, at + 5 + length);
    if ((body[at] as number) & 0x80) {
      for (const line of payload.toString("latin1").split("\r\n")) {
        const colon = line.indexOf(":");
        if (colon > 0) trailers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
    } else messages.push(payload);
    at += 5 + length;
  }
  return { status, contentType, messages, trailers };
}

async function call(path: string, body: string | Buffer, contentType: string, headers: Record<string, string> = {}): Promise<Frames> {
  const res = await fetch(`${f.ng.url}${path}`, { method: "POST", headers: { "content-type": contentType, "x-api-key": f.ng.key, "x-grpc-web": "1", ...headers }, body });
  const raw = Buffer.from(await res.arrayBuffer());
  const binary = contentType.startsWith("application/grpc-web-text") ? fromBase64Groups(raw.toString("latin1")) : raw;
  return readFrames(res.status, res.headers.get("content-type"), binary);
}

/** The same request in text mode and in binary gRPC-Web. */
async function bothModes(request: GetBlockByNumberRequest, headers: Record<string, string> = {}): Promise<{ text: Frames; binary: Frames }> {
  const bytes = frame(0, toBinary(GetBlockByNumberRequestSchema, request));
  const [text, binary] = await Promise.all([
    call(blockPath, bytes.toString("base64"), "application/grpc-web-text", headers),
    call(blockPath, bytes, "application/grpc-web+proto", headers),
  ]);
  return { text, binary };
}

const decodeBlock = (m: Buffer): Message => fromBinary(GetBlockByNumberResponseSchema, m);

describe("gRPC-Web", () => {
  it("answers as binary gRPC-Web does: a block with full transactions and logs, then status 0", async () => {
    const { text, binary } = await bothModes(create(GetBlockByNumberRequestSchema, { block: numberOf(f.logsBlock), fullTransactions: true }));
    expect(text.status).toBe(200);
    expect(text.contentType).toBe("application/grpc-web-text+proto");
    expect(text.messages).toHaveLength(1);
    expect(equals(GetBlockByNumberResponseSchema, decodeBlock(text.messages[0] as Buffer) as never, decodeBlock(binary.messages[0] as Buffer) as never)).toBe(true);
    expect(text.trailers["grpc-status"]).toBe("0");
    expect(binary.trailers["grpc-status"]).toBe("0");
  });

  it("a failed call carries the same trailers as binary gRPC-Web: status, message and details", async () => {
    const { text, binary } = await bothModes(create(GetBlockByNumberRequestSchema, { block: numberOf(1n) }), { "x-api-key": "no-such-key" });
    expect(text.messages).toEqual([]);
    expect(text.trailers["grpc-status"]).toBe(String(Code.Unauthenticated));
    expect(text.trailers["grpc-status-details-bin"]).toBeTruthy();
    for (const key of ["grpc-status", "grpc-message", "grpc-status-details-bin"]) expect(text.trailers[key]).toBe(binary.trailers[key]);
  });

  it("binary gRPC-Web is served on the lane: one answer with its length, logged once, equal to gRPC's; errors too", async () => {
    const request = create(GetBlockByNumberRequestSchema, { block: numberOf(f.logsBlock), fullTransactions: true });
    const res = await fetch(`${f.ng.url}${blockPath}`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", "x-api-key": f.ng.key, "x-request-id": "web-binary-1" },
      body: frame(0, toBinary(GetBlockByNumberRequestSchema, request)),
    });
    const body = Buffer.from(await res.arrayBuffer());
    expect([res.status, res.headers.get("content-type"), res.headers.get("content-length")]).toEqual([200, "application/grpc-web+proto", String(body.length)]);
    const answer = readFrames(res.status, res.headers.get("content-type"), body);
    expect(answer.trailers["grpc-status"]).toBe("0");
    const viaGrpc = await connectClient(f.ng.url, EthService, f.ng.key, "grpc").getBlockByNumber(request);
    expect(equals(GetBlockByNumberResponseSchema, decodeBlock(answer.messages[0] as Buffer) as never, viaGrpc)).toBe(true);
    expect(f.ng.logs.filter((l) => l.requestId === "web-binary-1").map((l) => [l.door, l.status])).toEqual([["grpc-web", "ok"]]);

    f.override = (r) => (r.method === "eth_getBlockByNumber" ? { error: { code: -32000, message: "header not found" } } : undefined);
    const web = await connectErrorOf(connectClient(f.ng.url, EthService, f.ng.key, "grpc-web").getBlockByNumber(request));
    const grpc = await connectErrorOf(connectClient(f.ng.url, EthService, f.ng.key, "grpc").getBlockByNumber(request));
    expect([web.code, web.rawMessage, web.findDetails(JsonRpcErrorSchema)]).toEqual([grpc.code, grpc.rawMessage, grpc.findDetails(JsonRpcErrorSchema)]);
  });

  it("a request sent as several padded base64 pieces is read whole", async () => {
    const bytes = frame(0, toBinary(GetBlockByNumberRequestSchema, create(GetBlockByNumberRequestSchema, { block: numberOf(2n) })));
    const pieces = bytes.subarray(0, 4).toString("base64") + bytes.subarray(4).toString("base64");
    expect(pieces.indexOf("=")).toBeLessThan(pieces.length - 2); // padding inside the text
    const answer = await call(blockPath, pieces, "application/grpc-web-text");
    expect(answer.trailers["grpc-status"]).toBe("0");
    expect((decodeBlock(answer.messages[0] as Buffer) as unknown as { block?: { number?: bigint } }).block?.number).toBe(2n);
  });

  it("a body that is not base64 is INVALID_ARGUMENT, and the service goes on", async () => {
    const answer = await call(blockPath, "not base64 at all!", "application/grpc-web-text");
    expect(answer.trailers["grpc-status"]).toBe(String(Code.InvalidArgument));
    expect(decodeURIComponent(answer.trailers["grpc-message"] ?? "")).toMatch(/not base64/);
    const bytes = frame(0, toBinary(GetBlockByNumberRequestSchema, create(GetBlockByNumberRequestSchema, { block: numberOf(1n) })));
    expect((await call(blockPath, bytes.toString("base64"), "application/grpc-web-text")).trailers["grpc-status"]).toBe("0");
  });

  it("grpc-timeout: a deadline that passes is DEADLINE_EXCEEDED, and the upstream request is cancelled", async () => {
    f.override = (r) => (r.method === "eth_getBlockByNumber" ? { delayMs: 5000, then: { forward: f.anvil.url } } : undefined);
    const bytes = frame(0, toBinary(GetBlockByNumberRequestSchema, create(GetBlockByNumberRequestSchema, { block: numberOf(5n) })));
    const answer = await call(blockPath, bytes.toString("base64"), "application/grpc-web-text", { "grpc-timeout": "500m" });
    expect(answer.trailers["grpc-status"]).toBe(String(Code.DeadlineExceeded));
    const sent = await f.upstream.arrived("eth_getBlockByNumber", '["0x5",false]');
    await expect.poll(() => sent.abandoned, { timeout: 5000 }).toBe(true);
  });

  it("a server stream (StreamLogs) answers as in binary gRPC-Web: every page, then status 0", async () => {
    const request = frame(0, toBinary(StreamLogsRequestSchema, create(StreamLogsRequestSchema, { filter: { fromBlock: numberOf(0n), toBlock: numberOf(f.logsBlock) } })));
    const streamPath = `/${EthService.typeName}/StreamLogs`;
    const [text, binary] = await Promise.all([
      call(streamPath, request.toString("base64"), "application/grpc-web-text"),
      call(streamPath, request, "application/grpc-web+proto"),
    ]);
    expect(text.status).toBe(200);
    expect(text.contentType).toBe("application/grpc-web-text+proto");
    expect(text.trailers["grpc-status"]).toBe("0");
    const logs = text.messages.flatMap((m) => fromBinary(StreamLogsResponseSchema, m).logs);
    expect(logs).toHaveLength(40);
    expect(text.messages).toEqual(binary.messages);
  });

  it("a subscription's last message reaches the client whole, without waiting for a later one to complete its base64 group", async () => {
    // Connect sends the answer's headers with its first message: a block is mined every 200 ms until they come, then none.
    const mined = setInterval(() => void rpc(f.anvil.url, "evm_mine", []), 200);
    // The stream is left by aborting: cancelling undici's body reader waits for the server to end the stream.
    const leave = new AbortController();
    const res = await fetch(`${f.ng.url}/${EthService.typeName}/SubscribeNewHeads`, {
      method: "POST",
      signal: leave.signal,
      headers: { "content-type": "application/grpc-web-text", "x-api-key": f.ng.key, "x-grpc-web": "1" },
      body: frame(0, toBinary(SubscribeNewHeadsRequestSchema, create(SubscribeNewHeadsRequestSchema, {}))).toString("base64"),
    }).finally(() => clearInterval(mined));
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    try {
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/grpc-web-text+proto");
      // Read as Google's grpc-web client reads it (4-character groups, padding included, as they arrive) until
      // the bytes end at a message's end. Bytes of a message held back for a later one would never come.
      let text = "";
      let frames: Buffer[] = [];
      for (;;) {
        const { value, done } = await reader.read();
        if (done) throw new Error("the stream ended");
        text += Buffer.from(value).toString("latin1");
        const whole = wholeFrames(fromBase64Groups(text.slice(0, text.length - (text.length % 4))));
        if (whole !== undefined && whole.length > 0) {
          frames = whole;
          break;
        }
      }
      const numbers = frames.map((m) => fromBinary(SubscribeNewHeadsResponseSchema, m).header?.number);
      expect(numbers.every((n) => n !== undefined && n > f.logsBlock)).toBe(true);
    } finally {
      clearInterval(mined);
      leave.abort();
    }
  });

  it("JsonRpcService and health answer in text mode as in binary gRPC-Web", async () => {
    const callPath = `/${JsonRpcService.typeName}/Call`;
    const callRequest = frame(0, toBinary(CallRequestSchema, create(CallRequestSchema, { method: "eth_getBlockByNumber", paramsJson: `["0x${f.logsBlock.toString(16)}",true]` })));
    const [text, binary] = await Promise.all([
      call(callPath, callRequest.toString("base64"), "application/grpc-web-text"),
      call(callPath, callRequest, "application/grpc-web+proto"),
    ]);
    expect(text.trailers["grpc-status"]).toBe("0");
    expect(text.messages).toEqual(binary.messages);
    expect(JSON.parse(fromBinary(CallResponseSchema, text.messages[0] as Buffer).resultJson).number).toBe(`0x${f.logsBlock.toString(16)}`);

    const health = await call(`/${Health.typeName}/Check`, frame(0, toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, {}))).toString("base64"), "application/grpc-web-text");
    expect(health.trailers["grpc-status"]).toBe("0");
    expect(fromBinary(HealthCheckResponseSchema, health.messages[0] as Buffer).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("a stream's request that is not base64 is INVALID_ARGUMENT, logged with that status, and the service goes on", async () => {
    const streamPath = `/${EthService.typeName}/StreamLogs`;
    const answer = await call(streamPath, "not base64 at all!", "application/grpc-web-text");
    expect(answer.contentType).toBe("application/grpc-web-text+proto");
    expect(answer.trailers["grpc-status"]).toBe(String(Code.InvalidArgument));
    expect(decodeURIComponent(answer.trailers["grpc-message"] ?? "")).toMatch(/not base64/);
    await expect.poll(() => f.ng.logs.some((l) => l.method === streamPath.slice(1) && l.status === "InvalidArgument")).toBe(true);
    const request = frame(0, toBinary(StreamLogsRequestSchema, create(StreamLogsRequestSchema, { filter: { blockHash: await blockHashOf(f.logsBlock) } })));
    expect((await call(streamPath, request.toString("base64"), "application/grpc-web-text")).trailers["grpc-status"]).toBe("0");
  });

  it("an unknown request compression is UNIMPLEMENTED, and the answer says which ones are read (grpc-accept-encoding)", async () => {
    for (const contentType of ["application/grpc-web+proto", "application/grpc-web-text+proto"]) {
      const body = frame(1, new Uint8Array([1, 2, 3]));
      const res = await fetch(`${f.ng.url}${blockPath}`, {
        method: "POST",
        headers: { "content-type": contentType, "grpc-encoding": "snappy", "x-api-key": f.ng.key, "x-grpc-web": "1" },
        body: contentType.includes("text") ? body.toString("base64") : body,
      });
      expect(res.headers.get("grpc-accept-encoding")).toBe("gzip,deflate,br");
      const raw = Buffer.from(await res.arrayBuffer());
      const frames = readFrames(res.status, res.headers.get("content-type"), contentType.includes("text") ? fromBase64Groups(raw.toString("latin1")) : raw);
      expect(frames.trailers["grpc-status"]).toBe("12");
    }
  });
});

/** The message frames' payloads when the bytes end where a frame ends, else undefined. */
function wholeFrames(bytes: Buffer): Buffer[] | undefined {
  const frames: Buffer[] = [];
  let at = 0;
  while (at + 5 <= bytes.length) {
    const end = at + 5 + bytes.readUInt32BE(at + 1);
    if (end > bytes.length) return undefined;
    frames.push(bytes.subarray(at + 5, end));
    at = end;
  }
  return at === bytes.length ? frames : undefined;
}

/** Decodes base64 text as Google's grpc-web client does: 4-character groups, padded or not. */
function fromBase64Groups(text: string): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; at < text.length; at += 4) parts.push(Buffer.from(text.slice(at, at + 4), "base64"));
  return Buffer.concat(parts);
}

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  return ((await res.json()) as { result: unknown }).result;
}

async function blockHashOf(n: bigint): Promise<Uint8Array> {
  const block = (await rpc(f.anvil.url, "eth_getBlockByNumber", [`0x${n.toString(16)}`, false])) as { hash: string };
  return Buffer.from(block.hash.slice(2), "hex");
}
