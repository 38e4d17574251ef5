/**
 * What the lean unary lanes (gRPC in grpc-unary.ts, the Connect protocol in
 * connect-unary.ts) share: the method table's RPCs by request path, each
 * with its result transcoder, and the answer written as protobuf bytes after
 * the room a lane's framing needs.
 */
import type { IncomingHttpHeaders } from "node:http";
import { toBinary } from "@bufbuild/protobuf";
import { BinaryCompiler, ResultTranscoder } from "../codec/binary-transcoder.js";
import { ethBinarySpecials } from "../codec/eth-binary.js";
import type { Gateway } from "../gateway.js";
import type { MethodSpec } from "../methods/method-table.js";
import { ChunkedResult, type UpstreamResult } from "../upstream/reply.js";
import { decodeResult, type HeaderSource } from "./typed-services.js";

export interface UnaryRoute {
  spec: MethodSpec;
  /** The method's label in logs and metrics, as the Connect interceptor writes it. */
  method: string;
  /** The fast path for the result, when the response type has one. */
  transcoder: ResultTranscoder | undefined;
}

/** Every method table RPC by its request path ("/nodegate.eth.v1.EthService/GetBalance"). */
export function compileUnaryRoutes(gateway: Gateway): ReadonlyMap<string, UnaryRoute> {
  const compiler = new BinaryCompiler(gateway.table.registry, ethBinarySpecials);
  const routes = new Map<string, UnaryRoute>();
  for (const spec of gateway.table.all()) {
    const method = `${spec.service.typeName}/${spec.rpc.name}`;
    routes.set(`/${method}`, { spec, method, transcoder: ResultTranscoder.compile(compiler, spec.rpc.output) });
  }
  return routes;
}

/** A typed call's metadata read from a Node header object. */
export function headerSource(headers: IncomingHttpHeaders): HeaderSource {
  return {
    get(name) {
      const v = headers[name];
      return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v;
    },
  };
}

/** Headers (or trailers) as Node's HTTP APIs take them, from a fetch Headers (a ConnectError's metadata). */
export function plainHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, key) => {
    out[key] = value;
  });
  return out;
}

/**
 * The transcoder reads the result in one piece, synchronously, and keeps
 * nothing of it: a chunked reply is joined into this reused buffer rather
 * than a fresh multi-MiB allocation per call (page faults, GC).
 */
let scratch = Buffer.allocUnsafeSlow(0);
const SCRATCH_LIMIT = 64 * 1024 * 1024;

function inOnePiece(result: UpstreamResult): UpstreamResult {
  if (!(result instanceof ChunkedResult)) return result;
  let total = 0;
  for (const chunk of result.chunks) total += chunk.length;
  if (total > SCRATCH_LIMIT) return result;
  if (scratch.length < total) scratch = Buffer.allocUnsafeSlow(Math.max(total, scratch.length * 2));
  let at = 0;
  for (const chunk of result.chunks) {
    scratch.set(chunk, at);
    at += chunk.length;
  }
  return { body: scratch, start: result.start, end: result.end };
}

/**
 * The node's result as the response message's bytes, after `room` bytes the
 * caller fills in (the gRPC frame header; none for Connect). The transcoder
 * writes it in one pass; when it gives up, the object path does (and words
 * any decoding error).
 */
export function encodeAnswer(route: UnaryRoute, result: UpstreamResult, room: number): Buffer {
  const text = inOnePiece(result);
  const fast = route.transcoder?.write(text.body, text.start, text.end, room);
  if (fast !== undefined) return Buffer.from(fast.buffer, fast.byteOffset, fast.length);
  const encoded = toBinary(route.spec.rpc.output, decodeResult(route.spec, result));
  const message = Buffer.allocUnsafe(room + encoded.length);
  message.set(encoded, room);
  return message;
}
