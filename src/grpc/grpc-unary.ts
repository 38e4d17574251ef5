/**
 * The typed door's fast lane: unary gRPC (application/grpc over HTTP/2, as
 * @grpc/grpc-js and connect-es's gRPC transport send it) for the method
 * table's RPCs, served straight on the HTTP/2 stream. The node's result goes
 * from JSON text to the response's protobuf bytes in one pass
 * (binary-transcoder.ts), falling back to the object path when the fast path
 * gives up. The Connect protocol's binary unary calls have a lane of their
 * own (connect-unary.ts); everything else (gRPC-Web, gRPC with JSON payloads,
 * JsonRpcService) stays with Connect.
 *
 * Same contract as Connect's gRPC handler: length-prefixed messages
 * (identity, gzip or deflate requests), grpc-timeout, cancellation when the
 * client resets the stream, status in trailers with grpc-status-details-bin
 * carrying the same details, x-request-id, one log line per call. Answers are
 * not compressed.
 */
import { gunzipSync, inflateSync } from "node:zlib";
import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { CallCancellation } from "../call-signal.js";
import type { Gateway } from "../gateway.js";
import { logTypedCall, REQUEST_ID_HEADER, requestIdFrom } from "../observability/request-log.js";
import { writePieces } from "../response-body.js";
import { toConnectError } from "./errors.js";
import { reencodeGrpcMessageIn } from "./grpc-message.js";
import { invokeTyped } from "./typed-services.js";
import { encodeAnswer, headerSource, type UnaryRoute } from "./unary-routes.js";

/** The gRPC frame header: a compression flag and a 4-byte big-endian length. */
const FRAME_HEADER = 5;
const CONTENT_TYPE = "application/grpc+proto";
const OK_TRAILERS = { "grpc-status": "0" };
/** Answers larger than this leave in pieces as the stream drains (see response-body.ts). */
const PIECE = 64 * 1024;

/** Reads the one message of a unary request body; throws ConnectError as Connect words it. */
function readMessage(body: Buffer, encoding: string | undefined): Uint8Array {
  if (body.length < FRAME_HEADER) throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  const flags = body[0] as number;
  const length = body.readUInt32BE(1);
  if (body.length !== FRAME_HEADER + length) {
    throw new ConnectError("protocol error: want exactly one message for a unary call", Code.InvalidArgument);
  }
  const payload = body.subarray(FRAME_HEADER);
  if ((flags & 1) === 0) return payload;
  switch (encoding) {
    case "gzip":
      return gunzipSync(payload);
    case "deflate":
      return inflateSync(payload);
    case undefined:
    case "identity":
      throw new ConnectError("protocol error: received compressed message without grpc-encoding", Code.Internal);
    default:
      throw new ConnectError(`unknown compression "${encoding}": supported encodings are gzip, deflate`, Code.Unimplemented);
  }
}

/** A failed call's status trailers, grpc-message encoded as the gRPC spec says. */
function errorTrailers(error: ConnectError): Record<string, string> {
  const trailers = plain(setTrailerStatus(new Headers(), error));
  reencodeGrpcMessageIn(trailers);
  return trailers;
}

/** Headers (or trailers) as HTTP/2 wants them, from a fetch Headers. */
function plain(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, key) => {
    out[key] = value;
  });
  return out;
}

/** Takes an HTTP/2 stream when it is a unary gRPC call it serves (returns true); the rest is left to Connect. */
export type GrpcUnaryHandler = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => boolean;

export function createGrpcUnaryHandler(gateway: Gateway, routes: ReadonlyMap<string, UnaryRoute>): GrpcUnaryHandler {
  return (stream, headers) => {
    if (headers[":method"] !== "POST") return false;
    const contentType = headers["content-type"];
    if (contentType !== "application/grpc" && contentType !== CONTENT_TYPE) return false;
    const route = routes.get(headers[":path"] ?? "");
    if (route === undefined) return false;
    serve(gateway, route, stream, headers);
    return true;
  };
}

