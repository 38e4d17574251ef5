/** Transport failures reach callers as words, never as the library's text with the node's address in it. */
import { describe, expect, it } from "vitest";
import { networkErrorWords, webSocketErrorWords } from "../../src/upstream/network-errors.js";

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe("network error words", () => {
  it.each([
    [withCode("connect ECONNREFUSED 10.0.0.5:8546", "ECONNREFUSED"), "connection refused"],
    [withCode("getaddrinfo ENOTFOUND node.internal", "ENOTFOUND"), "host not found"],
    [withCode("read ECONNRESET", "ECONNRESET"), "connection reset"],
    [new Error("Unexpected server response: 401"), "the node answered the WebSocket handshake with HTTP 401"],
    [new Error("Opening handshake has timed out"), "WebSocket handshake timed out"],
    [new Error("WebSocket is not open: readyState 2 (CLOSING)"), "connection failed"],
  ])("%s reads %j", (err, words) => {
    expect(webSocketErrorWords(err)).toBe(words);
    expect(webSocketErrorWords(err)).not.toMatch(/10\.0\.0\.5|node\.internal/);
  });

  it("says which certificate check an https or wss node failed, and how to trust a private CA", () => {
    const words = networkErrorWords(withCode("self-signed certificate", "DEPTH_ZERO_SELF_SIGNED_CERT"));
    expect(words).toMatch(/^TLS: the node's certificate is not trusted .*NODE_EXTRA_CA_CERTS/);
    expect(webSocketErrorWords(withCode("self-signed certificate", "DEPTH_ZERO_SELF_SIGNED_CERT"))).toBe(words);
    expect(networkErrorWords(withCode("Hostname/IP does not match certificate's altnames: Host: node.internal", "ERR_TLS_CERT_ALTNAME_INVALID"))).not.toMatch(/node\.internal/);
    expect(networkErrorWords(withCode("certificate has expired", "CERT_HAS_EXPIRED"))).toBe("TLS: the node's certificate has expired");
    // An alert that ends the handshake while the request is written comes as the write's EPROTO.
    expect(networkErrorWords(withCode("write EPROTO 80FC:error:0A000460:SSL routines:ssl3_read_bytes:tlsv1 alert no application protocol", "EPROTO"))).toMatch(/^TLS: the node takes only HTTP\/2/);
    expect(networkErrorWords(withCode("write EPROTO 80FC:error:0A00010B:SSL routines:ssl3_get_record:wrong version number", "EPROTO"))).toMatch(/^TLS handshake failed \(does the node speak TLS/);
    expect(networkErrorWords(withCode("write EPROTO 80FC:error:0A000410:SSL routines:ssl3_read_bytes:sslv3 alert handshake failure", "EPROTO"))).toBe("TLS handshake failed");
  });

  it("an error without a known code has no words of its own", () => {
    expect(networkErrorWords(new Error("boom"))).toBeUndefined();
    expect(networkErrorWords(null)).toBeUndefined();
  });
});
