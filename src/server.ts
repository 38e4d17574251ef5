/**
 * Composition root: one listening port that serves gRPC (HTTP/2 cleartext,
 * as @grpc/grpc-js connects), gRPC-Web and Connect (HTTP/1.1 and HTTP/2), and
 * the native JSON-RPC path. The first bytes of each connection decide whether
 * it goes to the HTTP/2 or the HTTP/1.1 server (Node cannot serve both
 * cleartext protocols from one server).
 */
import http from "node:http";
import http2, { type IncomingHttpHeaders, type ServerHttp2Stream } from "node:http2";
import net, { type AddressInfo, type Socket } from "node:net";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { NodeRequest, NodeResponse } from "./http-types.js";
import { handleCors } from "./cors.js";
import type { Gateway } from "./gateway.js";
import { registerGenericService } from "./grpc/generic-service.js";
import { createGrpcUnaryHandler } from "./grpc/grpc-unary.js";
import { registerTypedServices } from "./grpc/typed-services.js";
import { createJsonRpcHttpHandler } from "./jsonrpc/http-handler.js";
import { matchNativeRoute } from "./jsonrpc/paths.js";
import { requestLogInterceptor } from "./observability/request-log.js";

type Req = NodeRequest;
type Res = NodeResponse;

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export interface NodegateServer {
  /** Starts listening; resolves with the bound address. */
  listen(port: number, host?: string): Promise<AddressInfo>;
  /** Stops accepting, closes open connections and the upstreams. */
  close(): Promise<void>;
}

export function createNodegateServer(gateway: Gateway): NodegateServer {
  const handleJsonRpcHttp = createJsonRpcHttpHandler(gateway);

  const fallback = (req: Req, res: Res): void => {
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
    if (path === "/healthz") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("ok\n");
      return;
    }
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("not found\n");
  };

  const handler = connectNodeAdapter({
    routes: (router) => {
      registerTypedServices(router, gateway);
      registerGenericService(router, gateway);
    },
    interceptors: [requestLogInterceptor(gateway.log)],
    fallback,
  });

  const handle = (req: Req, res: Res): void => {
    if (handleCors(gateway.corsOrigins, req, res)) return;
    handler(req, res);
  };
  const h1 = http.createServer({ keepAliveTimeout: 65_000 }, handle);
  // HTTP/2 streams are dispatched here rather than by Node's compatibility layer, so unary gRPC
  // for the method table reaches its lean handler without request/response objects; every
  // other stream gets them, as the compatibility layer would build them, and goes to Connect.
  const grpcUnary = createGrpcUnaryHandler(gateway);
  const h2 = http2.createServer({});
  h2.on("stream", (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, _flags: number, rawHeaders: string[]) => {
    if (grpcUnary(stream, headers)) return;
    const req = new http2.Http2ServerRequest(stream, headers, {}, rawHeaders);
    const res = new http2.Http2ServerResponse(stream);
    if (headers[":method"] === "CONNECT") {
      res.statusCode = 405;
      res.end();
      return;
    }
    if (headers.expect !== undefined) {
      if (headers.expect !== "100-continue") {
        res.statusCode = 417;
        res.end();
        return;
      }
      res.writeContinue();
    }
    handle(req, res);
  });
  const sockets = new Set<Socket>();

  const tcp = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.once("data", (head: Buffer) => {
      // Peek at the first bytes, put them back, and hand the socket to the
      // server that speaks its protocol; both read what is already buffered.
      socket.pause();
      socket.unshift(head);
      const n = Math.min(head.length, H2_PREFACE.length);
      const isH2 = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      if (isH2) {
        h2.emit("connection", socket);
      } else {
        h1.emit("connection", socket);
        socket.resume(); // the HTTP/1.1 server reads by 'data' events; the HTTP/2 one drains the buffer itself
      }
    });
  });

  return {
    listen(port, host = "127.0.0.1") {
      return new Promise((resolve, reject) => {
        tcp.once("error", reject);
        tcp.listen(port, host, () => {
          tcp.off("error", reject);
          resolve(tcp.address() as AddressInfo);
        });
      });
    },
    async close() {
      await new Promise<void>((resolve) => {
        tcp.close(() => resolve());
        h1.closeAllConnections();
        for (const socket of sockets) socket.destroy();
      });
      await gateway.close();
    },
  };
}
