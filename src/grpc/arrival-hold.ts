/**
 * A typed request that Connect's own handlers serve (the streams, JsonRpcService, JSON payloads over gRPC,
 * compressed requests) holds one of its key's requests (limits.maxConcurrentRequestsPerKey) while its body is still
 * arriving: its handler takes one only once the body has come (generic-service.ts), so a client that sent heads and
 * never a body held none, and one key pinned any number of streams, 5-10 KB each, until the request deadline (found
 * from outside: 5,000 JsonRpcService streams on a limit of 50). Given back when the body has come (the handler then
 * takes its own, as before) or the response closes, whichever comes first; a stream over the key's maximum is
 * answered RESOURCE_EXHAUSTED at once, in its protocol's terms. The method table's unary calls, on the lean lanes,
 * hold theirs in unary-call.ts; the native door's in jsonrpc/http-handler.ts.
 */
import { ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, endStreamFlag, errorToJson, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import type { Gateway } from "../gateway.js";
import { stillReceiving } from "../http/client-timeouts.js";
import type { NodeRequest, NodeResponse } from "../http/http-types.js";
import { whenResponseDone } from "../http/response-closed.js";
import { toConnectError } from "./errors.js";
import { errorStatus } from "./grpc-unary.js";
import { GRPC_WEB_BINARY_CONTENT_TYPE, GRPC_WEB_TEXT_CONTENT_TYPE, trailerFrame } from "./grpc-web-unary.js";
import { credentialsFrom } from "./typed-services.js";
import { FRAME_HEADER, headerSource } from "./unary-routes.js";

/**
 * Takes one of the key's requests for a typed request whose body is still to come; false when the key holds its
 * maximum already, or its headers do not pass (no key, an unknown one: such a request holds nothing to count it
 * against), and the request has been answered so.
 */
export function holdWhileArriving(gateway: Gateway, req: NodeRequest, res: NodeResponse): boolean {
  if (req.method !== "POST" || ("stream" in req ? !stillReceiving(req.stream) : req.complete)) return true;
  let release;
  try {
    const key = gateway.access.authenticate(credentialsFrom(headerSource(req.headers)));
    release = gateway.quotas.acquire(key, "requests");
  } catch (err) {
    refuseAtHeaders(req, res, toConnectError(err));
    return false;
  }
  req.once("end", release);
  whenResponseDone(res, release);
  return true;
}

/** Answers a typed request with `error` before its body is read: trailers-only for gRPC, a trailer frame for gRPC-Web, Connect's error otherwise. */
export function refuseAtHeaders(req: NodeRequest, res: NodeResponse, error: ConnectError): void {
  const contentType = req.headers["content-type"] ?? "";
  if (/^application\/grpc-web/i.test(contentType)) {
    const text = /^application\/grpc-web-text/i.test(contentType);
    const frame = trailerFrame(error);
    const body = text ? Buffer.from(frame.toString("base64")) : frame;
    res.writeHead(200, { "content-type": text ? GRPC_WEB_TEXT_CONTENT_TYPE : GRPC_WEB_BINARY_CONTENT_TYPE, "content-length": body.length });
    res.end(body);
    return;
  }
  if (/^application\/grpc/i.test(contentType)) {
    const head = { "content-type": contentType, ...errorStatus(error) };
    // One HEADERS frame that ends the stream (Trailers-Only): grpc-js reads a status only from such a frame or from
    // trailers, and Node's response object would send an empty DATA frame after the head.
    if ("stream" in res) res.stream.respond({ ...res.getHeaders(), ":status": 200, ...head }, { endStream: true });
    else {
      res.writeHead(200, head);
      res.end();
    }
    return;
  }
  if (/^application\/connect\+/i.test(contentType)) {
    // A Connect stream's error is its end-of-stream message.
    const json = Buffer.from(JSON.stringify({ error: errorToJson(error, undefined) }));
    const frame = Buffer.alloc(FRAME_HEADER + json.length);
    frame[0] = endStreamFlag;
    frame.writeUInt32BE(json.length, 1);
    json.copy(frame, FRAME_HEADER);
    res.writeHead(200, { "content-type": /json/i.test(contentType) ? "application/connect+json" : "application/connect+proto", "content-length": frame.length });
    res.end(frame);
    return;
  }
  const body = Buffer.from(errorToJsonBytes(error, undefined));
  res.writeHead(codeToHttpStatus(error.code), { "content-type": "application/json", "content-length": body.length });
  res.end(body);
}
