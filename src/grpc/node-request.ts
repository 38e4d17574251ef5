/**
 * Gives typed handlers the Node request and response under their call
 * (through Connect's context values), for what Connect cannot do: end a
 * stream whose transport is stuck behind writes the client does not read (a
 * gRPC status would queue behind those writes, so the HTTP/2 stream is reset
 * with ENHANCE_YOUR_CALM, which gRPC clients report as RESOURCE_EXHAUSTED,
 * when its status has not got out in time),
 * and know when an answer has left (its response closed).
 */
import http2 from "node:http2";
import { type ContextValues, createContextKey, createContextValues, type HandlerContext } from "@connectrpc/connect";
import type { NodeRequest, NodeResponse } from "../http/http-types.js";
import { rememberConnection, whenResponseDone } from "../http/response-closed.js";

const nodeRequestKey = createContextKey<NodeRequest | undefined>(undefined, { description: "the Node request of a typed call" });
const nodeResponseKey = createContextKey<NodeResponse | undefined>(undefined, { description: "the Node response of a typed call" });

/** Connect's contextValues option: remembers each call's Node request and response. */
export function nodeRequestContext(req: NodeRequest, res: NodeResponse): ContextValues {
  rememberConnection(res);
  return createContextValues().set(nodeRequestKey, req).set(nodeResponseKey, res);
}

/** The Node request under a typed call (undefined for calls that did not come through the Node adapter). */
export function nodeRequestOf(values: ContextValues): NodeRequest | undefined {
  return values.get(nodeRequestKey);
}

/** The Node response under a typed call (undefined for calls that did not come through the Node adapter). */
export function nodeResponseOf(values: ContextValues): NodeResponse | undefined {
  return values.get(nodeResponseKey);
}

/** Calls `fn` once the typed call's response has closed (whole or cut short); at once when it has, or when the call came through no Node response. */
export function whenResponseCloses(values: ContextValues, fn: () => void): void {
  const res = values.get(nodeResponseKey);
  if (res === undefined) fn();
  else whenResponseDone(res, fn);
}

/**
 * Whether the client cancelled the call: reset its HTTP/2 stream (a gRPC client ends its request body, then resets),
 * or left an HTTP/1.1 request before its body was whole. Connect fails such a call for the body it found cut short
 * ("incomplete envelope", "missing input message", "Premature close"), which is a cancellation, not the client's
 * error or nodegate's. Read once the response has closed: the reset may come after the body's end.
 */
export function clientCancelled(values: ContextValues): boolean {
  const req = values.get(nodeRequestKey);
  if (req === undefined) return false;
  if (req instanceof http2.Http2ServerRequest) return req.aborted || req.stream.rstCode === http2.constants.NGHTTP2_CANCEL;
  // HTTP/1.1 has no reset: a body that never ended and an answer that never left (a body refused as too large ends
  // unread too, but its answer goes out).
  return req.readableAborted && values.get(nodeResponseKey)?.writableFinished !== true;
}

/** Requests whose transport cutTransport ended. */
const cut = new WeakSet<NodeRequest>();

/** Whether the call's transport was ended by cutTransport (its client read too slowly), not by the client. */
export function transportWasCut(values: ContextValues): boolean {
  const req = values.get(nodeRequestKey);
  return req !== undefined && cut.has(req);
}

/**
 * For a call whose handler is ending it with an error: cuts its transport (cutTransport) if its answer has not closed
 * within `graceMs`. A stream whose client reads gets the error as its status; one stuck behind bytes its client does
 * not read never would, since the status waits behind them.
 */
export function cutTransportUnlessClosed(ctx: HandlerContext, graceMs: number): void {
  const res = ctx.values.get(nodeResponseKey);
  if (res === undefined) return;
  const timer = setTimeout(() => cutTransport(ctx), graceMs).unref();
  whenResponseDone(res, () => clearTimeout(timer));
}

/** Ends the call's transport at once: resets its HTTP/2 stream (RESOURCE_EXHAUSTED), or drops an HTTP/1.1 connection. */
export function cutTransport(ctx: HandlerContext): void {
  const req = nodeRequestOf(ctx.values);
  if (req === undefined) return;
  cut.add(req);
  if (req instanceof http2.Http2ServerRequest) {
    if (req.stream.destroyed) return;
    req.stream.close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    // The RST_STREAM is out; destroying with a "destroyed" error makes the write Connect is stuck on fail as a
    // client hang-up, which Connect's adapter expects, instead of as an internal error it reports on stderr.
    req.stream.destroy(Object.assign(new Error("stream reset: the subscriber read too slowly"), { code: "ERR_STREAM_DESTROYED" }));
    return;
  }
  req.socket.destroy();
}
