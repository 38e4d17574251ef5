/**
 * The `Expect: 100-continue` test, as Node's HTTP/1.1 server makes it (lib/_http_server.js): in any case (RFC 9110
 * 10.1.1: the value is case-insensitive; Java's HttpClient sends `100-Continue`), also within a list (Node joins
 * repeated headers with ", "). Shared by the HTTP/2 door, which Node leaves to nodegate, and the native door.
 */
const CONTINUE_EXPECTATION = /(?:^|\W)100-continue(?:$|\W)/i;

export function isContinueExpectation(value: string): boolean {
  return CONTINUE_EXPECTATION.test(value);
}
