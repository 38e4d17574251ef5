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
 * (identity, gzip, deflate or br requests), grpc-timeout, cancellation when the
 * client resets the stream, status in trailers with grpc-status-details-bin
 * carrying the same details, x-request-id, one log line per call. Answers are
 * not compressed.
 */
import { brotliDecompressSync, gunzipSync, inflateSync, type ZlibOptions } from "node:zlib";
import { constants, type IncomingHttpHeaders, type ServerHttp2Stream } from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import type { Gateway } from "../gateway.js";
import { REQUEST_ID_HEADER } from "../observability/request-log.js";
import { writePieces } from "../http/response-body.js";
import { decodeGrpcMessage, reencodeGrpcMessageIn } from "./grpc-message.js";
import { decompressionError } from "./compressions.js";
import { fitStatus, listSize, statusSizeLimit } from "./status-size.js";
import { parseBinary, serveUnary, type UnaryExchange, type UnaryProtocol } from "./unary-call.js";
import { encodeAnswer, FRAME_HEADER, plainHeaders, type UnaryRoute } from "./unary-routes.js";

const CONTENT_TYPE = "application/grpc+proto";
const OK_TRAILERS = { "grpc-status": "0" };
/** Answers larger than this leave in pieces as the stream drains (see response-body.ts). */
const PIECE = 64 * 1024;

/** Reads the one message of a unary request body; throws ConnectError as Connect words it. */
function readMessage(body: Buffer, encoding: string | undefined, maxBytes: number): Uint8Array {
  if (body.length < FRAME_HEADER) throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  const flags = body[0] as number;
  // Only the compression bit is defined for a request message; the others are reserved.
  if ((flags & 0xfe) !== 0) throw new ConnectError(`protocol error: invalid message flags 0x${flags.toString(16)}`, Code.InvalidArgument);
  const length = body.readUInt32BE(1);
  if (body.length < FRAME_HEADER + length) {
    throw new ConnectError(`protocol error: the message is cut short (${body.length - FRAME_HEADER} of the ${length} bytes its prefix declares)`, Code.InvalidArgument);
  }
  // Exact whatever the body's encoding (text mode's base64 rounds the body's bound up).
  if (length > maxBytes) throw new ConnectError(`message larger than ${maxBytes} bytes`, Code.ResourceExhausted);
  if (body.length > FRAME_HEADER + length) {
    throw new ConnectError("protocol error: want exactly one message for a unary call", Code.InvalidArgument);
  }
  const payload = body.subarray(FRAME_HEADER);
  if ((flags & 1) === 0) return payload;
  switch (encoding) {
    case "gzip":
      return decompressed(payload, gunzipSync, "gzip", maxBytes);
    case "deflate":
      return decompressed(payload, inflateSync, "deflate", maxBytes);
    case "br":
      return decompressed(payload, brotliDecompressSync, "br", maxBytes);
    case undefined:
      throw new ConnectError("protocol error: received compressed message without grpc-encoding", Code.Internal);
    case "identity":
      throw new ConnectError('protocol error: received compressed message with grpc-encoding "identity"', Code.Internal);
    default:
      throw new ConnectError(`unknown compression "${encoding}": supported encodings are ${ACCEPTED_ENCODINGS}`, Code.Unimplemented);
  }
}

/**
 * A compressed message's bytes, at most `maxBytes` of them (the body limit:
 * a megabyte of gzip can inflate to a gigabyte, all of it held while it is
 * made); failures are answered as on Connect's handlers (decompressionError).
 */
function decompressed(payload: Uint8Array, inflate: (data: Uint8Array, options: ZlibOptions) => Buffer, encoding: string, maxBytes: number): Buffer {
  try {
    return inflate(payload, { maxOutputLength: maxBytes });
  } catch (err) {
    throw decompressionError(err, encoding, maxBytes);
  }
}

/** Request compressions the lean lanes read (gRPC and gRPC-Web). */
export const ACCEPTED_ENCODINGS = "gzip,deflate,br";

/** A failed call's status fields, grpc-message encoded as the gRPC spec says. */
export function errorStatus(error: ConnectError): Record<string, string> {
  const fields = plainHeaders(setTrailerStatus(new Headers(), error));
  reencodeGrpcMessageIn(fields);
  return fields;
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
    serveUnary(gateway, route, grpcProtocol, new GrpcExchange(stream, headers));
    return true;
  };
}

/** Shared, so that the listener left on a finished stream holds nothing of its call. */
function ignoreStreamError(): void {}

