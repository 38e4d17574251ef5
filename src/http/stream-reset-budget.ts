/**
 * Closes an HTTP/2 session gracefully before its client's stream resets
 * reach nghttp2's flood limit. Since the "rapid reset" fix, nghttp2 ends a
 * server session with error code 2 once its client has reset 1,000 streams
 * beyond a refill of 33 a second, and Node 20 cannot raise that limit: every
 * call still on the session then fails with INTERNAL. A client that cancels
 * calls (or lets deadlines pass) at 60 a second reaches it every half a
 * minute (found from outside: calls that had nothing to do with the
 * cancelling failed with INTERNAL). So the resets are counted here as
 * nghttp2 counts them, and a little before the limit the session is closed
 * gracefully (GOAWAY with NO_ERROR): the calls under way finish, the client
 * opens a new connection for new ones (as it does after a server's
 * max-connection-age), and nghttp2 counts no resets once a GOAWAY is sent.
 * A flood of resets still ends its session, as before, only politely.
 *
 * A call whose deadline passes is counted too, though Node may see no reset:
 * the client and nodegate time it out at once, nodegate's DEADLINE_EXCEEDED
 * often closes the stream first, and the client's RST_STREAM, arriving for a
 * stream already closed, is counted by nghttp2 all the same (found from
 * outside: a grpc-js client whose calls hit a 50 ms deadline 240 times a
 * second had its other calls fail INTERNAL, the budget never closing). So is
 * a call answered within a little of its client's deadline: the client may
 * give up as the answer reaches it and reset a stream already closed here,
 * which Node never sees (found from outside: grpc-js callers with 4-10 ms
 * deadlines, most answered in time, had their connection ended with error
 * code 2 and a subscription on it failed INTERNAL). And while a client is
 * cancelling calls (it reset one in the last 10 s), each call answered counts
 * too: it may have been cancelled as its answer reached the client, a reset
 * Node never sees either (found from outside: a client cancelling calls 0-2 ms
 * after starting them had about half answered first, the budget saw half the
 * resets, and nghttp2 ended the connection with error code 2).
 */
import type http2 from "node:http2";
import { clientDeadlineMs, DEADLINE_RACE_MS } from "./client-deadline.js";

/** nghttp2's stream reset limit (NGHTTP2_DEFAULT_STREAM_RESET_BURST and _RATE). */
const NGHTTP2_RESET_BURST = 1000;
const NGHTTP2_RESET_RATE_PER_SECOND = 33;
/** Resets left in nghttp2's allowance when the session is closed: room for those of the calls still under way. */
const RESETS_KEPT_IN_HAND = 200;
/** How long after a reset Node saw its client counts as cancelling calls. */
const CANCELLING_FOR_MS = 10_000;

export interface ResetBudget {
  /** A stream of the session was reset (or ended before its answer): one more of nghttp2's allowance used. */
  reset(): void;
}

/**
 * nghttp2's token bucket, seen from outside: refilled per whole second as
 * nghttp2 does (its clock is in seconds), so the estimate never runs ahead.
 */
export function resetBudget(close: () => void, now: () => number = Date.now): ResetBudget {
  let left = NGHTTP2_RESET_BURST;
  let second = Math.floor(now() / 1000);
  let closed = false;
  return {
    reset() {
      if (closed) return;
      const current = Math.floor(now() / 1000);
      if (current !== second) {
        left = Math.min(NGHTTP2_RESET_BURST, left + (current - second) * NGHTTP2_RESET_RATE_PER_SECOND);
        second = current;
      }
      left--;
      if (left > RESETS_KEPT_IN_HAND) return;
      closed = true;
      close();
    },
  };
}

/** The grpc-status nodegate sent on a stream (in its trailers, or in the head of a trailers-only answer). */
function sentGrpcStatus(stream: http2.ServerHttp2Stream): unknown {
  return stream.sentTrailers?.["grpc-status"] ?? stream.sentHeaders?.["grpc-status"];
}

const DEADLINE_EXCEEDED = "4";


/** Watches a server session's streams and closes it gracefully before its client's resets end it. */
export function closeBeforeResetFlood(session: http2.ServerHttp2Session): void {
  const budget = resetBudget(() => session.close());
  // `aborted`: the stream closed before its answer ended, by a client's RST_STREAM or (counted too, to be safe) one
  // nodegate sent. One listener built once per session, not a closure per stream: this runs for every call.
  // When each stream's client gives up, for streams that have a deadline.
  const deadlines = new WeakMap<http2.ServerHttp2Stream, number>();
  let lastSeenResetAt = Number.NEGATIVE_INFINITY;
  const countIfReset = function (this: http2.ServerHttp2Stream): void {
    const now = performance.now();
    if (this.aborted) {
      lastSeenResetAt = now;
      budget.reset();
    } else if (String(sentGrpcStatus(this)) === DEADLINE_EXCEEDED && deadlines.has(this)) {
      // The client's own deadline passed (a node's or nodegate's time limit, also DEADLINE_EXCEEDED, is no reset).
      budget.reset();
    } else {
      const givesUpAt = deadlines.get(this);
      // A call answered within a little of its client's deadline (the answer's way to the client, and the client's
      // lag in reading it): the client may have given up and reset it. A call answered while its client is
      // cancelling calls: it may have been cancelled as its answer arrived.
      if ((givesUpAt !== undefined && now >= givesUpAt - DEADLINE_RACE_MS) || now - lastSeenResetAt < CANCELLING_FOR_MS) budget.reset();
    }
  };
  session.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    const deadlineMs = clientDeadlineMs(headers["grpc-timeout"], headers["connect-timeout-ms"]);
    if (deadlineMs !== undefined) deadlines.set(stream, performance.now() + deadlineMs);
    stream.once("close", countIfReset);
  });
}
