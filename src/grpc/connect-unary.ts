/**
 * The typed door's fast lane for the Connect protocol: unary POSTs (binary
 * application/proto, what connect-es clients on Node send by default, and
 * application/json, what browsers and curl send) for the method table's
 * RPCs, over HTTP/1.1 or HTTP/2, served on the request and response without
 * Connect's universal handler. Binary answers are written by the same
 * one-pass transcoder as the gRPC lane's (unary-routes.ts).
 *
 * Same contract as Connect's handler: connect-timeout-ms, cancellation when
 * the client goes away, errors as Connect's JSON error body under the HTTP
 * status Connect gives each code, with the same details, x-request-id, one
 * log line per call. JSON is read and written as Connect does (unknown
 * members ignored) and its answers are compressed as Connect compresses them
 * (the first of gzip, br or deflate that Accept-Encoding lists, from 1 KiB). Binary
 * answers are not compressed, as on the gRPC lane: their callers are
 * services, and gzip would cost more CPU than the call. Left to Connect: GET
 * requests, compressed requests, and everything that is not a method table
 * RPC.
 */
import type { OutgoingHttpHeaders } from "node:http";
import { fromJsonString, toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { compressionBrotli, compressionDeflate, compressionGzip } from "./compressions.js";
import { codeToHttpStatus, errorToJsonBytes, parseTimeout } from "@connectrpc/connect/protocol-connect";
import { keptCopy } from "../cache/kept-copy.js";
import { holdsMoreJsonContainers, MAX_JSON_CONTAINERS } from "../codec/json-weight.js";
import { tooManyJsonContainers } from "../errors/catalogue.js";
import type { Gateway } from "../gateway.js";
import type { NodeRequest, NodeResponse } from "../http/http-types.js";
import { REQUEST_ID_HEADER } from "../observability/request-log.js";
import { endWithParts } from "../http/response-body.js";
import { toConnectError } from "./errors.js";
import { decodeResult } from "./typed-services.js";
import { HttpExchange } from "./http-exchange.js";
import { misreadJson } from "./json-misreadings.js";
import { parseBinary, serveUnary, type UnaryProtocol } from "./unary-call.js";
import { encodeAnswer, isKeptAnswer, plainHeaders, sharedAnswer, type UnaryRoute } from "./unary-routes.js";

/** Connect's unary content types, as its handler matches them. */
const UNARY_CONTENT_TYPE = /^application\/(?:(json)(?:; ?charset=utf-?8)?|(proto))$/i;
/** Connect compresses answers from this size on (its compressMinBytes default). */
const COMPRESS_MIN_BYTES = 1024;

type Compression = typeof compressionGzip;

const timeout: UnaryProtocol["timeout"] = (header) => parseTimeout(header.get("connect-timeout-ms"), Number.MAX_SAFE_INTEGER);

const binaryProtocol: UnaryProtocol = {
  door: "connect",
  timeout,
  bodyBytes: (maxMessageBytes) => maxMessageBytes,
  request: (body, _header, route) => parseBinary(route.spec.rpc.input, body),
  answer: (route, result) => encodeAnswer(route, result, false),
};

const utf8 = new TextDecoder();

const jsonProtocol: UnaryProtocol = {
  door: "connect",
  timeout,
  bodyBytes: (maxMessageBytes) => maxMessageBytes,
  request(body, _header, route) {
    if (holdsMoreJsonContainers(body)) throw toConnectError(tooManyJsonContainers(MAX_JSON_CONTAINERS));
    const text = utf8.decode(body);
    let message;
    try {
      message = fromJsonString(route.spec.rpc.input, text, { ignoreUnknownFields: true });
    } catch (err) {
      // Odd hex ("0x123") is not base64 at all: say it is hex rather than "invalid base64 string".
      let misread: string | undefined;
      try {
        misread = misreadJson(route.spec.rpc.input, JSON.parse(text));
      } catch {
        misread = undefined;
      }
      throw misread === undefined ? ConnectError.from(err, Code.InvalidArgument) : new ConnectError(misread, Code.InvalidArgument);
    }
    const misread = misreadJson(route.spec.rpc.input, JSON.parse(text));
    if (misread !== undefined) throw new ConnectError(misread, Code.InvalidArgument);
    return message;
  },
  answer: (route, result) =>
    sharedAnswer(result, route.jsonAnswers, 0, () => {
      const message = decodeResult(route.spec, result);
      let json: string;
      try {
        json = toJsonString(route.spec.rpc.output, message);
      } catch (err) {
        throw new ConnectError(`serialize JSON: ${(err as Error).message}`, Code.Internal);
      }
      return Buffer.from(json, "utf8");
    }),
};

/** The answer's compression as Connect negotiates it: the first of its encodings that Accept-Encoding lists. */
function negotiateCompression(accepted: string | undefined): Compression | undefined {
  if (accepted === undefined) return undefined;
  for (const name of accepted.split(",")) {
    const trimmed = name.trim();
    if (trimmed === "gzip") return compressionGzip;
    if (trimmed === "br") return compressionBrotli;
    if (trimmed === "deflate") return compressionDeflate;
  }
  return undefined;
}

/**
 * Compressed copies of kept answers (sharedAnswer: the same Buffer for every
 * call that gets it), by the answer's bytes: compressed once for each
 * compression, and the copy goes when the answer does. A failed compression
 * is not kept.
 */
const compressedAnswers = new WeakMap<Buffer, Map<string, Promise<Uint8Array>>>();

export function compressedAnswer(body: Buffer, compression: Compression): Promise<Uint8Array> {
  let byCompression = compressedAnswers.get(body);
  if (byCompression === undefined) {
    byCompression = new Map();
    compressedAnswers.set(body, byCompression);
  }
  let compressed = byCompression.get(compression.name);
  if (compressed === undefined) {
    const kept = byCompression;
    // zlib hands a small result over as a view of its 8-16 KiB output buffer.
    compressed = compression.compress(body).then(keptCopy);
    compressed.catch(() => kept.delete(compression.name));
    kept.set(compression.name, compressed);
  }
  return compressed;
}

/** Takes a request when it is a unary Connect call it serves (returns true); the rest is left to Connect. */
export type ConnectUnaryHandler = (req: NodeRequest, res: NodeResponse) => boolean;

export function createConnectUnaryHandler(gateway: Gateway, routes: ReadonlyMap<string, UnaryRoute>): ConnectUnaryHandler {
  return (req, res) => {
    if (req.method !== "POST") return false;
    // The path first: the native door's requests (also POSTed JSON) leave at this cheap test.
    const route = routes.get(req.url ?? "");
    if (route === undefined) return false;
    const headers = req.headers;
    const contentType = headers["content-type"];
    const format = contentType === undefined ? null : UNARY_CONTENT_TYPE.exec(contentType);
    if (format === null) return false;
    const encoding = headers["content-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;
    const binary = format[2] !== undefined;
    const exchange = binary
      ? new ConnectExchange(req, res, "application/proto", undefined)
      : new ConnectExchange(req, res, "application/json", negotiateCompression(headers["accept-encoding"]));
    serveUnary(gateway, route, binary ? binaryProtocol : jsonProtocol, exchange);
    return true;
  };
}

/** A unary Connect call on an HTTP/1.1 or HTTP/2 request and response: the status is the HTTP status. */
class ConnectExchange extends HttpExchange {
  constructor(
    req: NodeRequest,
    res: NodeResponse,
    private readonly contentType: string,
    private readonly compression: Compression | undefined,
  ) {
    super(req, res);
  }

  answer(body: Buffer, requestId: string): void {
    this.#send(200, { "content-type": this.contentType, [REQUEST_ID_HEADER]: requestId }, body);
  }

  answerError(error: ConnectError): void {
    const headers: OutgoingHttpHeaders = plainHeaders(error.metadata);
    headers["content-type"] = "application/json";
    this.#send(codeToHttpStatus(error.code), headers, Buffer.from(errorToJsonBytes(error, undefined)));
  }

  #send(status: number, headers: OutgoingHttpHeaders, body: Buffer): void {
    const compression = this.compression;
    if (compression === undefined || body.length < COMPRESS_MIN_BYTES) {
      headers["content-length"] = body.length;
      this.res.writeHead(status, headers);
      endWithParts(this.res, [body]);
      return;
    }
    (isKeptAnswer(body) ? compressedAnswer(body, compression) : compression.compress(body)).then(
      (compressed) => {
        if (!this.open()) return;
        headers["content-encoding"] = compression.name;
        headers["content-length"] = compressed.length;
        this.res.writeHead(status, headers);
        endWithParts(this.res, [compressed]);
      },
      () => {
        // zlib failing on bytes in memory leaves nothing sensible to send: end the exchange.
        if (this.open()) this.res.destroy();
      },
    );
  }
}
