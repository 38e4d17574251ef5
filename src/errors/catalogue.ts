/**
 * nodegate's own errors, in one place (fastify style): each has a stable
 * JSON-RPC code, a gRPC code and an HTTP status. Codes -32050..-32059 are
 * nodegate's and collide with no provider, eRPC or proxyd code.
 */
import { Code } from "@connectrpc/connect";
import { GatewayError } from "./gateway-error.js";

export const NODEGATE_CODES = {
  upstreamUnavailable: -32050,
  upstreamTimeout: -32051,
  upstreamBadResponse: -32052,
  resultNotTypeable: -32053,
} as const;

export function parseError(): GatewayError {
  return new GatewayError({ code: -32700, message: "parse error", grpcCode: Code.InvalidArgument });
}

export function invalidRequest(reason: string): GatewayError {
  return new GatewayError({ code: -32600, message: `invalid request: ${reason}`, grpcCode: Code.InvalidArgument });
}

export function methodNotFound(method: string): GatewayError {
  return new GatewayError({
    code: -32601,
    message: `the method ${method} does not exist/is not available`,
    grpcCode: Code.Unimplemented,
  });
}

export function invalidParams(message: string): GatewayError {
  return new GatewayError({ code: -32602, message, grpcCode: Code.InvalidArgument });
}

/** The upstream could not be reached or failed at the transport level (refused, reset, HTTP 5xx). */
export function upstreamUnavailable(reason: string, cause?: unknown): GatewayError {
  return new GatewayError({
    code: NODEGATE_CODES.upstreamUnavailable,
    message: `upstream unavailable: ${reason}`,
    grpcCode: Code.Unavailable,
    httpStatus: 503,
    cause,
  });
}

/**
 * The upstream connection dropped while the request was in flight, and the
 * request was not retried: its method may already have taken effect, or its
 * one retry was lost too. Same code as upstreamUnavailable: callers that
 * handle "upstream unavailable" handle this.
 */
export function upstreamConnectionLost(method: string, retried: boolean): GatewayError {
  const why = retried ? "it was lost again on its one retry" : `${method} is not retried because it may already have taken effect`;
  return new GatewayError({
    code: NODEGATE_CODES.upstreamUnavailable,
    message: `upstream unavailable: the connection was lost while ${method} was in flight; ${why}`,
    grpcCode: Code.Unavailable,
    httpStatus: 503,
  });
}

export function upstreamTimeout(timeoutMs: number): GatewayError {
  return new GatewayError({
    code: NODEGATE_CODES.upstreamTimeout,
    message: `upstream timeout: no answer within ${timeoutMs} ms`,
    grpcCode: Code.DeadlineExceeded,
    httpStatus: 504,
  });
}

/** The upstream answered with something that is not a JSON-RPC response to our request. */
export function upstreamBadResponse(reason: string, cause?: unknown): GatewayError {
  return new GatewayError({
    code: NODEGATE_CODES.upstreamBadResponse,
    message: `upstream returned an invalid response: ${reason}`,
    grpcCode: Code.Unavailable,
    httpStatus: 502,
    cause,
  });
}

/** The node's answer is valid JSON-RPC but does not fit the typed schema (typed path only). */
export function resultNotTypeable(method: string, reason: string): GatewayError {
  return new GatewayError({
    code: NODEGATE_CODES.resultNotTypeable,
    message: `the ${method} result does not fit the typed schema: ${reason}`,
    grpcCode: Code.Internal,
  });
}

/** The caller went away or cancelled; nothing is sent back. */
export function cancelled(): GatewayError {
  return new GatewayError({ code: -32603, message: "request cancelled by the caller", grpcCode: Code.Canceled, httpStatus: 499 });
}
