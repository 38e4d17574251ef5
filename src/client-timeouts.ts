/**
 * Deadlines that keep slow or silent clients from holding connections: a
 * connection must start and finish sending each request in time (slow-loris),
 * and one with nothing in progress is closed when idle. HTTP/1.1 uses Node's
 * own headersTimeout, requestTimeout and keepAliveTimeout; HTTP/2 has no such
 * settings, so its sessions are watched here.
 */
import type http2 from "node:http2";
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

/**
 * Watches an HTTP/2 session: its first stream must open within the headers
 * deadline (a client that trickles the preface or its first HEADERS is cut
 * off), and it is closed (GOAWAY) once it has had no stream open for the
 * idle deadline. Sessions with open streams (a long server stream) are left
 * alone however quiet they are. (Node's session.setTimeout is not used: with
 * it set, a stream reset under unread writes no longer ends its handler.)
 */
export function guardHttp2Session(session: http2.ServerHttp2Session, t: ClientTimeouts): void {
  let open = 0;
  let idle: NodeJS.Timeout | undefined;
  const firstStream = setTimeout(() => session.destroy(), t.headersTimeoutMs).unref();
  const startIdle = (): void => {
    idle = setTimeout(() => {
      if (open === 0 && !session.closed && !session.destroyed) session.close();
    }, t.idleTimeoutMs).unref();
  };
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    clearTimeout(firstStream);
    clearTimeout(idle);
    open++;
    stream.once("close", () => {
      open--;
      if (open === 0) startIdle();
    });
  });
  session.once("close", () => {
    clearTimeout(firstStream);
    clearTimeout(idle);
  });
}
