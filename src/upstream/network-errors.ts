/**
 * A transport failure in words a caller can read, never the library's own
 * text: Node's messages name the node's address ("connect ECONNREFUSED
 * 10.0.0.5:8545"), which callers must not learn.
 */

/** Socket error codes, in words a caller understands. */
const NETWORK_ERRORS = new Map([
  ["ECONNREFUSED", "connection refused"],
  ["ECONNRESET", "connection reset"],
  ["EPIPE", "connection closed"],
  ["ENOTFOUND", "host not found"],
  ["EAI_AGAIN", "host not found"],
  ["EHOSTUNREACH", "host unreachable"],
  ["ENETUNREACH", "host unreachable"],
  ["ETIMEDOUT", "connect timeout"],
]);

/** The words for a socket error's code; undefined for an error that has none of the known codes. */
export function networkErrorWords(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? NETWORK_ERRORS.get(code) : undefined;
}

/** Why a WebSocket connection to the node failed (the ws library's errors carry addresses and internals). */
export function webSocketErrorWords(err: Error): string {
  const words = networkErrorWords(err);
  if (words !== undefined) return words;
  const status = /Unexpected server response: (\d{3})/.exec(err.message)?.[1];
  if (status !== undefined) return `the node answered the WebSocket handshake with HTTP ${status}`;
  if (/handshake has timed out/i.test(err.message)) return "WebSocket handshake timed out";
  if (/TLS|certificate|SSL/i.test(err.message)) return "TLS handshake failed";
  return "connection failed";
}