/** Shared, so that the listener left on a finished stream holds nothing of its call. */
function ignoreStreamError(): void {}

function serve(gateway: Gateway, route: UnaryRoute, stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
  const started = performance.now();
  const header = headerSource(headers);
  const requestId = requestIdFrom(header.get(REQUEST_ID_HEADER));
  const controller = new CallCancellation();
  let answered = false;
  let deadline: NodeJS.Timeout | undefined;

  const finish = (error: ConnectError | undefined, message?: Uint8Array): void => {
    if (answered) return;
    answered = true;
    if (deadline !== undefined) clearTimeout(deadline);
    logTypedCall(gateway.log, gateway.metrics, "grpc", route.method, requestId, started, error);
    if (stream.destroyed || stream.closed) return;
    const trailers = error === undefined ? OK_TRAILERS : errorTrailers(error);
    stream.respond({ ":status": 200, "content-type": CONTENT_TYPE, [REQUEST_ID_HEADER]: requestId }, { waitForTrailers: true });
    stream.once("wantTrailers", () => stream.sendTrailers(trailers));
    if (message === undefined) stream.end();
    else if (message.length <= PIECE) stream.end(message);
    else writePieces(stream, [message]);
  };
  const fail = (err: unknown): void => {
    const e = toConnectError(err);
    e.metadata.set(REQUEST_ID_HEADER, requestId);
    finish(e);
  };

  const chunks: Buffer[] = [];
  let size = 0;
  const limit = gateway.limits.maxBodyBytes;
  const onData = (chunk: Buffer): void => {
    if (answered) return;
    size += chunk.length;
    if (size > limit) {
      // The same bound as the native path's body: a request this large is refused, not buffered.
      chunks.length = 0;
      fail(new ConnectError(`message larger than ${limit} bytes`, Code.ResourceExhausted));
      return;
    }
    chunks.push(chunk);
  };
  const onEnd = (): void => {
    if (answered) return;
    let request;
    try {
      const bytes = readMessage(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size), header.get("grpc-encoding") ?? undefined);
      try {
        request = fromBinary(route.spec.rpc.input, bytes);
      } catch (err) {
        throw new ConnectError(`parse binary: ${(err as Error).message}`, Code.Internal);
      }
    } catch (err) {
      fail(err);
      return;
    }
    invokeTyped(gateway, route.spec, request, header, controller.signal).then((result) => {
      if (answered) return;
      const frame = encodeAnswer(route, result, FRAME_HEADER);
      frame[0] = 0;
      frame.writeUInt32BE(frame.length - FRAME_HEADER, 1);
      finish(undefined, frame);
    }).catch(fail);
  };

  // Stream errors (a reset, a broken connection) end in "close", which cancels the call.
  stream.on("error", ignoreStreamError);
  stream.once("close", () => {
    // The closed stream outlives the call until a full GC (scavenges keep it, and what it
    // references, alive): the call's listeners leave it, so the call's objects die young.
    stream.removeListener("data", onData);
    stream.removeListener("end", onEnd);
    stream.removeAllListeners("wantTrailers");
    if (!answered) {
      answered = true;
      if (deadline !== undefined) clearTimeout(deadline);
      controller.abort();
      logTypedCall(gateway.log, gateway.metrics, "grpc", route.method, requestId, started, new ConnectError("the client cancelled the call", Code.Canceled));
    }
  });
  const timeout = parseTimeout(header.get("grpc-timeout"), Number.MAX_SAFE_INTEGER);
  if (timeout.error !== undefined) {
    fail(timeout.error);
    stream.resume();
    return;
  }
  if (timeout.timeoutMs !== undefined) {
    deadline = setTimeout(() => {
      fail(new ConnectError("the operation timed out", Code.DeadlineExceeded));
      controller.abort();
    }, timeout.timeoutMs);
  }

  stream.on("data", onData);
  stream.once("end", onEnd);
}
