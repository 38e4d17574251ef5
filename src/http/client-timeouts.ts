/**
 * Deadlines that keep slow or silent clients from holding connections: a
 * connection must start and finish sending each request in time (slow-loris),
 * and one with nothing in progress is closed when idle. HTTP/1.1 uses Node's
 * own headersTimeout, requestTimeout and keepAliveTimeout; HTTP/2 has no such
 * settings, so its sessions are watched here.
 */
import http2 from "node:http2";
import type { Socket } from "node:net";
import type { Limits } from "../config/config.js";
import { bytesHeldBack } from "./response-body.js";

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

/**
 * Keeps a connection's socket error (a client that resets before nodegate
 * has read which protocol it speaks: a load balancer's TCP health check, a
 * port scan) from being thrown: with no listener yet, it ended the process
 * (found on review). The socket is destroyed as the error is emitted; the
 * server it is handed to adds its own listener.
 */
export function ignoreResetBeforeIdentified(socket: Socket): void {
  socket.on("error", () => {});
}

/** The client is still sending the stream's request (it has not half-closed its side). */
export function stillReceiving(stream: http2.ServerHttp2Stream): boolean {
  const state = stream.state?.state;
  return state === http2.constants.NGHTTP2_STREAM_STATE_OPEN || state === http2.constants.NGHTTP2_STREAM_STATE_HALF_CLOSED_LOCAL;
}

/**
 * Ends a stream whose request did not arrive whole within the request
 * deadline: 408 when nothing was answered yet (a gRPC caller gets its own
 * terms, DEADLINE_EXCEEDED in a trailers-only answer), then RST_STREAM
 * (NO_ERROR, after a response: "stop sending"), as HTTP/1.1 gets 408 and a
 * closed connection.
 */
function cutOff(stream: http2.ServerHttp2Stream, grpcContentType: string | undefined): void {
  if (!stream.headersSent) {
    try {
      if (grpcContentType !== undefined) {
        stream.respond(
          { ":status": 200, "content-type": grpcContentType, "grpc-status": "4", "grpc-message": "request%20not%20received%20in%20time" },
          { endStream: true },
        );
      } else {
        stream.respond({ ":status": 408, "content-type": "text/plain" });
        stream.end("request timeout\n");
      }
    } catch {
      // The stream went away meanwhile.
    }
  }
  stream.close(http2.constants.NGHTTP2_NO_ERROR);
}

/**
 * Watches an HTTP/2 session: its preface and SETTINGS must arrive within the
 * headers deadline (a client that trickles them is cut off); from then on a
 * session without streams is held to the idle deadline, not the headers one,
 * since gRPC clients connect ahead of their first call (grpc-go dials at
 * once, and on a GOAWAY at 10 s dialled again, every 10 s, for as long as
 * the channel was unused); each stream's request (headers and body) must
 * arrive whole within the request deadline, checked by one sweep per
 * session, not a timer per stream; and the session is closed (GOAWAY) once
 * it has had no stream open for the idle deadline. A stream whose request
 * has arrived (a long server stream) is left alone however quiet it is.
 *
 * Answers a client does not take (a flow-control window it never opens, a
 * connection it stops reading) are held in nodegate, where no write ever
 * fails. So the sweep also weighs what the session's streams hold unsent: a
 * session that holds some and has written less than MIN_PROGRESS_BYTES to
 * its connection in a request deadline is ended (GOAWAY CANCEL), and one
 * whose streams buffer more than `maxWsUnreadBytes` in Node is ended at once
 * (GOAWAY ENHANCE_YOUR_CALM). Progress is judged by the connection's bytes,
 * not by each stream's: a stream's buffer shows no change while a piece of
 * it is on its way, however fast the client reads. A stream whose answer is
 * complete while its client is still sending (an early error) is reset with
 * NO_ERROR, HTTP/2's "stop sending". (Node's session.setTimeout is not used:
 * with it set, a stream reset under unread writes no longer ends its
 * handler.)
 *
 * A session with streams open that has read nothing for a headers deadline
 * is sent a PING, and ended (GOAWAY CANCEL) when no answer comes within
 * another: after a connection error of its client's (a DATA frame on stream
 * 0, a bad HPACK index), nghttp2 answers GOAWAY and reads nothing more, so
 * Node never sees the client close, and its streams stayed open with no
 * event (found from outside: a health Watch held so was there after 4
 * minutes and held a drain for its whole drainMs; the socket sat in
 * CLOSE-WAIT). Every HTTP/2 client answers a PING by itself.
 */
