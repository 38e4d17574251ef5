/**
 * The typed door's fast lane for the Connect protocol: unary POSTs of
 * application/proto (what connect-es clients on Node send by default) for the
 * method table's RPCs, over HTTP/1.1 or HTTP/2, served on the request and
 * response without Connect's universal handler. The answer is written by the
 * same one-pass transcoder as the gRPC lane's (unary-routes.ts).
 *
 * Same contract as Connect's handler: connect-timeout-ms, cancellation when
 * the client goes away, errors as Connect's JSON error body under the HTTP
 * status Connect gives each code, with the same details, x-request-id, one
 * log line per call. Left to Connect: GET requests, JSON, compressed
 * requests, and everything that is not a method table RPC. Answers are not
 * compressed (as on the gRPC lane), whatever Accept-Encoding offers.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";
import type { ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, errorToJsonBytes, parseTimeout } from "@connectrpc/connect/protocol-connect";
import type { Gateway } from "../gateway.js";
import type { NodeRequest, NodeResponse } from "../http-types.js";
import { REQUEST_ID_HEADER } from "../observability/request-log.js";
import { endWithParts } from "../response-body.js";
import { serveUnary, type UnaryExchange, type UnaryProtocol } from "./unary-call.js";
import type { UnaryRoute } from "./unary-routes.js";

const CONTENT_TYPE = "application/proto";

/** Takes a request when it is a unary Connect call it serves (returns true); the rest is left to Connect. */
export type ConnectUnaryHandler = (req: NodeRequest, res: NodeResponse) => boolean;

export function createConnectUnaryHandler(gateway: Gateway, routes: ReadonlyMap<string, UnaryRoute>): ConnectUnaryHandler {
  return (req, res) => {
    if (req.method !== "POST") return false;
    const headers = req.headers;
    if (headers["content-type"] !== CONTENT_TYPE) return false;
    const encoding = headers["content-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;
    const route = routes.get(req.url ?? "");
    if (route === undefined) return false;
    serveUnary(gateway, route, connectProtocol, new ConnectExchange(req, res));
    return true;
  };
}

const connectProtocol: UnaryProtocol = {
  door: "connect",
  answerRoom: 0,
  timeout: (header) => parseTimeout(header.get("connect-timeout-ms"), Number.MAX_SAFE_INTEGER),
  message: (body) => body,
};

/** A unary Connect call on an HTTP/1.1 or HTTP/2 request and response: the status is the HTTP status. */
class ConnectExchange implements UnaryExchange {
  constructor(
    private readonly req: NodeRequest,
    private readonly res: NodeResponse,
  ) {}

  get headers(): IncomingHttpHeaders {
    return this.req.headers;
  }

  get body(): NodeRequest {
    return this.req;
  }

  get closing(): NodeResponse {
    return this.res;
  }

  open(): boolean {
    const res = this.res;
    return !("stream" in res ? res.stream.destroyed || res.stream.closed : res.destroyed);
  }

  answer(message: Buffer, requestId: string): void {
    this.res.writeHead(200, { "content-type": CONTENT_TYPE, "content-length": message.length, [REQUEST_ID_HEADER]: requestId });
    endWithParts(this.res, [message]);
  }

  answerError(error: ConnectError): void {
    const body = errorToJsonBytes(error, undefined);
    const headers: OutgoingHttpHeaders = {};
    error.metadata.forEach((value, key) => {
      headers[key] = value;
    });
    headers["content-type"] = "application/json";
    headers["content-length"] = body.length;
    this.res.writeHead(codeToHttpStatus(error.code), headers);
    this.res.end(body);
  }

  release(): void {}
}
