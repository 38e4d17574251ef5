/**
 * A server stream's response head, written once its handler says the stream is live rather than with its first
 * message. Connect writes the head with the first message (so a handler can still set headers), and a subscriber
 * could not tell when its subscription ran: a client that subscribes, then sends the transaction it waits for,
 * missed its event (found from outside: grpcio's initial_metadata() returned only with the first head, and 8 of 10
 * streams missed a block mined right after the call). The native door's eth_subscribe answers with the
 * subscription id for the same reason.
 */
import type { HandlerContext } from "@connectrpc/connect";
import type { NodeResponse } from "../http/http-types.js";
import { isGrpcWebText } from "./grpc-web-unary.js";
import { nodeRequestOf, nodeResponseOf } from "./node-request.js";

type WriteHead = (this: NodeResponse, ...args: unknown[]) => NodeResponse;

/**
 * Writes the stream's head now, as Connect would write it with the first message (status 200 and the call's
 * response headers), and leaves Connect's own writeHead nothing to do. Not in gRPC-Web's text mode, whose head the
 * transcoder rewrites (grpc-web-text-transcoder.ts), nor once the head has left.
 */
export function announceLive(ctx: HandlerContext): void {
  const res = nodeResponseOf(ctx.values);
  if (res === undefined || res.headersSent || isGrpcWebText(nodeRequestOf(ctx.values)?.headers["content-type"])) return;
  const writeHead = res.writeHead as unknown as WriteHead;
  writeHead.call(res, 200, Object.fromEntries(ctx.responseHeader));
  (res as { writeHead: WriteHead }).writeHead = function (this: NodeResponse, ...args: unknown[]) {
    return this.headersSent ? this : writeHead.apply(this, args);
  };
  // Node sends a head only with the body's first bytes; an empty write is enough.
  res.write(EMPTY);
}

const EMPTY = new Uint8Array(0);
