/**
 * Composition root of the listening side: one port that serves gRPC (HTTP/2,
 * as @grpc/grpc-js connects), gRPC-Web and Connect (HTTP/1.1 and HTTP/2), the
 * native JSON-RPC path over HTTP and WebSocket, health, readiness and metrics.
 * In cleartext the first bytes of each connection decide whether it goes to
 * the HTTP/2 or the HTTP/1.1 server (Node cannot serve both cleartext
 * protocols from one server); with TLS, ALPN decides.
 */
import http from "node:http";
import http2 from "node:http2";
import net, { type AddressInfo, type Socket } from "node:net";
import type { DescService } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import * as reflectionV1 from "../gen/grpc/reflection/v1/reflection_pb.js";
import * as reflectionV1alpha from "../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { JsonRpcService } from "../gen/nodegate/jsonrpc/v1/jsonrpc_service_pb.js";
import { answerClientErrorsInTurn, upgradeInTurn } from "./http/answers-in-turn.js";
import { closingAnswer } from "./http/closing-answer.js";
import { closeUnlessIdentified, guardHttp2Session, http1TimeoutOptions, ignoreResetBeforeIdentified, watchHttp1Writes } from "./http/client-timeouts.js";
import { whenResponseDone } from "./http/response-closed.js";
import { InFlight } from "./http/in-flight.js";
import { handleCors } from "./http/cors.js";
import { finAcknowledged } from "./http/fin-acknowledged.js";
import { closeBeforeResetFlood } from "./http/stream-reset-budget.js";
import { tlsListener } from "./http/tls-listener.js";
import { passedDeadlineInterceptor } from "./grpc/passed-deadline.js";
import { clusterMetricsReader } from "./observability/cluster-metrics.js";
import { sharedScrape } from "./observability/shared-scrape.js";
import type { Gateway } from "./gateway.js";
import { settleGrpcStatusOf } from "./grpc/status-size.js";
import { compressionBrotli, compressionDeflate, compressionGzip } from "./grpc/compressions.js";
import { registerGenericService } from "./grpc/generic-service.js";
import { registerHealth } from "./grpc/health-service.js";
import { nodeRequestContext } from "./grpc/node-request.js";
import { registerReflection } from "./grpc/reflection.js";
import { registerStreamLogs } from "./grpc/stream-logs.js";
import { endTypedStreams, registerSubscriptionStreams } from "./grpc/subscription-streams.js";
import { createConnectAdapter } from "./grpc/connect-adapter.js";
import { createConnectUnaryHandler } from "./grpc/connect-unary.js";
import { refuseMalformedGet, varyForConnectGet } from "./grpc/connect-get.js";
import { refuseUnsupportedRequest } from "./grpc/unsupported-request.js";
import { clampDeadlineHeaders } from "./grpc/deadline-headers.js";
import { answerUnknownRpc, isRpcPath, tagRequestId } from "./grpc/unknown-rpc.js";
import { createGrpcUnaryHandler } from "./grpc/grpc-unary.js";
import { createGrpcWebUnaryHandler } from "./grpc/grpc-web-unary.js";
import { compileUnaryRoutes } from "./grpc/unary-routes.js";
import { registerTypedServices } from "./grpc/typed-services.js";
import { holdWhileArriving } from "./grpc/arrival-hold.js";
import { KeylessCalls } from "./grpc/keyless-calls.js";
import { refuseTransferCoding } from "./http/transfer-coding.js";
import type { NodeRequest, NodeResponse } from "./http/http-types.js";
import { createJsonRpcHttpHandler } from "./jsonrpc/http-handler.js";
import { matchNativeRoute } from "./jsonrpc/paths.js";
import { isContinueExpectation } from "./http/expect.js";
import { createJsonRpcWsHandler, isWebSocketUpgrade } from "./jsonrpc/ws-handler.js";
import { HealthMonitor } from "./observability/health.js";
import { REQUEST_ID_HEADER, requestLogInterceptor, typedDoor } from "./observability/request-log.js";
import { logUnservedPath } from "./jsonrpc/answer-log.js";
import { typedRefusalLog } from "./observability/typed-refusal-log.js";
import { serveUpgradeAsPlainRequest } from "./http/plain-upgrade.js";
import type { Limits } from "./config/config.js";

