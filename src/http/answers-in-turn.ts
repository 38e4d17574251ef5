/**
 * HTTP/1.1 answers leave in the order of their requests (RFC 9112 §9.3.2),
 * also where Node's servers would write out of turn:
 *
 * - Bytes that cannot be read as a request: Node's default writes its error
 *   status at once and destroys the connection, so the answers to complete
 *   requests pipelined before them never went out (found from outside: a
 *   valid call followed by garbage, or by a request after one with
 *   `Connection: close`, got a bare 400 or nothing, and was logged as a
 *   client that left). Here those answers go out first, then the status Node
 *   would have written, and the connection closes. After a request that
 *   carried `Connection: close`, further bytes are not read (§9.6): its answer
 *   closes the connection, and no status follows it. A request cut inside its
 *   own body (its answer cannot come), and everything with no answer under
 *   way, is answered as Node answers it.
 * - An upgrade pipelined behind calls: Node hands it over as soon as its head
 *   is read, so a WebSocket's 101 went out before the answer to the POST
 *   before it, which then arrived inside the WebSocket's byte stream (found
 *   from outside). Here it waits for those answers.
 *
 * CONNECT, which Node's servers drop without a word when nothing listens for
 * it, gets the native door's 405 (found from outside: zero bytes and a FIN).
 */
import type { Server } from "node:http";
import type { Http2SecureServer } from "node:http2";
import { Socket } from "node:net";
import { invalidRequest } from "../errors/catalogue.js";
import { closingAnswer } from "./closing-answer.js";

/** What Node's HTTP server keeps on a connection (lib/_http_server.js): the answer being written, and the parser with the request it is reading. */
interface ServedSocket extends Socket {
  _httpMessage?: { once(event: "close", fn: () => void): unknown; _headerSent?: boolean } | null;
  /** `incoming`: the last request whose head it read, kept until that request is answered. */
  parser?: { incoming?: { complete?: boolean } | null } | null;
}

/** Node's own error answers (lib/_http_server.js), by the error's code. */
const STATUS_LINES: Record<string, string> = {
  HPE_HEADER_OVERFLOW: "431 Request Header Fields Too Large",
  HPE_CHUNK_EXTENSIONS_OVERFLOW: "413 Payload Too Large",
  ERR_HTTP_REQUEST_TIMEOUT: "408 Request Timeout",
};

function errorAnswer(err: NodeJS.ErrnoException): string {
  return `HTTP/1.1 ${STATUS_LINES[err.code ?? ""] ?? "400 Bad Request"}\r\nConnection: close\r\n\r\n`;
}

const CONNECT_BODY = `{"jsonrpc":"2.0","id":null,"error":${invalidRequest("use POST").toJson()}}`;
const CONNECT_ANSWER = closingAnswer(405, "application/json", CONNECT_BODY, ["Allow: POST"]);

/** Connections whose error answer waits for the answers before it (Node reports the error again as more bytes come). */
const waiting = new WeakSet<Socket>();

/** Calls `then` once every answer under way on the connection is written, unless it closes first. */
function afterAnswers(socket: ServedSocket, then: () => void): void {
  const message = socket._httpMessage;
  if (socket.destroyed) return;
  if (message == null) return then();
  // Node hands the connection to the next pipelined answer as one finishes; 'close' also comes when one fails.
  message.once("close", () => setImmediate(() => afterAnswers(socket, then)));
}

function onClientError(err: NodeJS.ErrnoException, raw: Socket): void {
  const socket = raw as ServedSocket;
  if (waiting.has(socket)) return;
  // The request's own (its bytes, its deadline); a broken connection (ECONNRESET, EPIPE) comes here too, and takes its answers with it.
  const aboutTheRequest = err.code === "ERR_HTTP_REQUEST_TIMEOUT" || err.code?.startsWith("HPE_") === true;
  const answering = aboutTheRequest && socket._httpMessage != null;
  const read = socket.parser?.incoming;
  const midRequest = read != null && read.complete !== true;
  if (err.code === "HPE_CLOSED_CONNECTION" && !midRequest) {
    // The answer to the request that asked to close ends the connection; none under way: it has ended it.
    waiting.add(socket);
    if (!answering) socket.destroySoon();
    return;
  }
  if (answering && !midRequest) {
    waiting.add(socket);
    afterAnswers(socket, () => {
      if (socket.writable) socket.end(errorAnswer(err));
      else socket.destroy();
    });
    return;
  }
  // Node's default (lib/_http_server.js socketOnError): a status unless an answer has begun, then the connection goes.
  const message = socket._httpMessage;
  if (socket.writable && (message == null || !message._headerSent)) socket.write(errorAnswer(err));
  socket.destroy(err);
}

function onConnect(_req: unknown, socket: Socket): void {
  // Only HTTP/1.1 brings its connection here (nodegate's HTTP/2 streams never reach Node's compatibility layer).
  if (!(socket instanceof Socket)) return;
  socket.on("error", () => {});
  socket.end(CONNECT_ANSWER);
}

/** Installs the error and CONNECT answers on an HTTP/1.1 server (or an HTTP/2 one that also serves HTTP/1.1). */
export function answerClientErrorsInTurn(server: Server | Http2SecureServer): void {
  server.on("clientError", onClientError);
  server.on("connect", onConnect);
}

/** An 'upgrade' listener that takes the connection once the answers to the requests before the upgrade have gone. */
export function upgradeInTurn<R>(onUpgrade: (req: R, socket: Socket, head: Buffer) => void): (req: R, socket: Socket, head: Buffer) => void {
  return (req, socket, head) => afterAnswers(socket, () => onUpgrade(req, socket, head));
}
