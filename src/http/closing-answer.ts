/**
 * A whole HTTP/1.1 answer as the text written straight to a connection that
 * closes after it: the refusals made where Node's response objects are not
 * at hand (an upgrade, CONNECT, a plaintext request on the TLS port).
 */
import { STATUS_CODES } from "node:http";

export function closingAnswer(status: number, contentType: string, body: string, extraHeaders: readonly string[] = []): string {
  const head = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}`, "Connection: close", `Content-Type: ${contentType}`, `Content-Length: ${Buffer.byteLength(body)}`, ...extraHeaders];
  return `${head.join("\r\n")}\r\n\r\n${body}`;
}