type Req = NodeRequest;
type Res = NodeResponse;

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");


/**
 * Node resets an HTTP/2 stream whose headers number more than 128 (ENHANCE_YOUR_CALM, which gRPC clients
 * report as RESOURCE_EXHAUSTED with no reason): a call with about 120 metadata entries. HTTP/1.1 takes 2000;
 * so does HTTP/2 here. Their decoded size is bounded by the SETTINGS_MAX_HEADER_LIST_SIZE announced here, which
 * Node announces none of by default: HPACK lets a 1-byte field name a 4 KB header already in the table, so a
 * 2 KB request decoded to 7.6 MB of headers, and 170 KB/s from one client kept a core busy (found from outside).
 * 64 KiB is four times what an HTTP/1.1 request's head may hold (16 KiB, then 431), and eight times the
 * metadata C-core clients accept in answers.
 *
 * Streams open at once on one connection are bounded too (Node announces no bound): one connection that opened
 * streams and sent no body made the process grow 31 KB a stream (550 MB at 30,000), and stalled every other client
 * for 1.7 s at 2,000 and 4.8 s at 20,000 (found from outside).
 * The bound leaves a key's whole subscription allowance (maxSubscriptionsPerKey) on one channel room for 1,000 calls
 * beside it (found from outside: bounded at 1,000, a channel holding its key's 1,000 subscriptions could make no
 * other call, and one more subscription waited forever instead of being refused). Far above what clients multiplex
 * otherwise (Go's HTTP/2 server allows 250, nginx 128); a client over it gets REFUSED_STREAM for the extra streams
 * before it has acknowledged the bound, and a connection error (nghttp2's PROTOCOL_ERROR) after; gRPC clients queue
 * instead of sending.
 */
const MAX_HEADER_LIST_BYTES = 64 * 1024;
const CALLS_BESIDE_SUBSCRIPTIONS = 1000;

function http2ServerOptions(limits: Limits): http2.ServerOptions {
  const maxConcurrentStreams = limits.maxSubscriptionsPerKey + CALLS_BESIDE_SUBSCRIPTIONS;
  return { maxHeaderListPairs: 2000, settings: { maxHeaderListSize: MAX_HEADER_LIST_BYTES, maxConcurrentStreams } };
}

/** A header list's size as HTTP/2 counts it: each field's name and value, and 32 bytes (rawHeaders: name, value, ...). */
function headerListBytes(rawHeaders: string[]): number {
  let bytes = 0;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) bytes += (rawHeaders[i] as string).length + (rawHeaders[i + 1] as string).length + 32;
  return bytes;
}

const ABSOLUTE_FORM = /^https?:\/\//i;

/** The path and query of an absolute-form request target. */
function originForm(target: string): string {
  try {
    const url = new URL(target);
    return `${url.pathname}${url.search}`;
  } catch {
    return target;
  }
}

/** How long calls cut short at the drain deadline have to write their "shutting down" answers. */
const ANSWER_AT_DEADLINE_MS = 500;
/** How often a graceful close asks the kernel which clients have acknowledged its FIN. */
const FIN_POLL_MS = 50;
/** How often a graceful close looks whether Node has destroyed the HTTP/2 sessions it closed. */
const SESSION_POLL_MS = 10;

/** The answer to a path nodegate does not serve: what it does serve (found from outside: a bare "not found" for /v4/<KEY> or / said nothing). */
const NOT_SERVED = "not found: nodegate serves JSON-RPC at POST /v3/<KEY> (WebSocket: /ws/v3/<KEY>; another network: /<network>/v3/<KEY>), typed calls at /<package>.<Service>/<Method> (gRPC, gRPC-Web, Connect; the key in x-api-key), and /healthz, /readyz, /metrics\n";

export interface NodegateServer {
  /** Starts listening; resolves with the bound address. */
  listen(port: number, host?: string): Promise<AddressInfo>;
  /**
   * Graceful stop: stops accepting, lets in-flight requests and streams finish
   * for up to `drainMs`, then closes what is left and the upstreams.
   */
  close(drainMs?: number): Promise<void>;
  /** Requests being answered right now. */
  readonly inFlight: number;
}

