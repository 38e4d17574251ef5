/**
 * Calls on Connect's own handlers (streams, JsonRpcService, health, Connect
 * GET, compressed requests) whose deadline has passed before the handler
 * runs fail DEADLINE_EXCEEDED then, as on the lean lanes (unary-call.ts):
 * Connect aborts the signal of a zero deadline before the handler, which
 * streams never saw (their abort listeners came too late), and turns a
 * deadline under a millisecond into a 1 ms timer that races the call (found
 * from outside: streams with "0m" ran unbounded; JsonRpcService asked the
 * node and sometimes answered OK with "500u"; health answered SERVING).
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { clientDeadlineMs } from "../http/client-deadline.js";

/** Whether a call's headers set a deadline under a millisecond: passed by the time it is read. */
function passedOnArrival(header: Headers): boolean {
  const timeoutMs = clientDeadlineMs(header.get("grpc-timeout"), header.get("connect-timeout-ms"));
  return timeoutMs !== undefined && timeoutMs < 1;
}

export function passedDeadlineInterceptor(): Interceptor {
  return (next) => (req) => {
    if (req.signal.aborted) {
      const reason: unknown = req.signal.reason;
      throw reason instanceof ConnectError ? reason : new ConnectError("the client cancelled the call", Code.Canceled);
    }
    if (passedOnArrival(req.header)) throw new ConnectError("the operation timed out", Code.DeadlineExceeded);
    return next(req);
  };
}