export function guardHttp2Session(session: http2.ServerHttp2Session, t: ClientTimeouts): void {
  let idle: NodeJS.Timeout | undefined;
  /** Open streams, with when each opened (+Infinity once its request has arrived whole). */
  const opened = new Map<http2.ServerHttp2Stream, number>();
  /** The content type of streams that are gRPC or gRPC-Web calls. */
  const grpcStreams = new WeakMap<http2.ServerHttp2Stream, string>();
  let sweep: NodeJS.Timeout | undefined;
  /** The connection's bytes written at the last sweep, and since when none were while answers waited. */
  let written = 0;
  let stalledSince: number | undefined;
  /** The connection's bytes read at the last sweep, since when none were, and when a PING went out unanswered. */
  let read = 0;
  let quietSince = 0;
  let pingSentAt: number | undefined;
  const firstStream = setTimeout(() => session.destroy(), t.headersTimeoutMs).unref();
  const startIdle = (): void => {
    idle = setTimeout(() => {
      if (opened.size === 0 && !session.closed && !session.destroyed) session.close();
    }, t.idleTimeoutMs).unref();
  };
  session.once("remoteSettings", () => {
    clearTimeout(firstStream);
    if (opened.size === 0 && idle === undefined) startIdle();
  });
  const end = (code: number): void => {
    session.goaway(code);
    session.destroy();
  };
  const check = (): void => {
    if (opened.size === 0) {
      // Stopped here rather than on each stream's close: one call at a time would start and stop it per call.
      clearInterval(sweep);
      sweep = undefined;
      stalledSince = undefined;
      return;
    }
    const now = performance.now();
    const nowRead = bytesReadOn(session);
    if (nowRead !== read) {
      read = nowRead;
      quietSince = now;
      pingSentAt = undefined;
    } else if (pingSentAt !== undefined) {
      if (now - pingSentAt >= t.headersTimeoutMs) return end(http2.constants.NGHTTP2_CANCEL);
    } else if (now - quietSince >= t.headersTimeoutMs) {
      pingSentAt = now;
      try {
        session.ping(() => {});
      } catch {
        // Too many PINGs out, or the session going: the next sweep judges it.
      }
    }
    const late = now - t.requestTimeoutMs;
    let buffered = 0;
    let unsent = 0;
    for (const [stream, at] of opened) {
      if (stream.state?.state === http2.constants.NGHTTP2_STREAM_STATE_HALF_CLOSED_LOCAL) {
        stream.close(http2.constants.NGHTTP2_NO_ERROR);
        continue;
      }
      if (at <= late) {
        if (stillReceiving(stream)) {
          cutOff(stream, grpcStreams.get(stream));
          continue;
        }
        opened.set(stream, Number.POSITIVE_INFINITY); // arrived whole: never checked again
      }
      buffered += stream.writableLength;
      unsent += stream.writableLength + bytesHeldBack(stream);
    }
    // Only what Node buffers counts against the cap: an answer still held back in pieces is already in memory, and
    // ending the session would cut off a slow reader of one large answer without bounding anything.
    if (buffered > t.maxWsUnreadBytes) return end(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    const nowWritten = bytesWrittenOn(session);
    if (unsent === 0) {
      stalledSince = undefined;
      written = nowWritten;
    } else if (stalledSince === undefined) {
      stalledSince = now;
      written = nowWritten;
    } else if (nowWritten - written >= MIN_PROGRESS_BYTES) {
      // Progress: the window starts again from here.
      stalledSince = now;
      written = nowWritten;
    } else if (stalledSince <= late) {
      return end(http2.constants.NGHTTP2_CANCEL);
    }
  };
  session.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    clearTimeout(firstStream);
    clearTimeout(idle);
    opened.set(stream, performance.now());
    const contentType = headers["content-type"];
    if (contentType?.startsWith("application/grpc")) grpcStreams.set(stream, contentType);
    if (sweep === undefined) {
      read = bytesReadOn(session);
      quietSince = performance.now();
      pingSentAt = undefined;
      sweep = setInterval(check, checkInterval(t)).unref();
    }
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

/**
 * Watches HTTP/1.1 connections for answers their clients stop taking: Node
 * has no deadline while a response is being written, so a client that asks
 * for a large answer and stops reading held its connection, and the answer
 * (counted in limits.maxReplyBytesInFlight, see upstream/held-answers.ts),
 * for ever. A connection with bytes waiting to be written that has taken
 * none of them in a request deadline is destroyed, as nginx's send_timeout
 * does. What waits is the socket's own buffer and libuv's write queue (a
 * write the kernel has taken part of), so a reader of one large write is
 * seen to progress, at the kernel's pace: a write resumes once a third or so
 * of the socket's send buffer is free (about 1.3 MiB of 4), so a client must
 * take about that much per deadline (44 KiB/s at the default 30 s). HTTP/2
 * sessions have their own rule (guardHttp2Session). One sweep for all
 * connections, running only while some are watched. Connections upgraded
 * to WebSocket are forgotten: ws has its own rules (maxWsUnreadBytes, pings).
 */
export function watchHttp1Writes(t: ClientTimeouts): { watch(socket: Socket): void; forget(socket: Socket): void } {
  /** Watched connections, with what waited at the last progress and when that was (undefined: nothing waits). */
  const sockets = new Map<Socket, { unsent: number; since: number } | undefined>();
  let sweep: NodeJS.Timeout | undefined;
  const check = (): void => {
    const now = performance.now();
    for (const [socket, last] of sockets) {
      const unsent = unsentBytes(socket);
      if (unsent === 0) {
        if (last !== undefined) sockets.set(socket, undefined);
      } else if (last === undefined || unsent !== last.unsent) {
        // Something waits since now, more was written (a next response), or the client took some: from here.
        sockets.set(socket, { unsent, since: now });
      } else if (now - last.since >= t.requestTimeoutMs) {
        sockets.delete(socket);
        socket.destroy();
      }
    }
    if (sockets.size === 0) {
      clearInterval(sweep);
      sweep = undefined;
    }
  };
  const forget = (socket: Socket): void => {
    sockets.delete(socket);
  };
  return {
    watch(socket) {
      sockets.set(socket, undefined);
      socket.once("close", () => forget(socket));
      sweep ??= setInterval(check, checkInterval(t)).unref();
    },
    forget,
  };
}

/** Bytes a connection has still to write: its stream buffer and what libuv has not yet handed to the kernel. */
function unsentBytes(socket: Socket): number {
  const handle = (socket as { _handle?: { writeQueueSize?: number } | null })._handle;
  return socket.writableLength + (handle?.writeQueueSize ?? 0);
}

/**
 * What a connection must write in a request deadline, while answers wait, to
 * count as taking them: PING acknowledgements (17 bytes) or 1-byte window
 * updates do not keep a session that takes no answers alive. A reader slower
 * than this (half a kilobyte a second at the default deadline) is not one.
 */
const MIN_PROGRESS_BYTES = 16 * 1024;

/** Bytes the session has read from its connection (0 once the socket is gone). */
function bytesReadOn(session: http2.ServerHttp2Session): number {
  try {
    return session.socket?.bytesRead ?? 0;
  } catch {
    return 0;
  }
}

/** Bytes the session has written to its connection (0 once the socket is gone). */
function bytesWrittenOn(session: http2.ServerHttp2Session): number {
  try {
    return session.socket?.bytesWritten ?? 0;
  } catch {
    return 0;
  }
}
