/**
 * What the lean unary lanes (gRPC in grpc-unary.ts, the Connect protocol in
 * connect-unary.ts) share: the method table's RPCs by request path, each
 * with its result transcoder, and the answer written as protobuf bytes after
 * the room a lane's framing needs.
 */
import type { IncomingHttpHeaders } from "node:http";
import { toBinary } from "@bufbuild/protobuf";
import { keptCopy } from "../cache/kept-copy.js";
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
  /** What the RPC's JSON answers are kept under in a shared result's encodings (its protobuf bytes are kept under `spec`). */
  jsonAnswers: object;
}

/** Every method table RPC by its request path ("/nodegate.eth.v1.EthService/GetBalance"). */
export function compileUnaryRoutes(gateway: Gateway): ReadonlyMap<string, UnaryRoute> {
  const compiler = new BinaryCompiler(gateway.table.registry, ethBinarySpecials);
  const routes = new Map<string, UnaryRoute>();
  for (const spec of gateway.table.all()) {
    const method = `${spec.service.typeName}/${spec.rpc.name}`;
    routes.set(`/${method}`, { spec, method, transcoder: ResultTranscoder.compile(compiler, spec.rpc.output), jsonAnswers: {} });
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

/** The gRPC frame header: a compression flag and a 4-byte big-endian length. */
export const FRAME_HEADER = 5;

/**
 * The node's result as the response message's bytes, in a gRPC frame
 * (`framed`: an uncompressed message's header before them) or bare (the
 * Connect protocol). The transcoder writes it in one pass; when it gives up,
 * the object path does (and words any decoding error). The bytes returned
 * may be shared by later calls (see sharedAnswer): nobody writes into them.
 */
export function encodeAnswer(route: UnaryRoute, result: UpstreamResult, framed: boolean): Buffer {
  const frame = sharedAnswer(result, route.spec, FRAME_HEADER, () => encodeFrame(route, result));
  return framed ? frame : frame.subarray(FRAME_HEADER);
}

function encodeFrame(route: UnaryRoute, result: UpstreamResult): Buffer {
  const text = inOnePiece(result);
  const fast = route.transcoder?.write(text.body, text.start, text.end, FRAME_HEADER);
  let frame: Buffer;
  if (fast !== undefined) {
    frame = Buffer.from(fast.buffer, fast.byteOffset, fast.length);
  } else {
    const encoded = toBinary(route.spec.rpc.output, decodeResult(route.spec, result));
    frame = Buffer.allocUnsafe(FRAME_HEADER + encoded.length);
    frame.set(encoded, FRAME_HEADER);
  }
  frame[0] = 0;
  frame.writeUInt32BE(frame.length - FRAME_HEADER, 1);
  return frame;
}

/**
 * The answer `make` writes for `result`, made once for every call that gets
 * the same result (a stored answer, for as long as the cache keeps it; one
 * shared by coalesced callers: UpstreamResult.encodings) and kept under
 * `key`, when it is no larger than the answer's JSON (`framing` bytes before
 * it not counted): the typed copies can at most double what the cache's byte
 * budget holds (protobuf is about half the JSON of the same block or logs:
 * hex becomes bytes, keys go). The bytes returned may be shared: nobody
 * writes into them.
 */
export function sharedAnswer(result: UpstreamResult, key: object, framing: number, make: () => Buffer): Buffer {
  const encodings = result.encodings;
  const kept = encodings?.get(key);
  if (kept !== undefined) return kept;
  const made = make();
  if (encodings === undefined || made.length - framing > result.end - result.start) return made;
  const keep = keptCopy(made);
  encodings.set(key, keep);
  keptAnswers.add(keep);
  return keep;
}

/** Answers sharedAnswer kept, which later calls get again (the same Buffer each time). */
const keptAnswers = new WeakSet<Uint8Array>();

/** Whether `answer` is one sharedAnswer kept: what is made of it (a compressed copy) can be kept beside it. */
export function isKeptAnswer(answer: Uint8Array): boolean {
  return keptAnswers.has(answer);
}
