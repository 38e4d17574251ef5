/**
 * One structured line per request, on both front doors: front door, method,
 * outcome, duration and a request id (echoed from x-request-id, or made up).
 * Keys and URLs are never part of it.
 */
import { randomUUID } from "node:crypto";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";

export const REQUEST_ID_HEADER = "x-request-id";

/** The caller's request id when it is a sane token, else a fresh one. */
export function requestIdFrom(value: string | null | undefined): string {
  return value && /^[A-Za-z0-9._:-]{1,128}$/.test(value) ? value : randomUUID();
}

function typedDoor(contentType: string | null): string {
  if (contentType?.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType?.startsWith("application/grpc")) return "grpc";
  return "connect";
}

/** The line for one typed call (any protocol); `error` when it failed. */
export function logTypedCall(log: Logger, door: string, method: string, requestId: string, started: number, error?: ConnectError): void {
  const ms = Math.round((performance.now() - started) * 100) / 100;
  if (error === undefined) {
    log.info({ door, method, requestId, status: "ok", ms }, "request");
    return;
  }
  const level = error.code === Code.Internal || error.code === Code.Unknown ? "warn" : "info";
  log[level]({ door, method, requestId, status: Code[error.code], error: error.rawMessage, ms }, "request");
}

/** Connect interceptor: logs each typed call and returns its request id in a header. */
export function requestLogInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const requestId = requestIdFrom(req.header.get(REQUEST_ID_HEADER));
    const door = typedDoor(req.header.get("content-type"));
    try {
      const res = await next(req);
      res.header.set(REQUEST_ID_HEADER, requestId);
      logTypedCall(log, door, req.method.name, requestId, started);
      return res;
    } catch (err) {
      const e = ConnectError.from(err);
      e.metadata.set(REQUEST_ID_HEADER, requestId);
      logTypedCall(log, door, req.method.name, requestId, started, e);
      throw e;
    }
  };
}
