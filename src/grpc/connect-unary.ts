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
import type { OutgoingHttpHeaders } from "node:http";
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, errorToJsonBytes, parseTimeout } from "@connectrpc/connect/protocol-connect";
import { CallCancellation } from "../call-signal.js";
import type { Gateway } from "../gateway.js";
import type { NodeRequest, NodeResponse } from "../http-types.js";
import { logTypedCall, REQUEST_ID_HEADER, requestIdFrom } from "../observability/request-log.js";
import { endWithParts } from "../response-body.js";
import { toConnectError } from "./errors.js";
import { invokeTyped } from "./typed-services.js";
import { encodeAnswer, headerSource, type UnaryRoute } from "./unary-routes.js";

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
    serve(gateway, route, req, res);
    return true;
  };
}

function serve(gateway: Gateway, route: UnaryRoute, req: NodeRequest, res: NodeResponse): void {
  const started = performance.now();
  const header = headerSource(req.headers);
  const requestId = requestIdFrom(header.get(REQUEST_ID_HEADER));
  const controller = new CallCancellation();
  let answered = false;
  let deadline: NodeJS.Timeout | undefined;

  const settle = (error: ConnectError | undefined): boolean => {
    if (answered) return false;
    answered = true;
    if (deadline !== undefined) clearTimeout(deadline);
    logTypedCall(gateway.log, gateway.metrics, "connect", route.method, requestId, started, error);
    return !("stream" in res ? res.stream.destroyed || res.stream.closed : res.destroyed);
  };
  const succeed = (message: Buffer): void => {
    if (!settle(undefined)) return;
    res.writeHead(200, { "content-type": CONTENT_TYPE, "content-length": message.length, [REQUEST_ID_HEADER]: requestId });
    endWithParts(res, [message]);
  };
  const fail = (err: unknown): void => {
    const error = toConnectError(err);
    error.metadata.set(REQUEST_ID_HEADER, requestId);
    if (!settle(error)) return;
    const body = errorToJsonBytes(error, undefined);
    const headers: OutgoingHttpHeaders = {};
    error.metadata.forEach((value, key) => {
      headers[key] = value;
    });
    headers["content-type"] = "application/json";
    headers["content-length"] = body.length;
    res.writeHead(codeToHttpStatus(error.code), headers);
    res.end(body);
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
      request = fromBinary(route.spec.rpc.input, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    } catch (err) {
      fail(new ConnectError(`parse binary: ${(err as Error).message}`, Code.Internal));
      return;
    }
    invokeTyped(gateway, route.spec, request, header, controller.signal)
      .then((result) => {
        if (!answered) succeed(encodeAnswer(route, result, 0));
      })
      .catch(fail);
  };

  res.once("close", () => {
    req.removeListener("data", onData);
    req.removeListener("end", onEnd);
    if (!answered) {
      answered = true;
      if (deadline !== undefined) clearTimeout(deadline);
      controller.abort();
      logTypedCall(gateway.log, gateway.metrics, "connect", route.method, requestId, started, new ConnectError("the client cancelled the call", Code.Canceled));
    }
  });
  const timeout = parseTimeout(header.get("connect-timeout-ms"), Number.MAX_SAFE_INTEGER);
  if (timeout.error !== undefined) {
    fail(timeout.error);
    req.resume();
    return;
  }
  if (timeout.timeoutMs !== undefined) {
    deadline = setTimeout(() => {
      fail(new ConnectError("the operation timed out", Code.DeadlineExceeded));
      controller.abort();
    }, timeout.timeoutMs);
  }
  req.on("data", onData);
  req.once("end", onEnd);
}
