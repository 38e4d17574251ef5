/**
 * The line and metrics of a typed request that requestLogInterceptor never
 * sees: Connect's handler answers some before its interceptors run (a unary
 * body over the size limit or that does not decode, an unsupported content
 * type), and nodegate's own fallbacks answer others (an RPC no service
 * serves, a malformed Connect GET). Each is logged and counted once, from
 * the status its answer carried, so an operator sees every typed request as
 * every native one.
 */
import { Code } from "@connectrpc/connect";
import { codeFromHttpStatus, codeFromString } from "@connectrpc/connect/protocol-connect";
import type { OutgoingHttpHeaders } from "node:http";
import http2 from "node:http2";
import type { Logger } from "pino";
import type { NodeRequest, NodeResponse } from "../http/http-types.js";
import { whenResponseDone } from "../http/response-closed.js";
import type { Metrics } from "./metrics.js";
import { loggedByInterceptor, observeCall, REQUEST_ID_HEADER, typedDoor } from "./request-log.js";
import { writeRequestLine } from "./request-line.js";

/** The method label of a path no service serves: the path itself would let callers grow the metrics without bound. */
export const UNSERVED_RPC = "(unserved)";

/** grpc-status 0. */
const OK = 0;

/** The status an answer carried, read as it is written: gRPC's from headers or trailers, gRPC-Web's and Connect's from the body. */
class AnswerStatus {
  code: Code | undefined;
  httpStatus = 200;

  headers(fields: OutgoingHttpHeaders | undefined): void {
    const status = fields?.["grpc-status"];
    if (status !== undefined && this.code === undefined) this.code = Number(status) as Code;
  }

  /** A body chunk: a gRPC-Web trailer frame, a Connect stream's end, or a Connect unary error. */
  body(door: string, chunk: Uint8Array, streaming: boolean): void {
    if (this.code !== undefined || chunk.length === 0) return;
    const text = () => Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("utf8", streaming || door === "grpc-web" ? 5 : 0);
    if (door === "grpc-web") {
      if ((chunk[0] as number) & 0x80) this.code = Number(/grpc-status:\s*(\d+)/i.exec(text())?.[1] ?? Code.Unknown) as Code;
      return;
    }
    if (door !== "connect") return;
    if (streaming) {
      if ((chunk[0] as number) & 0x02) this.code = connectCode((parsed(text()) as { error?: { code?: unknown } } | undefined)?.error?.code) ?? Code.Unknown;
      return;
    }
    if (this.httpStatus !== 200) this.code = connectCode((parsed(text()) as { code?: unknown } | undefined)?.code) ?? codeFromHttpStatus(this.httpStatus);
  }

