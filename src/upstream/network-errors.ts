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

const UNTRUSTED = "TLS: the node's certificate is not trusted (self-signed, or from a CA this machine does not know: NODE_EXTRA_CA_CERTS adds one)";

/** Certificate checks an https or wss node failed (found from outside: they read only "request failed"). */
const TLS_ERRORS = new Map([
  ["DEPTH_ZERO_SELF_SIGNED_CERT", UNTRUSTED],
  ["SELF_SIGNED_CERT_IN_CHAIN", UNTRUSTED],
  ["UNABLE_TO_VERIFY_LEAF_SIGNATURE", UNTRUSTED],
  ["UNABLE_TO_GET_ISSUER_CERT_LOCALLY", UNTRUSTED],
  ["UNABLE_TO_GET_ISSUER_CERT", UNTRUSTED],
  ["CERT_HAS_EXPIRED", "TLS: the node's certificate has expired"],
  ["CERT_NOT_YET_VALID", "TLS: the node's certificate is not valid yet"],
  ["ERR_TLS_CERT_ALTNAME_INVALID", "TLS: the node's certificate is not for the host name in the upstream URL"],
  ["ERR_SSL_WRONG_VERSION_NUMBER", "TLS handshake failed (does the node speak TLS on that port?)"],
]);

/** The words for a socket or TLS error's code; undefined for an error that has none of the known codes. */
export function networkErrorWords(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? (NETWORK_ERRORS.get(code) ?? TLS_ERRORS.get(code)) : undefined;
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
