/**
 * limits.maxBodyBytes bounds a typed request's message, not its framing, on
 * every lane alike: a message of exactly the limit is served, one byte more
 * is RESOURCE_EXHAUSTED. Found from outside: the lean gRPC lane counted the
 * 5-byte frame header, so a 19,996-byte message was refused as "larger than
 * 20000 bytes", where Connect's lanes took 20,000.
 */
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { DEFAULT_LIMITS } from "../../src/config/config.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const LIMIT = 2000;
const path = `/${EthService.typeName}/BlockNumber`;

let upstream: ProgrammableUpstream;
let ng: TestNodegate;

beforeAll(async () => {
  upstream = await startProgrammableUpstream(() => ({ result: "0x2a" }));
  ng = await startNodegate({ upstreamUrl: upstream.url, config: { limits: { ...DEFAULT_LIMITS, maxBodyBytes: LIMIT } } });
});
afterAll(async () => {
  await ng?.close();
  await upstream?.close();
});

/** A BlockNumberRequest of exactly `size` bytes: one unknown length-delimited field (number 1000) that fills it. */
function messageOf(size: number): Buffer {
  const payload = size - 4; // a 2-byte tag (1000 << 3 | 2) and a 2-byte length
  const out = Buffer.alloc(size);
  out.set([0xc2, 0x3e, (payload & 0x7f) | 0x80, payload >> 7], 0);
  return out;
}

function frame(message: Buffer): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/** The gRPC status of a call over grpc-js, sending `message` as its request. */
function grpcStatus(message: Buffer): Promise<string> {
  const client = new grpc.Client(ng.address, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("x-api-key", ng.key);
  const identity = (b: Buffer) => b;
  return new Promise((resolve) => {
    client.makeUnaryRequest(path, identity, identity, message, metadata, (err) => {
      client.close();
      resolve(err === null ? "OK" : `${grpc.status[err.code]}: ${err.details}`);
    });
  });
}

/** The gRPC status of a gRPC-Web call (binary or text mode), read from its trailers. */
async function grpcWebStatus(message: Buffer, text: boolean): Promise<string> {
  const body = text ? frame(message).toString("base64") : frame(message);
  const res = await fetch(`${ng.url}${path}`, {
    method: "POST",
    headers: { "content-type": text ? "application/grpc-web-text" : "application/grpc-web+proto", "x-api-key": ng.key },
    body,
  });
  const raw = Buffer.from(await res.arrayBuffer());
  const bytes = text ? Buffer.from(raw.toString("latin1"), "base64") : raw;
  const trailers = bytes.toString("latin1");
  const status = /grpc-status:\s*(\d+)/.exec(trailers)?.[1];
  const words = /grpc-message:\s*([^\r\n]*)/.exec(trailers)?.[1];
  return status === "0" ? "OK" : `${grpc.status[Number(status)]}: ${decodeURIComponent(words ?? "")}`;
}

/** gRPC-Web text mode with the body's base64 in padded pieces and line breaks, as the gRPC-Web spec allows. */
async function grpcWebChunkedTextStatus(message: Buffer): Promise<string> {
  const framed = frame(message);
  const cut = [0, 7, 1000, framed.length];
  const pieces = cut.slice(1).map((end, i) => framed.subarray(cut[i], end).toString("base64"));
  const body = pieces.join("").replace(/(.{76})/g, "$1\r\n");
  expect(pieces.filter((p) => p.endsWith("=")).length).toBeGreaterThan(0);
  const res = await fetch(`${ng.url}${path}`, { method: "POST", headers: { "content-type": "application/grpc-web-text", "x-api-key": ng.key }, body });
  const trailers = Buffer.from((await res.text()).replace(/\s/g, ""), "base64").toString("latin1");
  const status = /grpc-status:\s*(\d+)/.exec(trailers)?.[1];
  return status === "0" ? "OK" : `${grpc.status[Number(status)]}: ${decodeURIComponent(/grpc-message:\s*([^\r\n]*)/.exec(trailers)?.[1] ?? "")}`;
}

/** The Connect protocol's answer to a binary unary POST. */
async function connectStatus(message: Buffer): Promise<string> {
  const res = await fetch(`${ng.url}${path}`, { method: "POST", headers: { "content-type": "application/proto", "x-api-key": ng.key }, body: message });
  if (res.status === 200) return "OK";
  const error = (await res.json()) as { code: string; message: string };
  return `${error.code}: ${error.message}`;
}

describe("a typed request's size limit is its message's, on every lane", () => {
  it.each([
    ["gRPC (grpc-js)", grpcStatus, "RESOURCE_EXHAUSTED"],
    ["gRPC-Web, binary", (m: Buffer) => grpcWebStatus(m, false), "RESOURCE_EXHAUSTED"],
    ["gRPC-Web, text", (m: Buffer) => grpcWebStatus(m, true), "RESOURCE_EXHAUSTED"],
    // Found from outside: a message of the limit sent in padded pieces, or with line breaks, was refused.
    ["gRPC-Web, text in padded pieces with line breaks", grpcWebChunkedTextStatus, "RESOURCE_EXHAUSTED"],
    ["the Connect protocol", connectStatus, "resource_exhausted"],
  ] as const)("%s: a message of the limit passes, one byte more is refused", async (_lane, status, exhausted) => {
    expect(messageOf(LIMIT)).toHaveLength(LIMIT);
    expect(await status(messageOf(LIMIT))).toBe("OK");
    expect(await status(messageOf(LIMIT + 1))).toMatch(new RegExp(`^${exhausted}: .*\\b${LIMIT}\\b`));
  });
});