  outcome(finished: boolean): string {
    if (!finished) return Code[Code.Canceled];
    if (this.code !== undefined) return (this.code as number) === OK ? "ok" : (Code[this.code] ?? String(this.code));
    return this.httpStatus === 200 ? "ok" : Code[codeFromHttpStatus(this.httpStatus)];
  }
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function connectCode(value: unknown): Code | undefined {
  return typeof value === "string" ? codeFromString(value) : undefined;
}

/** What an answer is written with, on HTTP/1.1 and HTTP/2 alike. */
interface WrittenAnswer {
  writeHead(status: number, ...rest: unknown[]): unknown;
  addTrailers(trailers: OutgoingHttpHeaders): void;
  write(chunk: unknown, ...rest: unknown[]): boolean;
  end(chunk?: unknown, ...rest: unknown[]): unknown;
}

export interface TypedRefusalLog {
  /** Watches one typed request's answer, and logs it at its end unless the interceptor did. */
  watch(req: NodeRequest, res: NodeResponse): void;
}

/** `servedPaths`: the RPC paths Connect's router serves (`/package.Service/Method`); other paths are counted as UNSERVED_RPC. */
export function typedRefusalLog(log: Logger, metrics: Metrics, servedPaths: () => ReadonlySet<string>): TypedRefusalLog {
  return {
    watch(req, res) {
      const started = performance.now();
      const contentType = req.headers["content-type"];
      const door = typedDoor(contentType ?? null);
      const streaming = contentType !== undefined && /^application\/connect\+/i.test(contentType);
      // Text mode's answer is written as base64, each chunk padded on its own (grpc-web-text-transcoder.ts).
      const base64 = contentType !== undefined && /^application\/grpc-web-text/i.test(contentType);
      const status = new AnswerStatus();
      // A client that leaves mid-request (a cancel during its upload) makes Connect fail reading the body, and what it
      // answers then is not the story (found from outside: logged InvalidArgument, or ok). Node says 'aborted' only
      // while the answer is unfinished, so a refusal the client got in full and then hung up on is logged as it was.
      // An HTTP/2 client's cancel also ends its upload before the reset (grpc-js's does): Connect answers the cut
      // body before the reset is read, and 'aborted' never comes; a reset with CANCEL after an answer to a whole
      // request says that answer did not get out (once it has, the stream is closed and takes no reset). That last
      // is best effort: when the answer has gone and the stream closed before the reset arrives, Node never reports
      // it, and the call is logged as the cut body it answered (seen from outside in 5-20% of such cancels).
      let leftBeforeAnswer = false;
      let answeredWholeRequest = false;
      // Connect destroying a request it refused (a gRPC-Web envelope over readMaxBytes) makes Node say 'aborted' on
      // HTTP/1.1 too, while the client stays on its connection and gets the whole answer: only a client whose
      // connection went has left.
      const connection = "stream" in res ? undefined : req.socket;
      req.once("aborted", () => {
        if (!res.writableEnded && (connection === undefined || connection === null || connection.destroyed)) leftBeforeAnswer = true;
      });
      const read = (chunk: Uint8Array) =>
        status.body(door, base64 ? Buffer.from(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("latin1"), "base64") : chunk, streaming);
      const target = res as unknown as WrittenAnswer;
      const writeHead = target.writeHead.bind(target);
      target.writeHead = (code: number, ...rest: unknown[]) => {
        status.httpStatus = code;
        answeredWholeRequest = req.complete;
        for (const arg of rest) if (typeof arg === "object" && arg !== null && !Array.isArray(arg)) status.headers(arg as OutgoingHttpHeaders);
        return writeHead(code, ...rest);
      };
      const addTrailers = target.addTrailers.bind(target);
      target.addTrailers = (trailers) => {
        status.headers(trailers);
        addTrailers(trailers);
      };
      const write = target.write.bind(target);
      target.write = (chunk: unknown, ...rest: unknown[]) => {
        if (chunk instanceof Uint8Array) read(chunk);
        return write(chunk, ...rest);
      };
      const end = target.end.bind(target);
      target.end = (chunk?: unknown, ...rest: unknown[]) => {
        if (chunk instanceof Uint8Array) read(chunk);
        else if (typeof chunk === "string") read(Buffer.from(chunk));
        return end(chunk, ...rest);
      };
      whenResponseDone(res, () => {
        if (loggedByInterceptor(req)) return;
        // Written straight to the HTTP/2 stream (an unserved RPC's trailers-only answer) or with end(body).
        if ("stream" in res && status.code === undefined) status.headers(res.stream.sentHeaders as OutgoingHttpHeaders);
        const path = (req.url ?? "/").split("?")[0] as string;
        const served = servedPaths().has(path);
        const method = served ? path.slice(1) : UNSERVED_RPC;
        const cancelled = leftBeforeAnswer || (answeredWholeRequest && "stream" in res && res.stream.rstCode === http2.constants.NGHTTP2_CANCEL);
        const outcome = cancelled ? Code[Code.Canceled] : status.outcome(res.writableFinished);
        const ms = performance.now() - started;
        observeCall(metrics, door, method, outcome, ms / 1000);
        const requestId = res.getHeader(REQUEST_ID_HEADER);
        writeRequestLine(log, "info", {
          door,
          method,
          path: served ? undefined : loggablePath(path, (service) => [...servedPaths()].some((p) => p.startsWith(`/${service}/`))),
          requestId: requestId === undefined ? undefined : String(requestId),
          status: outcome,
          httpStatus: status.httpStatus,
          ms: Math.round(ms * 100) / 100,
        });
      });
    },
  };
}

/** A typed RPC's path: `/package.Service/Method`, identifiers only. */
const RPC_SHAPED = /^\/([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\/([A-Za-z_]\w*)$/;

/** A run that could be a key, or hold one (keys are 8 to 128 letters, digits, - and _: config/values.ts KEY_PATTERN). */
const HOLDS_KEY = /[A-Za-z0-9_-]{8,}/;

/** A method name as gRPC spells them (UpperCamelCase, letters only): not taken for a key. */
const METHOD_NAME = /^[A-Z][A-Za-z]*$/;

/**
 * An unserved path as logged, never with anything that could be a key: a method of a service nodegate serves keeps
 * its name when it reads as one (a misspelt method is worth seeing); any other path keeps only a first segment that
 * holds no key-like run (`/v3.0/…`, `/v4/…`). Found from outside: paths such as `/<KEY>/` and `/a.b/<KEY>` logged
 * the key.
 */
export function loggablePath(path: string, isServedService: (service: string) => boolean = () => false): string {
  const rpc = path.length <= 200 ? RPC_SHAPED.exec(path) : null;
  if (rpc !== null && isServedService(rpc[1] as string)) return METHOD_NAME.test(rpc[2] as string) ? path : `/${rpc[1]}/…`;
  const second = path.indexOf("/", 1);
  const first = path.slice(1, second < 0 ? undefined : second);
  const shown = /^[\w.-]{1,64}$/.test(first) && !HOLDS_KEY.test(first) ? `/${first}` : "";
  if (second < 0) return shown || "/…";
  return `${shown}/…`;
}
