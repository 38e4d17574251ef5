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

export type ClientTimeouts = Pick<Limits, "headersTimeoutMs" | "requestTimeoutMs" | "idleTimeoutMs" | "maxWsUnreadBytes">;

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

/** A stream the session watch keeps an eye on. */
interface WatchedStream {
  /** When it opened; +Infinity once its request has arrived whole. */
  openedAt: number;
  /** Answer bytes not yet taken by the client at the last sweep. */
  unsent: number;
  /** Since when the client has taken none of them (undefined while it takes some, or none wait). */
  stalledSince: number | undefined;
}

/**
 * Watches an HTTP/2 session: its first stream must open within the headers
 * deadline (a client that trickles the preface or its first HEADERS is cut
 * off); each stream's request (headers and body) must arrive whole within
 * the request deadline, checked by one sweep per session, not a timer per
 * stream; and the session is closed (GOAWAY) once it has had no stream open
 * for the idle deadline. A stream whose request has arrived (a long server
 * stream) is left alone however quiet it is, as long as its client takes
 * what it is sent.
 *
 * Answers a client does not take (a flow-control window it never opens) are
 * held in Node's stream buffers, where no write ever fails: a stream whose
 * client took none of its answer for the request deadline is reset
 * (CANCEL), and a session holding more than `maxWsUnreadBytes` of unsent
 * answers is ended (GOAWAY ENHANCE_YOUR_CALM), the bound a WebSocket client
 * has. A stream whose answer is complete while its client is still sending
 * (an early error) is reset with NO_ERROR, HTTP/2's "stop sending". (Node's
 * session.setTimeout is not used: with it set, a stream reset under unread
 * writes no longer ends its handler.)
 */
export function guardHttp2Session(session: http2.ServerHttp2Session, t: ClientTimeouts): void {
  let idle: NodeJS.Timeout | undefined;
  const watched = new Map<http2.ServerHttp2Stream, WatchedStream>();
  let sweep: NodeJS.Timeout | undefined;
  const firstStream = setTimeout(() => session.destroy(), t.headersTimeoutMs).unref();
  const startIdle = (): void => {
    idle = setTimeout(() => {
      if (watched.size === 0 && !session.closed && !session.destroyed) session.close();
    }, t.idleTimeoutMs).unref();
  };
  const check = (): void => {
    if (watched.size === 0) {
      // Stopped here rather than on each stream's close: one call at a time would start and stop it per call.
      clearInterval(sweep);
      sweep = undefined;
      return;
    }
    const now = performance.now();
    const late = now - t.requestTimeoutMs;
    let unsentInSession = 0;
    for (const [stream, watch] of watched) {
      const state = stream.state?.state;
      if (state === http2.constants.NGHTTP2_STREAM_STATE_HALF_CLOSED_LOCAL) {
        stream.close(http2.constants.NGHTTP2_NO_ERROR);
        continue;
      }
      if (watch.openedAt <= late) {
        if (stillReceiving(stream)) {
          cutOff(stream);
          continue;
        }
        watch.openedAt = Number.POSITIVE_INFINITY; // arrived whole: never checked again
      }
      const unsent = stream.writableLength;
      unsentInSession += unsent;
      if (unsent === 0 || unsent < watch.unsent) watch.stalledSince = undefined;
      else if (watch.stalledSince === undefined) watch.stalledSince = now;
      else if (watch.stalledSince <= late) stream.close(http2.constants.NGHTTP2_CANCEL);
      watch.unsent = unsent;
    }
    if (unsentInSession > t.maxWsUnreadBytes) {
      // Said first: destroy alone resets the streams and sends GOAWAY with NO_ERROR, whatever code it is given.
      session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
      session.destroy();
    }
  };
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    clearTimeout(firstStream);
    clearTimeout(idle);
    watched.set(stream, { openedAt: performance.now(), unsent: 0, stalledSince: undefined });
    sweep ??= setInterval(check, checkInterval(t)).unref();
    stream.once("close", () => {
      watched.delete(stream);
      if (watched.size === 0) startIdle();
    });
  });
  session.once("close", () => {
    clearTimeout(firstStream);
    clearTimeout(idle);
    clearInterval(sweep);
  });
}
