/**
 * CORS for browser callers (dapps on the native path, connect-web on the
 * typed path), off unless origins are configured. Preflights are answered
 * here; other responses get the allow and expose headers.
 */
import { cors as connectCors } from "@connectrpc/connect";
import { originAllowed } from "../auth/allowlist.js";
import type { NodeRequest, NodeResponse } from "./http-types.js";

/** Connect's and gRPC-Web's own (compressed bodies included), nodegate's, and the trace context a browser's instrumentation adds. */
const ALLOW_HEADERS = [
  ...new Set([
    ...connectCors.allowedHeaders.map((h) => h.toLowerCase()),
    "authorization",
    "x-api-key",
    "x-request-id",
    "x-nodegate-network",
    "traceparent",
    "tracestate",
  ]),
].join(", ");

const EXPOSE_HEADERS = [...new Set([...connectCors.exposedHeaders.map((h) => h.toLowerCase()), "x-request-id", "retry-after"])].join(", ");

/** The Access-Control-Allow-Origin value for a request's Origin, or undefined when not allowed. */
export function allowedOrigin(origins: readonly string[], origin: string | undefined): string | undefined {
  if (origins.length === 0 || origin === undefined) return undefined;
  if (origins.includes("*")) return "*";
  return originAllowed(origins, origin) ? origin : undefined;
}

/** A browser's CORS preflight: OPTIONS from an origin, naming the method it means to send. */
function isPreflight(req: NodeRequest): boolean {
  return req.method === "OPTIONS" && req.headers.origin !== undefined && req.headers["access-control-request-method"] !== undefined;
}

/**
 * A preflight from an origin that is not allowed: 403 without CORS headers, so
 * the browser refuses the call and whoever reads the network log sees why
 * (found from outside: it fell through to the native door's 405 "use POST").
 */
function refusePreflight(res: NodeResponse, origins: readonly string[]): true {
  const text = origins.length === 0 ? "CORS is off: no origin may call from a browser (cors.origins)\n" : "CORS: this origin is not in cors.origins\n";
  res.writeHead(403, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
  return true;
}

/** Applies CORS; returns true when it answered the request (a preflight). */
export function handleCors(origins: readonly string[], req: NodeRequest, res: NodeResponse): boolean {
  if (origins.length === 0) return isPreflight(req) && refusePreflight(res, origins);
  // The answer depends on Origin whether or not this one is allowed: a shared cache must not give one origin's answer to another.
  const anyOrigin = origins.includes("*");
  if (!anyOrigin) res.setHeader("vary", "origin");
  const origin = allowedOrigin(origins, req.headers.origin);
  if (origin === undefined) return isPreflight(req) && refusePreflight(res, origins);
  res.setHeader("access-control-allow-origin", origin);
  res.setHeader("access-control-expose-headers", EXPOSE_HEADERS);
  if (req.method === "OPTIONS") {
    res.writeHead(204, {
      "access-control-allow-methods": "POST, GET, OPTIONS",
      "access-control-allow-headers": ALLOW_HEADERS,
      "access-control-max-age": "86400",
    });
    res.end();
    return true;
  }
  return false;
}
