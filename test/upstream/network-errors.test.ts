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

  it("an error without a known code has no words of its own", () => {
    expect(networkErrorWords(new Error("boom"))).toBeUndefined();
    expect(networkErrorWords(null)).toBeUndefined();
  });
});
