/**
 * Unary gRPC-Web calls of the method table's RPCs, over HTTP/1.1 or HTTP/2,
 * served on the lane core (unary-call.ts) rather than Connect's universal
 * handler, which costs several times the CPU per call: binary
 * (application/grpc-web+proto, what connect-web and improbable-eng's client
 * send) and text mode (application/grpc-web-text: the same bytes in base64,
 * the default of Google's grpc-web browser client, which Connect does not
 * speak). The request is one gRPC-Web frame; the answer is the message
 * frame and the trailer frame (grpc-status, grpc-message and
 * grpc-status-details-bin, as Connect writes them for binary gRPC-Web),
 * under HTTP 200. The RPCs Connect serves get text mode from
 * grpc-web-text-transcoder.ts.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { setTrailerStatus, trailerFlag, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import { decodeBase64Pieces } from "../codec/base64-pieces.js";
import type { Gateway } from "../gateway.js";
import type { NodeRequest, NodeResponse } from "../http/http-types.js";
import { REQUEST_ID_HEADER } from "../observability/request-log.js";
import { ACCEPTED_ENCODINGS, grpcProtocol } from "./grpc-unary.js";
import { FRAME_HEADER } from "./unary-routes.js";
import { HttpExchange } from "./http-exchange.js";
import { serveUnary, type UnaryProtocol } from "./unary-call.js";
import type { UnaryRoute } from "./unary-routes.js";

const TEXT_CONTENT_TYPE = /^application\/grpc-web-text(?:\+proto)?$/i;
const BINARY_CONTENT_TYPE = /^application\/grpc-web(?:\+proto)?$/i;
export const GRPC_WEB_BINARY_CONTENT_TYPE = "application/grpc-web+proto";
export const GRPC_WEB_TEXT_CONTENT_TYPE = "application/grpc-web-text+proto";

/** The bytes of a base64 request body (several padded texts back to back are read as one: base64-pieces.ts). */
export function fromBase64(body: Buffer): Buffer {
  const decoded = decodeBase64Pieces(body);
  if (decoded === undefined) throw new ConnectError("protocol error: the gRPC-Web text body is not base64", Code.InvalidArgument);
  return decoded;
}

/** A gRPC-Web trailer frame: the status trailers, as Connect's gRPC-Web handler serializes them. */
export function trailerFrame(error: ConnectError | undefined): Buffer {
  const trailers = new Headers();
  if (error === undefined) trailers.set("grpc-status", "0");
  else setTrailerStatus(trailers, error);
  const payload = trailerSerialize(trailers);
  const frame = Buffer.alloc(FRAME_HEADER + payload.length);
  frame[0] = trailerFlag;
  frame.writeUInt32BE(payload.length, 1);
  frame.set(payload, FRAME_HEADER);
  return frame;
}

export const isGrpcWebText = (contentType: string | undefined): boolean => contentType !== undefined && TEXT_CONTENT_TYPE.test(contentType);

/** gRPC's framing, timeout and answer. */
const binaryProtocol: UnaryProtocol = { ...grpcProtocol, door: "grpc-web" };

/** The same; the request body is base64 of it. */
const textProtocol: UnaryProtocol = {
  ...grpcProtocol,
  door: "grpc-web",
  // Base64 may come in padded chunks and with line breaks: room for them, as Connect's transcoder gives; the message
  // itself is held to the limit once decoded (found from outside: a message of the limit in three chunks was refused).
  bodyBytes: (maxMessageBytes) => Math.ceil(grpcProtocol.bodyBytes(maxMessageBytes) / 3) * 8 + 64,
  request: (body, header, route, maxBytes) => grpcProtocol.request(fromBase64(body), header, route, maxBytes),
};

/** Takes a request when it is a unary gRPC-Web call it serves (returns true); the rest is left to Connect. */
export type GrpcWebUnaryHandler = (req: NodeRequest, res: NodeResponse) => boolean;

export function createGrpcWebUnaryHandler(gateway: Gateway, routes: ReadonlyMap<string, UnaryRoute>): GrpcWebUnaryHandler {
  return (req, res) => {
    if (req.method !== "POST") return false;
    const route = routes.get(req.url ?? "");
    if (route === undefined) return false;
    const contentType = req.headers["content-type"];
    if (contentType === undefined) return false;
    if (BINARY_CONTENT_TYPE.test(contentType)) serveUnary(gateway, route, binaryProtocol, new GrpcWebExchange(req, res, false));
    else if (TEXT_CONTENT_TYPE.test(contentType)) serveUnary(gateway, route, textProtocol, new GrpcWebExchange(req, res, true));
    else return false;
    return true;
  };
}

/** A unary gRPC-Web call on an HTTP/1.1 or HTTP/2 request and response: the status is in the trailer frame. */
class GrpcWebExchange extends HttpExchange {
  readonly #text: boolean;

  constructor(req: NodeRequest, res: NodeResponse, text: boolean) {
    super(req, res);
    this.#text = text;
  }

  answer(frame: Buffer, requestId: string): void {
    this.#send(Buffer.concat([frame, trailerFrame(undefined)]), requestId);
  }

  answerError(error: ConnectError, requestId: string): void {
    // The id goes in the head (#send); the trailer frame, written from the error's metadata, would say it again
    // (found from outside: connect-es read "id, id").
    error.metadata.delete(REQUEST_ID_HEADER);
    this.#send(trailerFrame(error), requestId);
  }

  #send(bytes: Buffer, requestId: string): void {
    const body = this.#text ? bytes.toString("base64") : bytes;
    const contentType = this.#text ? GRPC_WEB_TEXT_CONTENT_TYPE : GRPC_WEB_BINARY_CONTENT_TYPE;
    // grpc-accept-encoding, as on gRPC: the compressions read (the gRPC compression spec wants it on an UNIMPLEMENTED one).
    this.res.writeHead(200, {
      "content-type": contentType,
      "content-length": Buffer.byteLength(body),
      "grpc-accept-encoding": ACCEPTED_ENCODINGS,
      [REQUEST_ID_HEADER]: requestId,
    });
    this.res.end(body);
  }
}
