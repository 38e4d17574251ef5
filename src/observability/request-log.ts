/**
 * One structured line and the request metrics per request, on both front
 * doors: front door, method, outcome, duration and a request id (echoed from
 * x-request-id, or made up). Keys and URLs are never part of it.
 */
import { randomUUID } from "node:crypto";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { Metrics } from "./metrics.js";
import { clientCancelled, nodeRequestOf, nodeResponseOf, transportWasCut, whenResponseCloses } from "../grpc/node-request.js";
import { writeRequestLine } from "./request-line.js";
import { clientDeadlineMs, leftAtDeadline } from "../http/client-deadline.js";

/** How connect-node words a stream the peer's side closed (connectErrorFromH2ResetCode). */
const STREAM_CLOSED = "http/2 stream closed with error code ";

export const REQUEST_ID_HEADER = "x-request-id";

/** The caller's request id when it is a sane token, else a fresh one. */
export function requestIdFrom(value: string | null | undefined): string {
  return value && /^[A-Za-z0-9._:-]{1,128}$/.test(value) ? value : randomUUID();
}

export function typedDoor(contentType: string | null): string {
  if (contentType?.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType?.startsWith("application/grpc")) return "grpc";
  return "connect";
}

/** The Node requests of the typed calls the interceptor logged (typed-refusal-log.ts logs the others). */
const interceptorLogged = new WeakSet<object>();

export function loggedByInterceptor(req: object): boolean {
  return interceptorLogged.has(req);
}

/** Counts one call in the request metrics. */
export function observeCall(metrics: Metrics, door: string, method: string, outcome: string, seconds: number): void {
  metrics.requests.inc([door, method, outcome]);
  metrics.requestSeconds.observe([door, method], seconds);
}

/** The line and metrics of one typed unary call answered outside Connect (the lean gRPC lane). */
export function logTypedCall(log: Logger, metrics: Metrics, door: string, method: string, requestId: string, started: number, error?: ConnectError): void {
  const ms = performance.now() - started;
  const status = error === undefined ? "ok" : Code[error.code];
  observeCall(metrics, door, method, status, ms / 1000);
  const level = error !== undefined && (error.code === Code.Internal || error.code === Code.Unknown) ? "warn" : "info";
  writeRequestLine(log, level, { door, method, requestId, status, error: error?.rawMessage.slice(0, 200), ms: Math.round(ms * 100) / 100 });
}

/** What the line of a stream nodegate ended for its reader's pace says. */
const CUT_FOR_PACE = { error: "the stream was ended: its client read too slowly" };

/**
 * How a stream whose signal ended was ended: its deadline (Connect aborts the signal with DeadlineExceeded, or the
 * client gave up at it just before: leftAtDeadline), or its client leaving (found from outside: streams that ran out
 * their grpc-timeout were logged and counted Canceled).
 */
function endedBy(signal: AbortSignal, arrivedAt: number, deadlineMs: number | undefined): string {
  const reason: unknown = signal.reason;
  const deadline = (reason instanceof ConnectError && reason.code === Code.DeadlineExceeded) || leftAtDeadline(arrivedAt, deadlineMs);
  return deadline ? Code[Code.DeadlineExceeded] : Code[Code.Canceled];
}

