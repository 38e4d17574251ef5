/**
 * Deadlines that keep slow or silent clients from holding connections: a
 * connection must start and finish sending each request in time (slow-loris),
 * and one with nothing in progress is closed when idle. HTTP/1.1 uses Node's
 * own headersTimeout, requestTimeout and keepAliveTimeout; HTTP/2 has no such
 * settings, so its sessions are watched here.
 */
import http2 from "node:http2";
import type { Socket } from "node:net";
import type { Limits } from "./config.js";

export type ClientTimeouts = Pick<Limits, "headersTimeoutMs" | "requestTimeoutMs" | "idleTimeoutMs">;

/** Node checks its HTTP/1.1 deadlines on an interval; this keeps the check a fraction of the shortest deadline. */
function checkInterval(t: ClientTimeouts): number {
  return Math.max(50, Math.min(1000, Math.floor(t.headersTimeoutMs / 4)));
}

/** Options of an HTTP/1.1 server (http.createServer) that enforce the deadlines. */
export function http1TimeoutOptions(t: ClientTimeouts) {
  return {
    headersTimeout: t.headersTimeoutMs,
    requestTimeout: t.requestTimeoutMs,
    keepAliveTimeout: t.idleTimeoutMs,
    connectionsCheckingInterval: checkInterval(t),
  };
}

/**
 * Destroys a connection that has not said which protocol it speaks within the
 * headers deadline (a client that connects and stays silent, or trickles its
 * first bytes, never reaches an HTTP parser). Returns the function that ends
 * the guard, called when the connection is handed to an HTTP server, whose
 * own deadlines take over.
 */
export function closeUnlessIdentified(socket: Socket, t: ClientTimeouts): () => void {
  const timer = setTimeout(() => socket.destroy(), t.headersTimeoutMs).unref();
  const done = (): void => clearTimeout(timer);
  socket.once("close", done);
  return () => {
    done();
    socket.off("close", done);
  };
}

/** The client is still sending the stream's request (it has not half-closed its side). */
function stillReceiving(stream: http2.ServerHttp2Stream): boolean {
  const state = stream.state?.state;
  return state === http2.constants.NGHTTP2_STREAM_STATE_OPEN || state === http2.constants.NGHTTP2_STREAM_STATE_HALF_CLOSED_LOCAL;
}

/**
 * Ends a stream whose request did not arrive whole within the request
 * deadline: 408 when nothing was answered yet, then RST_STREAM (NO_ERROR,
 * after a response: "stop sending"), as HTTP/1.1 gets 408 and a closed
 * connection.
 */
function cutOff(stream: http2.ServerHttp2Stream): void {
  if (!stream.headersSent) {
    try {
      stream.respond({ ":status": 408, "content-type": "text/plain" });
      stream.end("request timeout\n");
    } catch {
      // The stream went away meanwhile.
    }
  }
  stream.close(http2.constants.NGHTTP2_NO_ERROR);
}

/**
 * Watches an HTTP/2 session: its first stream must open within the headers
 * deadline (a client that trickles the preface or its first HEADERS is cut
 * off); each stream's request (headers and body) must arrive whole within
 * the request deadline, checked by one sweep per session, not a timer per
 * stream; and the session is closed (GOAWAY) once it has had no stream open
 * for the idle deadline. A stream whose request has arrived (a long server
 * stream) is left alone however quiet it is. (Node's session.setTimeout is
 * not used: with it set, a stream reset under unread writes no longer ends
 * its handler.)
 */
export function guardHttp2Session(session: http2.ServerHttp2Session, t: ClientTimeouts): void {
  let idle: NodeJS.Timeout | undefined;
  /** Open streams, with when each opened. */
  const opened = new Map<http2.ServerHttp2Stream, number>();
  let sweep: NodeJS.Timeout | undefined;
  const firstStream = setTimeout(() => session.destroy(), t.headersTimeoutMs).unref();
  const startIdle = (): void => {
    idle = setTimeout(() => {
      if (opened.size === 0 && !session.closed && !session.destroyed) session.close();
    }, t.idleTimeoutMs).unref();
  };
  const cutOffLateRequests = (): void => {
    if (opened.size === 0) {
      // Stopped here rather than on each stream's close: one call at a time would start and stop it per call.
      clearInterval(sweep);
      sweep = undefined;
      return;
    }
    const late = performance.now() - t.requestTimeoutMs;
    for (const [stream, at] of opened) {
      if (at > late) continue;
      if (stillReceiving(stream)) cutOff(stream);
      else opened.set(stream, Number.POSITIVE_INFINITY); // arrived whole: never checked again
    }
  };
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    clearTimeout(firstStream);
    clearTimeout(idle);
    opened.set(stream, performance.now());
    sweep ??= setInterval(cutOffLateRequests, checkInterval(t)).unref();
    stream.once("close", () => {
      opened.delete(stream);
      if (opened.size === 0) startIdle();
    });
  });
  session.once("close", () => {
    clearTimeout(firstStream);
    clearTimeout(idle);
    clearInterval(sweep);
  });
}
