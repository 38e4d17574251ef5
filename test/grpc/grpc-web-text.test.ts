/**
 * gRPC-Web's text mode (application/grpc-web-text, the default of Google's
 * grpc-web browser client), which Connect's handler refuses: unary calls are
 * served on the lane core. Each answer is compared with the same call in
 * binary gRPC-Web, which Connect's own handler serves: the message, and the
 * trailers (status, message, details) of failed calls. Requests are raw, as
 * the protocol describes them: base64 of the binary protocol's bytes.
 */
import { create, equals, fromBinary, type Message, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EthService, type GetBlockByNumberRequest, GetBlockByNumberRequestSchema, GetBlockByNumberResponseSchema, StreamLogsRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
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
  const binary = contentType.startsWith("application/grpc-web-text") ? Buffer.from(raw.toString("latin1"), "base64") : raw;
  return readFrames(res.status, res.headers.get("content-type"), binary);
}

/** The same request in text mode (the lane) and in binary gRPC-Web (Connect's own handler). */
async function bothModes(request: GetBlockByNumberRequest, headers: Record<string, string> = {}): Promise<{ text: Frames; binary: Frames }> {
  const bytes = frame(0, toBinary(GetBlockByNumberRequestSchema, request));
  const [text, binary] = await Promise.all([
    call(blockPath, bytes.toString("base64"), "application/grpc-web-text", headers),
    call(blockPath, bytes, "application/grpc-web+proto", headers),
  ]);
  return { text, binary };
}

const decodeBlock = (m: Buffer): Message => fromBinary(GetBlockByNumberResponseSchema, m);

describe("gRPC-Web text mode", () => {
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

  it("server streams are not served in text mode (415, from Connect)", async () => {
    const bytes = frame(0, toBinary(StreamLogsRequestSchema, create(StreamLogsRequestSchema, {})));
    const res = await fetch(`${f.ng.url}/${EthService.typeName}/StreamLogs`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web-text", "x-api-key": f.ng.key },
      body: bytes.toString("base64"),
    });
    expect(res.status).toBe(415);
    await res.arrayBuffer();
  });
});
