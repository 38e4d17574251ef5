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
  // nodegate offers only http/1.1 in ALPN; a server that takes HTTP/2 alone ends the handshake with this alert.
  ["ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL", "TLS: the node takes only HTTP/2 (it refused HTTP/1.1 in the handshake); nodegate calls nodes over HTTP/1.1"],
]);

/**
 * A TLS alert that ends the handshake while the request is being written
 * comes as the write's EPROTO, its reason only in OpenSSL's text: read by
 * the alert's words, as the code it would have had.
 */
const TLS_ALERTS: [RegExp, string][] = [
  [/alert no application protocol/, "ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL"],
  [/wrong version number/, "ERR_SSL_WRONG_VERSION_NUMBER"],
];

/** The words for a socket or TLS error's code; undefined for an error that has none of the known codes. */
export function networkErrorWords(err: unknown): string | undefined {
  let code = (err as { code?: unknown } | null)?.code;
  if (code === "EPROTO") {
    const message = String((err as { message?: unknown }).message);
    code = TLS_ALERTS.find(([alert]) => alert.test(message))?.[1] ?? code;
    if (code === "EPROTO") return "TLS handshake failed";
  }
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
