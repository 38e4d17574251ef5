/**
 * Connect's router served on Node's requests, as connectNodeAdapter serves
 * it, with two things it lacks: a request whose body has not all arrived by
 * its deadline fails DEADLINE_EXCEEDED (Connect's clock runs only around the
 * handler, so such a request held its stream and the key's concurrency slot
 * until the request timeout), and gRPC-Web's text mode (grpc-web-text-
 * transcoder.ts). Over HTTP/2 its answers leave in pieces (answer-pieces.ts).
 */
import { Code, ConnectError, type ConnectRouterOptions, type ContextValues, createConnectRouter } from "@connectrpc/connect";
import type { ConnectRouter } from "@connectrpc/connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";
import { parseTimeout as parseConnectTimeout } from "@connectrpc/connect/protocol-connect";
import { parseTimeout as parseGrpcTimeout } from "@connectrpc/connect/protocol-grpc";
import type { NodeRequest, NodeResponse } from "../http/http-types.js";
import { isGrpcWebText } from "./grpc-web-unary.js";
import { serveTextMode } from "./grpc-web-text-transcoder.js";
import { withCheckedJsonBody } from "./checked-json-body.js";
import { inPieces } from "./answer-pieces.js";

export interface ConnectAdapterOptions extends ConnectRouterOptions {
  routes: (router: ConnectRouter) => void;
  /** Requests for paths no handler serves. */
  fallback: (req: NodeRequest, res: NodeResponse) => void;
  contextValues: (req: NodeRequest, res: NodeResponse) => ContextValues;
  /** A handler that failed outside any call (Connect's adapter writes these to the console). */
  onHandlerError: (rpc: string, err: unknown) => void;
}

export interface ConnectAdapter {
  handle(req: NodeRequest, res: NodeResponse): void;
  /** The RPC paths the router serves (`/package.Service/Method`). */
  readonly servedPaths: ReadonlySet<string>;
}

export function createConnectAdapter(options: ConnectAdapterOptions): ConnectAdapter {
  const router = createConnectRouter(options);
  options.routes(router);
  const handlers = new Map<string, UniversalHandler>(router.handlers.map((h) => [h.requestPath, h]));
  const readMaxBytes = options.readMaxBytes ?? 0xffffffff;
  return {
    servedPaths: new Set(handlers.keys()),
    handle(req, res) {
      const handler = handlers.get((req.url ?? "").split("?", 1)[0] as string);
      if (handler === undefined) {
        options.fallback(req, res);
        return;
      }
      const request = withCheckedJsonBody(withBodyDeadline(universalRequestFromNodeRequest(req, res, undefined, options.contextValues(req, res)), res), handler.method, readMaxBytes);
      const answer = req.method === "POST" && isGrpcWebText(req.headers["content-type"]) ? serveTextMode(handler, request, readMaxBytes) : handler(request);
      answer
        .then((universal) => universalResponseToNodeResponse("stream" in res && universal.body !== undefined ? { ...universal, body: inPieces(universal.body) } : universal, res))
        .catch((reason: unknown) => {
          // Aborted: the client left while the answer was being written.
          if (ConnectError.from(reason).code !== Code.Aborted) options.onHandlerError(`${handler.service.typeName}/${handler.method.name}`, reason);
        });
    },
  };
}

/** The request's deadline in ms, in its protocol's header, or undefined (none, or one Connect refuses itself). */
function deadlineMs(header: Headers): number | undefined {
  const contentType = header.get("content-type") ?? "";
  const parsed = contentType.startsWith("application/grpc")
    ? parseGrpcTimeout(header.get("grpc-timeout"), Number.MAX_SAFE_INTEGER)
    : parseConnectTimeout(header.get("connect-timeout-ms"), Number.MAX_SAFE_INTEGER);
  return parsed.error === undefined ? parsed.timeoutMs : undefined;
}

/** The request with a body that fails DEADLINE_EXCEEDED when the deadline passes before its end. */
function withBodyDeadline(request: UniversalServerRequest, res: NodeResponse): UniversalServerRequest {
  const ms = deadlineMs(request.header);
  if (ms === undefined) return request;
  const body = request.body as AsyncIterable<Uint8Array>;
  // The clock runs from the request's arrival, not from the handler's first read.
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ConnectError("the operation timed out", Code.DeadlineExceeded)), ms);
  });
  expired.catch(() => {}); // a body never read (refused first) must not leave a rejection unhandled
  const stop = () => clearTimeout(timer);
  res.once("close", stop);
  async function* untilDeadline(): AsyncIterable<Uint8Array> {
    const chunks = body[Symbol.asyncIterator]();
    try {
      for (;;) {
        const next = await Promise.race([chunks.next(), expired]);
        if (next.done === true) return;
        yield next.value;
      }
    } finally {
      // The request stream is left as it is: destroying it would reset an HTTP/2 stream before the status is written.
      stop();
      res.off("close", stop);
    }
  }
  return { ...request, body: untilDeadline() };
}
