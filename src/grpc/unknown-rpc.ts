/**
 * Requests to an RPC path (/package.Service/Method) that Connect's router
 * leaves to the fallback: they get their x-request-id like every answer,
 * and a method no service serves is answered in the caller's protocol. A
 * bare 404 reaches gRPC and gRPC-Web clients only as "Received HTTP status
 * code 404"; they read UNIMPLEMENTED naming the method from grpc-status
 * instead, and Connect clients read its JSON error (404, as Connect
 * specifies).
 */
import type { IncomingHttpHeaders } from "node:http";
import { Code } from "@connectrpc/connect";
import { REQUEST_ID_HEADER, requestIdFrom } from "../observability/request-log.js";
import { encodeGrpcMessage } from "./grpc-message.js";
import type { NodeResponse } from "../http/http-types.js";

/** The first path segment names a package (it has a dot, not at its start: "." and ".." are dot segments); native and plain paths never do. */
const RPC_PATH = /^\/[^/?.][^/?]*\./;

export function isRpcPath(url: string): boolean {
  return RPC_PATH.test(url);
}

/** Gives the request the id its answer will carry (the caller's, or a fresh one), whichever part of the server answers it. */
export function tagRequestId(headers: IncomingHttpHeaders, res: NodeResponse): void {
  const value = headers[REQUEST_ID_HEADER];
  const id = requestIdFrom(Array.isArray(value) ? value[0] : value);
  headers[REQUEST_ID_HEADER] = id;
  res.setHeader(REQUEST_ID_HEADER, id);
}

/**
 * An RPC path behind a prefix: a client whose base URL carries the native door's /v3/<KEY> or a network name, or
 * ends in a slash (//package.Service/Method, as Google's gRPC-Web client joins a base URL ending in "/": found from
 * outside, a plain 404). Its last two segments (service/method), or null: split, not a regex, which backtracked
 * quadratically on a long dotted segment.
 */
function prefixedRpcPath(url: string): string | null {
  const parts = (url.split("?", 1)[0] ?? "").split("/");
  if (parts.length < 4) return null;
  const service = parts[parts.length - 2] as string;
  const method = parts[parts.length - 1] as string;
  // A package-qualified service name; not a dot segment (/v3/./<KEY> was read as the RPC "./<KEY>" and its answer
  // quoted the key back: found from outside).
  const qualified = service.includes(".") && !service.startsWith(".") && !service.endsWith(".") && !service.includes("..");
  return qualified && method !== "" ? `${service}/${method}` : null;
}

/** Paths quoted in an answer's message are cut: a 60 KB path echoed in grpc-message passed clients' metadata limits (found from outside). */
const QUOTED_PATH_CHARS = 200;
const quoted = (path: string): string => (path.length > QUOTED_PATH_CHARS ? `${path.slice(0, QUOTED_PATH_CHARS)}…` : path);
/** The native door's key segment in such a prefix: /v3/<KEY> or /<network>/v3/<KEY>. */
const NATIVE_KEY_PREFIX = /^\/(?:[^/?]+\/)?v3\//;

/**
 * Answers an RPC path no service serves, and a typed call to an RPC path behind a prefix (found from outside: a
 * connect-es client whose base URL was the native door's http://host/v3/<KEY> got only "HTTP 404"); false when the
 * request is not an RPC at all, else the gRPC status it was answered with.
 */
export function answerUnknownRpc(url: string, headers: IncomingHttpHeaders, res: NodeResponse): false | Code {
  const contentType = headers["content-type"] ?? "";
  let message: string;
  let grpcStatus: Code = Code.Unimplemented;
  if (isRpcPath(url)) {
    message = `unknown method ${quoted(url.split("?")[0] ?? "")}`;
  } else {
    // Only typed callers (their content types) get a typed answer; anything else keeps the plain 404.
    // A Connect GET has no content type: its query says it (found from outside: it still got a bare "HTTP 404"). JSON
    // to a path ending in /package.Service/Method is the README's curl example behind a prefix, not a native call.
    const typed =
      contentType.startsWith("application/grpc") ||
      contentType.startsWith("application/proto") ||
      contentType.startsWith("application/json") ||
      contentType.startsWith("application/connect+") ||
      headers["connect-protocol-version"] !== undefined ||
      /[?&]connect=v1(&|$)/.test(url);
    const prefixed = typed ? prefixedRpcPath(url) : null;
    if (prefixed === null) return false;
    const rpc = quoted(`/${prefixed}`);
    if (NATIVE_KEY_PREFIX.test(url)) {
      grpcStatus = Code.Unauthenticated;
      message = `typed calls take the API key in the x-api-key metadata, not in the path: call ${rpc} at the server's root`;
    } else {
      message = `typed calls are served at the server's root (${rpc}), not behind a path prefix; a network is named in the x-nodegate-network metadata`;
    }
  }
  if (contentType.startsWith("application/grpc")) {
    // Trailers-only: the status rides in the headers of an empty answer.
    const answerType = contentType.startsWith("application/grpc-web") ? (contentType.startsWith("application/grpc-web-text") ? "application/grpc-web-text+proto" : "application/grpc-web+proto") : "application/grpc";
    const status = { "content-type": answerType, "grpc-status": String(grpcStatus), "grpc-message": encodeGrpcMessage(message) };
    if ("stream" in res) {
      // One HEADERS frame that ends the stream: grpc-js reads a status only from such a frame or from trailers. The
      // headers set on the response so far (its request id, CORS for a browser's gRPC-Web) go in it too. Sent once
      // the request has arrived (at most a second later), as the served lanes answer: curl, answered while still
      // sending, waited for the idle timeout (found from outside: 65 s, on 5 to 11 in 20 calls).
      const stream = res.stream;
      const head = { ...res.getHeaders(), ":status": 200, ...status };
      const send = (): void => {
        clearTimeout(timer);
        if (!stream.destroyed && !stream.headersSent) stream.respond(head, { endStream: true });
      };
      const timer = setTimeout(send, 1000);
      if (stream.readableEnded) send();
      else {
        stream.once("end", send);
        stream.resume();
      }
      return grpcStatus;
    }
    res.writeHead(200, status);
    res.end();
    return grpcStatus;
  }
  res.writeHead(grpcStatus === Code.Unauthenticated ? 401 : 404, { "content-type": "application/json" });
  res.end(JSON.stringify({ code: grpcStatus === Code.Unauthenticated ? "unauthenticated" : "unimplemented", message }));
  return grpcStatus;
}