export interface NodegateServerOptions {
  /** How often native WebSocket clients are pinged, in ms; silent ones are closed. Default 30 000. */
  wsPingIntervalMs?: number | undefined;
  /** PEM certificate and key: serve TLS (HTTP/2 with ALPN, HTTP/1.1 fallback) instead of cleartext. */
  tls?: { cert: string | Buffer; key: string | Buffer } | undefined;
  /** Default drain time of close(), in ms. Default 10 000. */
  drainMs?: number | undefined;
  /** How often a grpc.health.v1 Watch re-evaluates with nothing else to wake it, in ms. Default 5000. */
  healthWatchIntervalMs?: number | undefined;
}

/** Waits for `work`, but not past `deadline` (by performance.now()). */
async function settledBy(work: Promise<unknown>, deadline: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - performance.now()))))]);
  clearTimeout(timer);
}

/**
 * Ends each connection after the bytes already queued on it and keeps reading it until the client closes
 * its side, up to `deadline`. Closed at once instead, a connection whose answer still sits in the kernel's
 * send queue (a client reading more slowly than nodegate writes) is reset by the kernel on the client's next
 * frame (a WINDOW_UPDATE, a ping), and the unsent tail of the answer is lost. A connection nothing was ever
 * written to has nothing to lose, and is closed at once: one that sent nothing, or only part of a request
 * (a slowloris), would otherwise hold the close to its deadline. So is one whose client's TCP has
 * acknowledged every byte and the FIN, where the kernel says so (Linux): an idle grpcio channel does not
 * close its side until it next wakes, seconds later.
 */
async function closedByClients(sockets: ReadonlySet<Socket>, deadline: number): Promise<void> {
  const open = new Set<Socket>();
  const closing = [...sockets].map((socket) => {
    if (socket.bytesWritten === 0) {
      socket.destroy();
      return undefined;
    }
    socket.end(); // an HTTP/2 session, destroyed after a graceful close, has Node read on until the client closes
    if (socket.destroyed) return undefined;
    open.add(socket);
    return new Promise((resolve) => socket.once("close", () => resolve(open.delete(socket))));
  });
  const allClosed = Promise.all(closing);
  // A client whose TCP has acknowledged everything, the FIN too, has nothing left to lose: close it then.
  while (open.size > 0 && performance.now() < deadline) {
    for (const socket of await finAcknowledged(open)) socket.destroy();
    await settledBy(allClosed, Math.min(deadline, performance.now() + FIN_POLL_MS));
  }
}

/**
 * Stops Node's HTTP/1.1 deadline checks on a server handed its connections.
 * Its close() would first run closeIdleConnections, which takes a keep-alive
 * connection whose response has ended for idle even while most of that
 * response still waits to be written, and destroys it (found from outside: a
 * slow reader of an 8 MB answer got the half the kernel held, then a FIN).
 * Every connection is closed gracefully afterwards (closedByClients).
 */
function stopDeadlineChecks(server: net.Server): void {
  (server as net.Server & { closeIdleConnections(): void }).closeIdleConnections = () => {};
  server.close();
}

/** Waits until Node has destroyed every closed session (it emits nothing then: its 'close' waits for the client), up to `deadline`. */
async function destroyedByNode(sessions: ReadonlySet<http2.Http2Session>, deadline: number): Promise<void> {
  const pending = () => [...sessions].some((session) => session.closed && !session.destroyed);
  while (pending() && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, SESSION_POLL_MS));
}

const SHUTTING_DOWN_BODY = "nodegate is shutting down\n";
/** A WebSocket upgrade that comes during the drain is refused: its connection would be closed (1012) at once. */
const SHUTTING_DOWN_UPGRADE_ANSWER = closingAnswer(503, "text/plain; charset=utf-8", SHUTTING_DOWN_BODY);

/** The services the typed door offers (the method table's, the generic one, health). */
function servedServices(gateway: Gateway): DescService[] {
  return [...keyedServices(gateway), Health];
}

/** The typed door's services that take an API key (health and reflection take none). */
function keyedServices(gateway: Gateway): DescService[] {
  return [...gateway.table.services(), JsonRpcService];
}

/** The typed door's services that take no key: their calls count in KeylessCalls. */
const KEYLESS_SERVICES: readonly DescService[] = [Health, reflectionV1.ServerReflection, reflectionV1alpha.ServerReflection];

