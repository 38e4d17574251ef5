/**
 * The TLS port's listener. A connection whose first byte opens a TLS
 * handshake goes to the TLS server; one that sends a plain HTTP request
 * instead (an http:// or ws:// URL pointed at the TLS port) is answered 400
 * saying so, as nginx does, where the TLS server closed it with no word and
 * curl reported "Empty reply from server".
 */
import http from "node:http";
import http2 from "node:http2";
import net, { type Socket } from "node:net";
import type tls from "node:tls";
import { ignoreResetBeforeIdentified } from "./client-timeouts.js";
import { closingAnswer } from "./closing-answer.js";

const TLS_HANDSHAKE_RECORD = 0x16;
const HTTP2_PREFACE_START = Buffer.from("PRI ");
/** How long a refused plain request may go on sending before its connection is cut. */
const PLAIN_HTTP_LINGER_MS = 1000;

const PLAIN_HTTP_BODY = "This port speaks TLS: call it with https:// (wss:// for WebSocket).\n";
const PLAIN_HTTP_ANSWER = closingAnswer(400, "text/plain; charset=utf-8", PLAIN_HTTP_BODY);

/** An RPC's path, /package.Service/Method (a native JSON-RPC path, /v3/<KEY>, is not one). */
const RPC_PATH = /^\/[A-Za-z_][\w.]*\.[A-Za-z_]\w*\/[A-Za-z_]\w*$/;

/** What a request in cleartext on the TLS port is answered: typed calls in their protocol's terms, others 400 in words. */
interface PlainAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer | string;
}

function plainAnswer(method: string, path: string, contentType: string, overHttp2: boolean): PlainAnswer {
  if (contentType.startsWith("application/grpc")) {
    // Trailers-only: the status rides in the headers of an empty answer (gRPC-Web over HTTP/1.1 reads it there too).
    const type = overHttp2 || !contentType.startsWith("application/grpc-web") ? "application/grpc" : (contentType.split(";")[0] ?? contentType);
    return { status: 200, headers: { "content-type": type, "grpc-status": "14", "grpc-message": PLAIN_HTTP_BODY.trim() }, body: "" };
  }
  if (/^application\/connect\+/.test(contentType)) {
    // A Connect streaming call reads its error from the end-stream message (flags 0x02).
    const json = Buffer.from(JSON.stringify({ error: { code: "unavailable", message: PLAIN_HTTP_BODY.trim() } }));
    const head = Buffer.alloc(5);
    head[0] = 0x02;
    head.writeUInt32BE(json.length, 1);
    return { status: 200, headers: { "content-type": contentType.split(";")[0] ?? contentType }, body: Buffer.concat([head, json]) };
  }
  if (isConnectUnary(method, path, contentType)) {
    // A Connect unary call reads its error from a JSON body (found from outside: connect-es said only "HTTP 400").
    return { status: 503, headers: { "content-type": "application/json" }, body: JSON.stringify({ code: "unavailable", message: PLAIN_HTTP_BODY.trim() }) };
  }
  return { status: 400, headers: { "content-type": "text/plain; charset=utf-8" }, body: PLAIN_HTTP_BODY };
}

/** A Connect unary call: a POST of JSON or protobuf, or a Connect GET (?connect=v1), to an RPC's path. */
function isConnectUnary(method: string, url: string, contentType: string): boolean {
  const [path = "", query = ""] = url.split("?", 2);
  if (!RPC_PATH.test(path)) return false;
  return /^application\/(json|proto)\b/.test(contentType) || (method === "GET" && /(^|&)connect=v1(&|$)/.test(query));
}

/**
 * Cleartext HTTP/2 on the TLS port (gRPC "insecure"/plaintext channels, h2c prior knowledge): each request is
 * answered in words (plainAnswer).
 */
const plainHttp2 = http2.createServer();
plainHttp2.on("stream", (stream, headers) => {
  stream.on("error", () => {});
  const answer = plainAnswer(String(headers[":method"] ?? ""), String(headers[":path"] ?? ""), String(headers["content-type"] ?? ""), true);
  if (answer.body.length === 0) stream.respond({ ":status": answer.status, ...answer.headers }, { endStream: true });
  else {
    stream.respond({ ":status": answer.status, ...answer.headers });
    stream.end(answer.body);
  }
  // The session stays open for the client's next call, which would be refused (REFUSED_STREAM, read as INTERNAL) on a
  // closing one (found from outside); the per-connection bound and the drain close it.
});
plainHttp2.on("sessionError", () => {});

/**
 * Cleartext HTTP/1.1 on the TLS port: one request read and answered in words (plainAnswer), then the connection
 * closed. Connect and gRPC-Web clients over HTTP/1.1 (connect-web's transport in browsers) read their error from it
 * (found from outside: they said only "HTTP 400"); a WebSocket upgrade gets the plain 400.
 */