/** The gRPC lane's protocol; gRPC-Web's (grpc-web-unary.ts) differs only in the answer's framing, and in text mode in how the request body is read. */
export const grpcProtocol: UnaryProtocol = {
  door: "grpc",
  timeout: (header) => parseTimeout(header.get("grpc-timeout"), Number.MAX_SAFE_INTEGER),
  bodyBytes: (maxMessageBytes) => FRAME_HEADER + maxMessageBytes,
  request: (body, header, route, maxBytes) => parseBinary(route.spec.rpc.input, readMessage(body, header.get("grpc-encoding") ?? undefined, maxBytes)),
  answer: (route, result) => encodeAnswer(route, result, true),
};

/** A unary gRPC call on its HTTP/2 stream: the status goes in trailers, the answer in one length-prefixed message. */
class GrpcExchange implements UnaryExchange {
  #responded = false;

  constructor(
    private readonly stream: ServerHttp2Stream,
    readonly headers: IncomingHttpHeaders,
  ) {
    // Stream errors (a reset, a broken connection) end in "close", which cancels the call.
    stream.on("error", ignoreStreamError);
  }

  get body(): ServerHttp2Stream {
    return this.stream;
  }

  whenDone(fn: () => void): void {
    this.stream.once("close", fn);
  }

  open(): boolean {
    return !(this.stream.destroyed || this.stream.closed);
  }

  answer(frame: Buffer, requestId: string): void {
    this.#respond(OK_TRAILERS, requestId, frame);
  }

  answerError(error: ConnectError, requestId: string): void {
    const status = errorStatus(error);
    const limit = statusSizeLimit(this.stream.session);
    const head = { "content-type": CONTENT_TYPE, "grpc-accept-encoding": ACCEPTED_ENCODINGS, [REQUEST_ID_HEADER]: requestId, ...status };
    if (listSize(head) <= limit) {
      // Trailers-Only (one HEADERS frame that ends the stream): a client takes a call whose response headers came as
      // committed, so its retry policy (gRFC A6) never retried an UNAVAILABLE sent as headers, then trailers.
      this.#responded = true;
      this.stream.respond({ ":status": 200, ...head }, { endStream: true });
      return;
    }
    // A status too large for one head with the rest (a long revert) goes in trailers of its own, with more room.
    fitStatus(status, limit);
    this.#respond(status, requestId, undefined);
  }

  release(): void {
    this.stream.removeAllListeners("wantTrailers");
  }

  delivered(): boolean {
    // Trailers wait for the answer's data to be handed to HTTP/2, so sent trailers (or an error's trailers-only head)
    // mean a whole answer, unless the client cancelled: its reset can arrive after the answer went out (it ended its
    // body first, then reset).
    const sent = this.stream.sentTrailers !== undefined || (this.#responded && this.stream.sentHeaders?.["grpc-status"] !== undefined);
    return sent && this.stream.rstCode !== constants.NGHTTP2_CANCEL;
  }

  answeredElsewhere(): ConnectError | undefined {
    if (this.#responded) return undefined;
    // The drain refuses a request still arriving (in-flight.ts): not the client's cancel.
    if (this.stream.rstCode === constants.NGHTTP2_REFUSED_STREAM) return new ConnectError("refused: nodegate is shutting down", Code.Unavailable);
    if (!this.stream.headersSent) return undefined;
    // The session's request deadline (client-timeouts.ts) answers a request that never arrived whole, trailers-only.
    const status = this.stream.sentHeaders["grpc-status"];
    if (status === undefined) return undefined;
    const message = this.stream.sentHeaders["grpc-message"];
    return new ConnectError(typeof message === "string" ? decodeGrpcMessage(message) : "", Number(status) as Code);
  }

  #respond(trailers: Record<string, string>, requestId: string, message: Buffer | undefined): void {
    const stream = this.stream;
    this.#responded = true;
    // grpc-accept-encoding says which request compressions this lane reads (the gRPC compression spec wants it on an UNIMPLEMENTED one).
    stream.respond({ ":status": 200, "content-type": CONTENT_TYPE, "grpc-accept-encoding": ACCEPTED_ENCODINGS, [REQUEST_ID_HEADER]: requestId }, { waitForTrailers: true });
    stream.once("wantTrailers", () => stream.sendTrailers(trailers));
    if (message === undefined) stream.end();
    else if (message.length <= PIECE) stream.end(message);
    else writePieces(stream, [message]);
  }
}
