/**
 * The request-and-response half of a lean lane's exchange (HTTP/1.1, or
 * HTTP/2 through Node's compatibility API): what the lane core reads and
 * watches. Each lane adds how it writes an answer and an error.
 */
import type { IncomingHttpHeaders } from "node:http";
import { constants as http2constants } from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import type { NodeRequest, NodeResponse } from "../http/http-types.js";
import { whenResponseDone } from "../http/response-closed.js";
import type { UnaryExchange } from "./unary-call.js";

export abstract class HttpExchange implements UnaryExchange {
  constructor(
    protected readonly req: NodeRequest,
    protected readonly res: NodeResponse,
  ) {}

  get headers(): IncomingHttpHeaders {
    return this.req.headers;
  }

  get body(): NodeRequest {
    return this.req;
  }

  whenDone(fn: () => void): void {
    // A pipelined HTTP/1.1 response queued behind others gets no close of its own when its connection goes.
    whenResponseDone(this.res, fn);
  }

  open(): boolean {
    const res = this.res;
    return !("stream" in res ? res.stream.destroyed || res.stream.closed : res.destroyed);
  }

  release(): void {}

  delivered(): boolean {
    return this.res.writableFinished;
  }

  /** A request that did not arrive whole within limits.requestTimeoutMs, which Node (HTTP/1.1) or the session's sweep (HTTP/2) answered 408. */
  answeredElsewhere(): ConnectError | undefined {
    const res = this.res;
    // The drain refuses an HTTP/2 request still arriving (in-flight.ts): not the client's cancel.
    if ("stream" in res && res.stream.rstCode === http2constants.NGHTTP2_REFUSED_STREAM) return new ConnectError("refused: nodegate is shutting down", Code.Unavailable);
    const timedOut =
      "stream" in res ? res.stream.headersSent && res.stream.sentHeaders[":status"] === 408 : (this.req.socket.errored as { code?: string } | null)?.code === "ERR_HTTP_REQUEST_TIMEOUT";
    return timedOut ? new ConnectError("request not received in time", Code.DeadlineExceeded) : undefined;
  }

  abstract answer(body: Buffer, requestId: string): void;
  abstract answerError(error: ConnectError, requestId: string): void;
}