const plainHttp1 = http.createServer({ headersTimeout: PLAIN_HTTP_LINGER_MS * 5, requestTimeout: PLAIN_HTTP_LINGER_MS * 5 }, (req, res) => {
  req.on("error", () => {});
  res.on("error", () => {});
  const answer = plainAnswer(req.method ?? "", req.url ?? "", req.headers["content-type"] ?? "", false);
  // Answered once the request has arrived (at most a second later): a client still writing its body when the
  // connection closes reads EPIPE, not the answer (found from outside: connect-node and gRPC-Web over HTTP/1.1 with a
  // 1 MiB body).
  const send = (): void => {
    clearTimeout(timer);
    if (res.headersSent || res.destroyed) return;
    res.writeHead(answer.status, { ...answer.headers, "content-length": String(Buffer.byteLength(answer.body)), connection: "close" });
    res.end(answer.body);
  };
  const timer = setTimeout(send, PLAIN_HTTP_LINGER_MS);
  if (req.complete) send();
  else req.once("end", send);
  req.resume();
});
plainHttp1.on("upgrade", (_req, socket: Socket) => {
  socket.on("error", () => {});
  socket.end(PLAIN_HTTP_ANSWER);
});
plainHttp1.on("clientError", (_err, socket: Socket) => {
  if (socket.writable) socket.end(PLAIN_HTTP_ANSWER);
  else socket.destroy();
});

/** Whether the first bytes begin a plain HTTP/1.x request line (a method in capitals); an HTTP/2 preface is left to TLS. */
function isPlainHttp1(head: Buffer): boolean {
  const first = head[0] ?? 0;
  const n = Math.min(head.length, HTTP2_PREFACE_START.length);
  return first >= 0x41 && first <= 0x5a && !head.subarray(0, n).equals(HTTP2_PREFACE_START.subarray(0, n));
}

export interface TlsListener {
  server: net.Server;
  /**
   * Closes the connections that have sent nothing yet (or only a lone "P")
   * or are part way through their TLS handshake, at the end of a drain
   * (found from outside: one silent connection held the stop until its
   * headers deadline, past the drain's; one mid-handshake, until the
   * handshake deadline).
   */
  closeUnestablished(): void;
}

/** A live connection's peer: the same for a raw socket and the TLS socket over it, which Node does not tie publicly. */
const peerOf = (socket: Socket): string => `${socket.remoteAddress}:${socket.remotePort}`;

/**
 * `guard` starts the deadline for a connection to send its first bytes and
 * returns the function that ends it (the TLS server's handshake deadline
 * takes over).
 */
export function tlsListener(secure: tls.Server, guard: (socket: Socket) => () => void): TlsListener {
  const silent = new Set<Socket>();
  /** Cleartext HTTP/2 connections answered in words: nothing is owed to them, so a drain closes them (found from outside: they held it 10 s). */
  const plain = new Set<Socket>();
  /** Connections handed to TLS whose handshake has not finished, by peer. */
  const handshaking = new Map<string, Socket>();
  secure.on("secureConnection", (tlsSocket: tls.TLSSocket) => handshaking.delete(peerOf(tlsSocket)));
  const server = net.createServer((socket) => {
    ignoreResetBeforeIdentified(socket);
    const identified = guard(socket);
    silent.add(socket);
    socket.once("close", () => silent.delete(socket));
    let head: Buffer = Buffer.alloc(0);
    const sniff = (chunk: Buffer): void => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      // A lone "P" may begin "POST" or an HTTP/2 preface: wait until the bytes tell (found from outside: a request
      // whose first segment held one byte got no answer). Until then it counts as silent, for the drain.
      if (head[0] === 0x50 && head.length < HTTP2_PREFACE_START.length && HTTP2_PREFACE_START.subarray(0, head.length).equals(head)) return;
      silent.delete(socket);
      socket.off("data", sniff);
      identified();
      if (head.subarray(0, HTTP2_PREFACE_START.length).equals(HTTP2_PREFACE_START)) {
        socket.pause();
        socket.unshift(head);
        // Bounded as a silent connection is (headersTimeoutMs' default): the answer goes at once, the client may not close.
        setTimeout(() => socket.destroy(), 10_000).unref();
        plain.add(socket);
        socket.once("close", () => plain.delete(socket));
        plainHttp2.emit("connection", socket);
        return;
      }
      if (head[0] !== TLS_HANDSHAKE_RECORD && isPlainHttp1(head)) {
        // Bounded: answered at once, the connection closes after; one still sending is cut.
        setTimeout(() => socket.destroy(), PLAIN_HTTP_LINGER_MS * 5).unref();
        socket.once("finish", () => setTimeout(() => socket.destroy(), PLAIN_HTTP_LINGER_MS).unref());
        plain.add(socket);
        socket.once("close", () => plain.delete(socket));
        plainHttp1.emit("connection", socket);
        // Node's HTTP server may read the socket's handle directly, past what is buffered: the bytes read so far are
        // handed to it as they came.
        socket.emit("data", head);
        return;
      }
      // The TLS socket reads what is already buffered before its handle's data.
      socket.pause();
      socket.unshift(head);
      const peer = peerOf(socket);
      handshaking.set(peer, socket);
      socket.once("close", () => {
        if (handshaking.get(peer) === socket) handshaking.delete(peer);
      });
      secure.emit("connection", socket);
    };
    socket.on("data", sniff);
  });
  return {
    server,
    closeUnestablished() {
      for (const socket of silent) socket.destroy();
      for (const socket of plain) socket.destroy();
      for (const socket of handshaking.values()) socket.destroy();
    },
  };
}
