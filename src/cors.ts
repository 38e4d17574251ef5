/**
 * CORS for browser callers (dapps on the native path, connect-web on the
 * typed path), off unless origins are configured. Preflights are answered
 * here; other responses get the allow and expose headers.
 */
import { originAllowed } from "./auth/allowlist.js";
import type { NodeRequest, NodeResponse } from "./http-types.js";

const ALLOW_HEADERS = [
  "content-type",
  "authorization",
  "x-api-key",
  "x-request-id",
  "x-nodegate-network",
  "connect-protocol-version",
  "connect-timeout-ms",
  "grpc-timeout",
  "x-grpc-web",
  "x-user-agent",
].join(", ");

const EXPOSE_HEADERS = ["grpc-status", "grpc-message", "grpc-status-details-bin", "x-request-id", "retry-after"].join(", ");

/** The Access-Control-Allow-Origin value for a request's Origin, or undefined when not allowed. */
export function allowedOrigin(origins: readonly string[], origin: string | undefined): string | undefined {
  if (origins.length === 0 || origin === undefined) return undefined;
  if (origins.includes("*")) return "*";
  return originAllowed(origins, origin) ? origin : undefined;
}

/** Applies CORS; returns true when it answered the request (a preflight). */
export function handleCors(origins: readonly string[], req: NodeRequest, res: NodeResponse): boolean {
  if (origins.length === 0) return false;
  const origin = allowedOrigin(origins, req.headers.origin);
  if (origin === undefined) return false;
  res.setHeader("access-control-allow-origin", origin);
  if (origin !== "*") res.setHeader("vary", "origin");
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
