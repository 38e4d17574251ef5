/**
 * Deadlines longer than Node's timers can hold. A timer takes at most
 * 2^31-1 ms (24.8 days); a longer one fires at once, so a client asking for
 * a month (grpc-timeout allows 99999999H, Connect ten digits of ms) would
 * fail straight away. Such a deadline is as good as none: the header is
 * lowered to the longest a timer holds before any lane reads it.
 */
import { connectTimeoutMs, grpcTimeoutMs } from "../http/client-deadline.js";

const MAX_TIMER_MS = 2 ** 31 - 1;
/** grpc-timeout: the longest a timer holds, in whole seconds. */
const GRPC_LONGEST = `${Math.floor(MAX_TIMER_MS / 1000)}S`;

export function clampDeadlineHeaders(headers: Record<string, string | string[] | undefined>): void {
  // Only values the protocols allow (gRPC: at most 8 digits; Connect: at most 10) are lowered; longer ones are left
  // for the lane to refuse (found from outside: 11-digit values were lowered, then taken, while 9 digits were refused).
  const grpc = headers["grpc-timeout"];
  if (typeof grpc === "string" && (grpcTimeoutMs(grpc) ?? 0) > MAX_TIMER_MS) headers["grpc-timeout"] = GRPC_LONGEST;
  const connect = headers["connect-timeout-ms"];
  if (typeof connect === "string" && (connectTimeoutMs(connect) ?? 0) > MAX_TIMER_MS) headers["connect-timeout-ms"] = String(MAX_TIMER_MS);
}