/** `/package.Service/Method` of every RPC of `services`. */
function rpcPaths(services: readonly DescService[]): Set<string> {
  return new Set(services.flatMap((service) => service.methods.map((method) => `/${service.typeName}/${method.name}`)));
}

export function createNodegateServer(gateway: Gateway, options: NodegateServerOptions = {}): NodegateServer {
  const handleJsonRpcHttp = createJsonRpcHttpHandler(gateway);
  const wsHandler = createJsonRpcWsHandler(gateway, {
    maxMessageBytes: gateway.limits.maxWsMessageBytes,
    maxUnreadBytes: gateway.limits.maxWsUnreadBytes,
    pingIntervalMs: options.wsPingIntervalMs ?? 30_000,
  });
  const services = servedServices(gateway);
  const health = new HealthMonitor(
    gateway,
    services.filter((s) => !gateway.table.services().includes(s)).map((s) => s.typeName),
  );
  let draining = false;
  // In a cluster worker, a scrape reads every worker's metrics through the primary.
  const scrapeCluster = clusterMetricsReader(gateway.metrics.registry);
  const scrapeMetrics = sharedScrape(scrapeCluster ?? (() => gateway.metrics.registry.metrics()));

  const fallback = (req: Req, res: Res): void => {
    const started = performance.now();
    const path = req.url ?? "/";
    const route = matchNativeRoute(path);
    if (route !== undefined && route.transport === "http") {
      handleJsonRpcHttp(req, res, route).catch((err: unknown) => {
        gateway.log.error({ err }, "native request failed");
        if (!res.headersSent) {
          res.writeHead(500, { "content-type": "application/json" });
          res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}');
        } else {
          res.end();
        }
      });
      return;
    }
    // Health, metrics and not-found answers carry a request id too, as every response does.
    tagRequestId(req.headers, res);
    const unserved = (status: number): void => logUnservedPath(gateway, path, status, res.getHeader(REQUEST_ID_HEADER) as string | undefined, started);
    if (route !== undefined && route.transport === "ws") {
      res.writeHead(426, { upgrade: "websocket", connection: "Upgrade", "content-type": "text/plain" });
      res.end("this address takes WebSocket connections\n");
      unserved(426);
      return;
    }
    // A probe or scrape URL may carry a query (Prometheus' `params:`): the path alone names the endpoint.
    const queryAt = path.indexOf("?");
    switch (queryAt < 0 ? path : path.slice(0, queryAt)) {
      case "/healthz":
        res.writeHead(200, { "content-type": "text/plain" });
        res.end("ok\n");
        return;
      case "/readyz":
        health.networks().then(
          (networks) => {
            const ready = !draining && Object.values(networks).every(Boolean);
            res.writeHead(ready ? 200 : 503, { "content-type": "application/json" });
            res.end(JSON.stringify({ ready, draining, networks }));
          },
          () => {
            res.writeHead(503, { "content-type": "application/json" });
            res.end('{"ready":false}');
          },
        );
        return;
      case "/metrics":
        scrapeMetrics().then(
          (text) => {
            res.writeHead(200, { "content-type": gateway.metrics.registry.contentType });
            res.end(text);
          },
          (err: unknown) => {
            res.writeHead(503, { "content-type": "text/plain" });
            res.end(`metrics unavailable: ${(err as Error).message}\n`);
          },
        );
        return;
      default:
        const answered = answerUnknownRpc(path, req.headers, res);
        if (answered !== false) {
          // A typed call behind a path prefix (a key or network in the path): logged as unserved, its path cut as for
          // any, under its door and with the status it was answered (found from outside: counted as jsonrpc-http
          // with outcome 200, a trailers-only refusal's HTTP status).
          if (!isRpcPath(path)) {
            const door = typedDoor(req.headers["content-type"] ?? null);
            whenResponseDone(res, () => logUnservedPath(gateway, path, res.statusCode, res.getHeader(REQUEST_ID_HEADER) as string | undefined, started, door, Code[answered]));
          }
          return;
        }
        res.writeHead(404, { "content-type": "text/plain" });
        res.end(NOT_SERVED);
        unserved(404);
    }
  };

  const keyedPaths = rpcPaths(keyedServices(gateway));
  const keylessPaths = rpcPaths(KEYLESS_SERVICES);
  const keylessCalls = new KeylessCalls(gateway.limits.maxKeylessCalls, gateway.limits.maxKeylessCallsPerAddress);
  const connect = createConnectAdapter({
    routes: (router) => {
      registerTypedServices(router, gateway);
      // After the typed services: these replace the "unimplemented" handlers the EthService streams got there.
      registerSubscriptionStreams(router, gateway);
      registerStreamLogs(router, gateway);
      registerGenericService(router, gateway);
      registerHealth(router, health, options.healthWatchIntervalMs);
      registerReflection(router, services);
    },
    interceptors: [requestLogInterceptor(gateway.log, gateway.metrics), passedDeadlineInterceptor()],
    // The same bound on a request as the native path's and the lean lanes'.
    readMaxBytes: gateway.limits.maxBodyBytes,
    contextValues: nodeRequestContext,
    // The lean lanes' encodings too: gzip and deflate are gRPC's, br Connect's.
    acceptCompression: [compressionGzip, compressionBrotli, compressionDeflate],
    fallback,
    onHandlerError: (rpc, err) => gateway.log.error({ err, rpc }, "typed handler failed"),
  });

  /** gRPC over HTTP/2 carries its status in trailers (gRPC-Web puts it in the body, read with decodeURIComponent). */
  const isGrpc = (contentType: string | undefined): boolean =>
    contentType !== undefined && contentType.startsWith("application/grpc") && !contentType.startsWith("application/grpc-web");

  // The method table's unary RPCs skip Connect's universal handler on gRPC, on the Connect protocol's POSTs and
  // on gRPC-Web, binary and text (which Connect does not speak).
  const refusalLog = typedRefusalLog(gateway.log, gateway.metrics, () => connect.servedPaths);
  const unaryRoutes = compileUnaryRoutes(gateway);
  const connectUnary = createConnectUnaryHandler(gateway, unaryRoutes);
  const grpcWebUnary = createGrpcWebUnaryHandler(gateway, unaryRoutes);

  const screensUserAgents = gateway.access.screensUserAgents;
  const inFlight = new InFlight();
  const handle = (req: Req, res: Res): void => {
    // Done when its connection goes too: a pipelined response still queued then never closes (response-closed.ts).
    whenResponseDone(res, inFlight.begin("stream" in req ? req.stream : (req as http.IncomingMessage)));
    // While draining, HTTP/1.1 connections are closed after their current response.
    if (draining && "setHeader" in res && req.httpVersionMajor === 1) res.setHeader("connection", "close");
    // The absolute form (POST http://host/v3/KEY, what a client sends to a proxy) names the same path; RFC 9112 has servers take it.
    if (req.url !== undefined && ABSOLUTE_FORM.test(req.url)) req.url = originForm(req.url);
    if (req.method === "OPTIONS") tagRequestId(req.headers, res);
    if (handleCors(gateway.corsOrigins, req, res)) return;
    if (req.httpVersionMajor === 1) {
      // HTTP/2 streams had theirs lowered in dispatchHttp2Stream, and have no transfer codings.
      clampDeadlineHeaders(req.headers);
      if (refuseTransferCoding(req, res, isRpcPath(req.url ?? "/"))) return;
    }
    if (connectUnary(req, res) || grpcWebUnary(req, res)) return;
    if (isGrpc(req.headers["content-type"])) settleGrpcStatusOf(res);
    if (isRpcPath(req.url ?? "/")) {
      tagRequestId(req.headers, res);
      refusalLog.watch(req, res);
      if (req.method === "GET") varyForConnectGet(res, screensUserAgents);
      if (refuseUnsupportedRequest(req, res) || refuseMalformedGet(req, res, unaryRoutes)) return;
      // A keyed RPC's request holds one of its key's requests while its body arrives (arrival-hold.ts); a keyless one
      // (health, reflection) one of the process's keyless calls while it is open (keyless-calls.ts).
      // By its path alone: Connect serves "/pkg.Service/Rpc?anything" as the RPC, so a query must not skip the hold.
      const url = req.url ?? "";
      const query = url.indexOf("?");
      const path = query < 0 ? url : url.slice(0, query);
      if (keyedPaths.has(path) ? !holdWhileArriving(gateway, req, res) : keylessPaths.has(path) && !keylessCalls.admit(req, res)) return;
    }
    // As on HTTP/2 (dispatchHttp2Stream): a connection closed under a write that never completes (a stream cut for
    // its reader's pace, a client gone with its window shut) emits neither 'drain' nor 'error' on the response, and
    // Connect would wait for one forever, the call's log line, outcome and stream gauge with it.
    if (req.httpVersionMajor === 1) {
      whenResponseDone(res, () => {
        if (!res.writableFinished) res.emit("drain");
      });
    }
    connect.handle(req, res);
  };

  const onUpgrade = (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
    if (draining && isWebSocketUpgrade(req)) {
      // Answered, not dropped (found from outside: an upgrade on a kept-alive connection got an empty reply).
      socket.end(SHUTTING_DOWN_UPGRADE_ANSWER);
      return;
    }
    if (isWebSocketUpgrade(req)) wsHandler.handleUpgrade(req, socket, head);
    else if (upgradesAsPlain !== undefined) serveUpgradeAsPlainRequest(upgradesAsPlain, req, socket, head);
    else socket.destroy();
  };

  const sockets = new Set<Socket>();
  const sessions = new Set<http2.Http2Session>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  };
  const trackSession = (session: http2.ServerHttp2Session) => {
    sessions.add(session);
    if (draining) session.close(); // a connection accepted before the drain, its session set up after
    session.on("close", () => sessions.delete(session));
    guardHttp2Session(session, gateway.limits);
    closeBeforeResetFlood(session);
  };

  // HTTP/2 streams are dispatched here rather than by Node's compatibility layer, so unary gRPC for
  // the method table reaches its lean handler without request/response objects; every other stream
  // gets them, as the compatibility layer would build them, and goes to Connect.
  const grpcUnary = createGrpcUnaryHandler(gateway, unaryRoutes);
  /** Sessions that have sent a stream over the header list bound (see dispatchHttp2Stream). */
  const oversizeHeaders = new WeakSet<http2.Http2Session>();
  const dispatchHttp2Stream = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, _flags: number, rawHeaders: string[]): void => {
    // Node applies the announced header list bound only once the client has acknowledged nodegate's SETTINGS; a
    // client that never does had 7.6 MB decoded from each 2 KB stream (found from outside). Over the bound here, the
    // stream is reset as after the acknowledgement (ending the connection made curl retry it five times, and cut the
    // client's other streams); a second such stream on the connection takes no more new streams (GOAWAY), so a
    // client cannot go on having them decoded.
    if (headerListBytes(rawHeaders) > MAX_HEADER_LIST_BYTES) {
      // Closed with a code other than NO_ERROR, Node destroys the stream with an error it emits: unheard, it would end the process.
      stream.on("error", () => {});
      stream.close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
      const session = stream.session;
      if (session !== undefined && oversizeHeaders.has(session)) {
        session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, stream.id);
        // And ends once the streams it has are done: a session that has sent a GOAWAY is not ended by the client's
        // FIN (found from outside: every such connection sat in CLOSE-WAIT until the idle timeout).
        session.close();
      } else if (session !== undefined) oversizeHeaders.add(session);
      return;
    }
    clampDeadlineHeaders(headers);
    if (grpcUnary(stream, headers)) {
      stream.once("close", inFlight.begin(stream));
      return;
    }
    const req = new http2.Http2ServerRequest(stream, headers, {}, rawHeaders);
    const res = new http2.Http2ServerResponse(stream);
    // A stream closed under a write that never completes (the client left with its window shut) emits neither
    // 'drain' nor 'error', and Connect waits for one of them forever, its handler and stream gauge with it: told
    // 'drain', it writes again, fails, and ends.
    stream.once("close", () => {
      if (!res.writableFinished) res.emit("drain");
    });
    // Connect stops reading a body once it passes readMaxBytes, and Node destroys a closed stream only once its body
    // has been read: the stream stayed open in Node, a client's GOAWAY then kept the session waiting for it, reading
    // nothing more (found from outside: a socket left in CLOSE-WAIT per such call, and the drain held to its
    // deadline). Once the answer has been written, what is left of the body is read and dropped.
    stream.once("finish", () => {
      if (stream.readableEnded) return;
      // Node's request object pauses the stream whenever its own buffer is full, and nothing reads that buffer now:
      // detached from the stream, which then flows into no listener.
      stream.removeAllListeners("data");
      stream.resume();
    });
    if (headers[":method"] === "CONNECT") {
      res.statusCode = 405;
      res.end();
      return;
    }
    if (headers.expect !== undefined) {
      if (!isContinueExpectation(String(headers.expect))) {
        res.statusCode = 417;
        res.end();
        return;
      }
      continueUnlessTooLarge(req, res);
    }
    handle(req, res);
  };
  // A body declared larger than the limit is refused before the client sends it: no 100 Continue, and the connection
  // closes after the refusal (found from outside: a client was told to go on, sent 100 MB, and was then refused).
  const continueUnlessTooLarge = (req: Req, res: Res): void => {
    // The native door asks for the body itself, once the key has passed (see http-handler.ts).
    const url = req.url ?? "/";
    if (matchNativeRoute(ABSOLUTE_FORM.test(url) ? originForm(url) : url)?.transport === "http") return;
    const declared = Number(req.headers["content-length"]);
    if (!(declared > gateway.limits.maxBodyBytes)) res.writeContinue();
    else if (req.httpVersionMajor === 1) res.setHeader("connection", "close");
  };
  const checkContinue = (req: Req, res: Res): void => {
    continueUnlessTooLarge(req, res);
    handle(req, res);
  };

  let listener: net.Server;
  let plain: http.Server | undefined;
  /** Serves an HTTP/1.1 request that asks for an upgrade other than WebSocket (h2c, from curl --http2) as a plain one. */
  let upgradesAsPlain: http.Server | undefined;
  /** The server handed its connections (not listening itself), closed to stop Node's deadline checks. */
  let deadlineChecks: net.Server | undefined;
  /** Closes the TLS port's connections not yet talking HTTP (silent, or mid-handshake), which `sockets` does not hold. */
  let closeUnestablished = (): void => {};
  if (options.tls) {
    const secure = http2.createSecureServer(
      { cert: options.tls.cert, key: options.tls.key, allowHTTP1: true, handshakeTimeout: gateway.limits.headersTimeoutMs, ...http2ServerOptions(gateway.limits) },
      handle,
    );
    Object.assign(secure, http1TimeoutOptions(gateway.limits));
    secure.on("checkContinue", checkContinue);
    answerClientErrorsInTurn(secure);
    // Node's compatibility layer listens to 'stream' (installed with the 'request' listener, which
    // HTTP/1.1 over TLS still uses); HTTP/2 streams go to the dispatcher instead, as without TLS.
    secure.removeAllListeners("stream");
    secure.on("stream", dispatchHttp2Stream);
    secure.on("upgrade", upgradeInTurn(onUpgrade));
    // Over TLS too (found from outside: such a request got an empty reply): a server of its own, handed the connection.
    upgradesAsPlain = http.createServer(http1TimeoutOptions(gateway.limits), handle);
    upgradesAsPlain.on("checkContinue", checkContinue);
    answerClientErrorsInTurn(upgradesAsPlain);
    upgradesAsPlain.emit("listening");
    secure.on("secureConnection", track);
    secure.on("session", trackSession);
    // Handed its connections by the listener below: Node starts its HTTP/1.1 deadline checks when a server listens.
    secure.emit("listening");
    deadlineChecks = secure;
    const tlsPort = tlsListener(secure, (socket) => closeUnlessIdentified(socket, gateway.limits));
    listener = tlsPort.server;
    closeUnestablished = () => tlsPort.closeUnestablished();
  } else {
    plain = http.createServer(http1TimeoutOptions(gateway.limits), handle);
    plain.on("checkContinue", checkContinue);
    answerClientErrorsInTurn(plain);
    // Node starts checking the headers and request deadlines when a server listens; this one is handed
    // its connections instead, so it is told to start.
    plain.emit("listening");
    deadlineChecks = plain;
    upgradesAsPlain = plain;
    const h2 = http2.createServer(http2ServerOptions(gateway.limits));
    h2.on("stream", dispatchHttp2Stream);
    plain.on("upgrade", upgradeInTurn(onUpgrade));
    h2.on("session", trackSession);
    const h1 = plain;
    const h1Writes = watchHttp1Writes(gateway.limits);
    plain.on("upgrade", (_req: http.IncomingMessage, socket: Socket) => h1Writes.forget(socket));
    listener = net.createServer((socket) => {
      track(socket);
      ignoreResetBeforeIdentified(socket);
      const identified = closeUnlessIdentified(socket, gateway.limits);
      let head: Buffer = Buffer.alloc(0);
      const sniff = (chunk: Buffer): void => {
        head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
        const n = Math.min(head.length, H2_PREFACE.length);
        const h2Prefix = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
        // "P" may begin "POST" or the HTTP/2 preface: wait until the bytes tell.
        if (h2Prefix && n < H2_PREFACE.length) return;
        // Put the bytes back and hand the socket to the server that speaks its
        // protocol; both read what is already buffered.
        socket.off("data", sniff);
        identified();
        socket.pause();
        socket.unshift(head);
        if (h2Prefix) {
          h2.emit("connection", socket);
        } else {
          h1Writes.watch(socket);
          h1.emit("connection", socket);
          socket.resume(); // the HTTP/1.1 server reads by 'data' events; the HTTP/2 one drains the buffer itself
        }
      };
      socket.on("data", sniff);
    });
  }

  return {
    get inFlight() {
      return inFlight.count;
    },
    listen(port, host = "127.0.0.1") {
      return new Promise((resolve, reject) => {
        listener.once("error", reject);
        listener.listen(port, host, () => {
          listener.off("error", reject);
          resolve(listener.address() as AddressInfo);
        });
      });
    },
    async close(drainMs = options.drainMs ?? 10_000) {
      draining = true;
      health.drain();
      const deadline = performance.now() + drainMs;
      const stopped = new Promise<void>((resolve) => listener.close(() => resolve()));
      // HTTP/2 clients get a GOAWAY: they finish their streams and open no new ones.
      for (const session of sessions) session.close();
      // WebSocket clients stop being read, get the answers to what they sent, then a 1012 close; their subscriptions notify until then.
      const wsClosed = wsHandler.drain();
      // Typed subscription streams owe no answer: end them now, not once the WebSocket clients have had theirs.
      endTypedStreams(gateway);
      await settledBy(wsClosed, deadline);
      // Subscription streams never finish by themselves: end them now (clients resume elsewhere) rather than at the drain deadline.
      const subscriptionsClosed = gateway.subscriptions.close();
      // Requests whose upload has stalled are not waited for: nodegate has not started on them (see InFlight).
      await inFlight.idle(deadline);
      if (inFlight.started > 0 || wsHandler.answering > 0) {
        // At the deadline, calls still waiting on a node are answered -32056 / UNAVAILABLE ("shutting down"), not cut off
        // with nothing; a WebSocket client's too, then its connection closes (1012) as answered.
        await gateway.closeUpstreams();
        const answeredBy = performance.now() + ANSWER_AT_DEADLINE_MS;
        await settledBy(Promise.all([inFlight.idle(answeredBy), wsClosed]), answeredBy);
      }
      wsHandler.close();
      inFlight.refuseReceiving();
      if (deadlineChecks !== undefined) stopDeadlineChecks(deadlineChecks);
      if (upgradesAsPlain !== undefined && upgradesAsPlain !== deadlineChecks) stopDeadlineChecks(upgradesAsPlain);
      // Each HTTP/2 session, closed above, is destroyed by Node once its streams have ended and what they wrote has
      // left. Destroyed here as soon as the last call ended, a session lost the frames Node had not yet written (the
      // last stream's trailers, the final GOAWAY), and a client reading slowly got its answers without a status.
      await destroyedByNode(sessions, Math.max(deadline, performance.now() + ANSWER_AT_DEADLINE_MS));
      for (const session of sessions) session.destroy();
      closeUnestablished();
      await closedByClients(sockets, Math.max(deadline, performance.now() + ANSWER_AT_DEADLINE_MS));
      for (const socket of sockets) socket.destroy();
      await stopped;
      await subscriptionsClosed;
      await gateway.close();
    },
  };
}