/** Connect interceptor: logs and counts each typed call and returns its request id in a header. */
export function requestLogInterceptor(log: Logger, metrics: Metrics): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const nodeRequest = nodeRequestOf(req.contextValues);
    if (nodeRequest !== undefined) interceptorLogged.add(nodeRequest);
    const requestId = requestIdFrom(req.header.get(REQUEST_ID_HEADER));
    const door = typedDoor(req.header.get("content-type"));
    const method = `${req.service.typeName}/${req.method.name}`;
    const streaming = req.stream;
    const deadlineMs = clientDeadlineMs(req.header.get("grpc-timeout"), req.header.get("connect-timeout-ms"));
    if (streaming) metrics.openStreams.inc();
    const done = (status: string, extra: Record<string, unknown> = {}, level: "info" | "warn" = "info") => {
      if (streaming) metrics.openStreams.dec();
      const ms = performance.now() - started;
      observeCall(metrics, door, method, status, ms / 1000);
      log[level]({ door, method, requestId, status, ...extra, ms: Math.round(ms * 100) / 100 }, "request");
    };
    const failed = (err: unknown): ConnectError => {
      const e = ConnectError.from(err);
      // grpc-js and grpc-go give a gRPC caller an error's trailers as its status metadata, which is where the README
      // points them (found from outside: JsonRpcService errors and refused streams had the id only in headers). An
      // error whose head has not left yet carries it in its trailers alone, as the lean lane's trailers-only answer
      // does: connect-es merges head and trailers, and an id in both read "id, id". One whose head has left (a stream
      // failing mid-way) has it there already. gRPC-Web and Connect keep it in the head, as their lean lanes do.
      const response = door === "grpc" ? nodeResponseOf(req.contextValues) : undefined;
      if (response !== undefined && !response.headersSent) {
        e.metadata.set(REQUEST_ID_HEADER, requestId);
        response.removeHeader(REQUEST_ID_HEADER);
      }
      // Judged once the response has closed: a client that cancels ends its request, then resets the stream, and
      // Connect fails the call for the request it found cut short before the reset is read (found from outside:
      // cancelled streams logged Unknown "Premature close" at warn, or Unimplemented, InvalidArgument).
      whenResponseCloses(req.contextValues, () => {
        if (clientCancelled(req.contextValues)) done(leftAtDeadline(started, deadlineMs) ? Code[Code.DeadlineExceeded] : Code[Code.Canceled]);
        // Over HTTP/1.1 a client giving up at its deadline closes the connection: Connect fails the call Canceled.
        else if (e.code === Code.Canceled && leftAtDeadline(started, deadlineMs)) done(Code[Code.DeadlineExceeded]);
        else done(Code[e.code], { error: e.rawMessage.slice(0, 200) }, e.code === Code.Internal || e.code === Code.Unknown ? "warn" : "info");
      });
      return e;
    };
    let res;
    try {
      res = await next(req);
    } catch (err) {
      throw failed(err);
    }
    res.header.set(REQUEST_ID_HEADER, requestId);
    if (!res.stream) {
      done("ok");
      return res;
    }
    // A stream is done when its messages end (or fail), not when it starts.
    const messages = res.message;
    return {
      ...res,
      message: (async function* () {
        let ended: "ok" | "failed" | undefined;
        try {
          yield* messages;
          ended = "ok";
        } catch (err) {
          ended = "failed";
          // nodegate ended the stream for its reader's pace (cutTransport): the write that then failed is not the story.
          if (transportWasCut(req.contextValues)) {
            done(Code[Code.ResourceExhausted], CUT_FOR_PACE);
            throw err;
          }
          // A client gone mid-stream (its connection reset, so Node closes the stream with INTERNAL_ERROR) fails the
          // next write: the client left, nodegate did not fail (found from outside: counted as Internal, at warn).
          if (req.signal.aborted || (err instanceof ConnectError && err.rawMessage.startsWith(STREAM_CLOSED))) {
            done(endedBy(req.signal, started, deadlineMs));
            throw err;
          }
          throw failed(err);
        } finally {
          // Every message made, but the client had left before they were sent: that is a cancellation too.
          if (ended === "ok") done(req.signal.aborted ? endedBy(req.signal, started, deadlineMs) : "ok");
          // Returned early: the client went away mid-stream, or nodegate ended the stream for its reader's pace.
          else if (ended === undefined) {
            if (transportWasCut(req.contextValues)) done(Code[Code.ResourceExhausted], CUT_FOR_PACE);
            else done(endedBy(req.signal, started, deadlineMs));
          }
        }
      })(),
    };
  };
}
