/**
 * The deadline a client set on a call, read from its header as the protocols
 * allow it: `grpc-timeout` (gRPC, gRPC-Web) at most 8 digits and a unit,
 * `connect-timeout-ms` (the Connect protocol) at most 10 digits. A value
 * outside that is no deadline here; the lane that reads it refuses it.
 */
const GRPC_TIMEOUT = /^(\d{1,8})([HMSmun])$/;
const GRPC_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };
const CONNECT_TIMEOUT = /^\d{1,10}$/;

/** A `grpc-timeout` value in ms; undefined when the protocol does not allow it. */
export function grpcTimeoutMs(value: string): number | undefined {
  const match = GRPC_TIMEOUT.exec(value);
  return match === null ? undefined : Number(match[1]) * (GRPC_UNIT_MS[match[2] as string] as number);
}

/** A `connect-timeout-ms` value in ms; undefined when the protocol does not allow it. */
export function connectTimeoutMs(value: string): number | undefined {
  return CONNECT_TIMEOUT.test(value) ? Number(value) : undefined;
}

/** The call's deadline in ms from its arrival, from `grpc-timeout` when sent, else `connect-timeout-ms`; undefined when none. */
export function clientDeadlineMs(grpcTimeout: string | string[] | null | undefined, connectTimeout: string | string[] | null | undefined): number | undefined {
  if (typeof grpcTimeout === "string") return grpcTimeoutMs(grpcTimeout);
  return typeof connectTimeout === "string" ? connectTimeoutMs(connectTimeout) : undefined;
}

/**
 * How close to its deadline a client's leaving counts as the deadline passing. The client times its call from its
 * send, nodegate from the request's arrival, so a client giving up at its deadline resets the stream about when
 * nodegate's own timer fires, often a little before (found from outside: grpc-js calls that ran out their deadline
 * were mostly logged and counted Canceled).
 */
export const DEADLINE_RACE_MS = 50;

/** Whether a client that left now, on a call that arrived at `arrivedAt` (performance.now()) with `deadlineMs`, left at its deadline. */
export function leftAtDeadline(arrivedAt: number, deadlineMs: number | undefined): boolean {
  return deadlineMs !== undefined && performance.now() >= arrivedAt + deadlineMs - DEADLINE_RACE_MS;
}
