/**
 * The native JSON-RPC path over HTTP: POST /v3/<KEY> (and /<network>/v3/<KEY>).
 * Same method table, validation and upstream as the typed path; the node's
 * answer goes back as the node wrote it, under the caller's id.
 */
import { Code } from "@connectrpc/connect";
import type { NodeRequest, NodeResponse } from "../http/http-types.js";
import { invalidRequest } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import type { Gateway } from "../gateway.js";
import { contentEncoding, decodeBody, isSupportedEncoding, SUPPORTED_ENCODINGS, UndecodableBody } from "./body-encoding.js";
import { answerContext, answerJsonRpc, CANCELED_OUTCOME, type CallRecord, refusalAnswer } from "./answer.js";
import { CallCancellation } from "../call-signal.js";
import { logAnswer, REFUSED_METHOD } from "./answer-log.js";
import type { NativeRoute } from "./paths.js";
import { REQUEST_ID_HEADER, requestIdFrom } from "../observability/request-log.js";
import { endWithParts } from "../http/response-body.js";
import { whenResponseDone } from "../http/response-closed.js";
import { stillReceiving } from "../http/client-timeouts.js";
import { isContinueExpectation } from "../http/expect.js";
import type { Release } from "../auth/key-quotas.js";

type Req = NodeRequest;
type Res = NodeResponse;

/**
 * Answers below this size leave as one string, which Node joins with the head
 * into one chunk (a Buffer body would be a second chunk after the head, and
 * the parts would each be one more). The string is latin1, one character per
 * byte: the parts may split a UTF-8 character, and latin1 writes every byte
 * back as it came.
 */
const ONE_WRITE_BELOW = 16 * 1024;

/**
 * Refuses a request before its body is read (method, content type, key,
 * size); returns the one call it counts as, of no known method.
 */
function refuse(res: Res, requestId: string, error: GatewayError, status = error.httpStatus, extraHeaders: Record<string, string> = {}): CallRecord[] {
  const body = `{"jsonrpc":"2.0","id":null,"error":${error.toJson()}}`;
  const retry = error.retryAfterSeconds === undefined ? {} : { "retry-after": String(error.retryAfterSeconds) };
  res.writeHead(status, { "content-type": "application/json", [REQUEST_ID_HEADER]: requestId, ...retry, ...extraHeaders });
  res.end(body);
  return [{ method: REFUSED_METHOD, outcome: String(error.code) }];
}

/** Writes a JSON answer made of parts: small ones joined into one string, large ones without copying. */
function sendAnswer(res: Res, requestId: string, status: number, parts: readonly Buffer[], retryAfterSeconds: number | undefined): void {
  let length = 0;
  for (const part of parts) length += part.length;
  const headers: Record<string, string | number> = { "content-type": "application/json", "content-length": length, [REQUEST_ID_HEADER]: requestId };
  if (retryAfterSeconds !== undefined) headers["retry-after"] = String(retryAfterSeconds);
  res.writeHead(status, headers);
  if (length < ONE_WRITE_BELOW && !("stream" in res)) {
    let text = "";
    for (const part of parts) text += part.toString("latin1");
    res.end(text, "latin1");
    return;
  }
  endWithParts(res, parts);
}

/** Sends a refusal answered call by call (refusalAnswer); counted like refuse, as one call of no known method. */
function refuseEach(res: Res, requestId: string, error: GatewayError, parts: readonly Buffer[]): CallRecord[] {
  sendAnswer(res, requestId, error.httpStatus, parts, error.retryAfterSeconds);
  return [{ method: REFUSED_METHOD, outcome: String(error.code) }];
}

/** The status logged for a request whose client left before its answer was sent. */
const CLIENT_CLOSED = 499;
/** What a request whose client left before its body arrived is logged and counted as (method "other"). */
const UNREAD_CALLS: readonly CallRecord[] = [{ method: "(unread)", outcome: CANCELED_OUTCOME }];
/** A request whose body Node cut off past limits.requestTimeoutMs, answering 408 itself. */
const TIMED_OUT_CALLS: readonly CallRecord[] = [{ method: "(unread)", outcome: Code[Code.DeadlineExceeded] }];
/** A request whose body Node could not read as HTTP (malformed chunked framing), answering 400 itself. */
const MALFORMED_CALLS: readonly CallRecord[] = [{ method: "(unread)", outcome: "-32600" }];

/**
 * A body that never arrived: Node answered the request itself when it cut it
 * off (408 past the request deadline, 400 for framing it cannot read), and
 * left its reason on the socket; otherwise the client left (499).
 */
function unreadRecord(req: Req): { calls: readonly CallRecord[]; status: number } {
  const code = (req.socket.errored as { code?: string } | null)?.code;
  if (code === "ERR_HTTP_REQUEST_TIMEOUT") return { calls: TIMED_OUT_CALLS, status: 408 };
  // HPE_INVALID_EOF_STATE: the connection ended part way through the body, which is the client leaving.
  if (code?.startsWith("HPE_") && code !== "HPE_INVALID_EOF_STATE") return { calls: MALFORMED_CALLS, status: 400 };
  return { calls: UNREAD_CALLS, status: CLIENT_CLOSED };
}

function header(req: Req, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Reads the body up to `limit` bytes; resolves undefined when it is larger. */
function readBody(req: Req, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    if (Number.isFinite(declared) && declared > limit) {
      resolve(undefined);
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on("data", (chunk: Buffer) => {
      if (tooLarge) return;
      size += chunk.length;
      if (size > limit) {
        tooLarge = true;
        chunks.length = 0;
        // Answered now, not at the body's end: one sent without a length may never end (found from outside: an HTTP/2
        // stream sending for good was read for 30 s, 9 GiB at most of a core, then answered 408, not 413). The rest is
        // read and dropped until the response closes the exchange (HTTP/1.1: the connection; HTTP/2: the stream).
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(tooLarge ? undefined : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    req.on("error", reject);
  });
}

/**
 * Whether a request's body has come whole, once what arrived with its head has been read in (a client's body nearly
 * always comes in the same packet as its head, but is read after the head is handed over).
 */
async function arrivedWhole(req: Req): Promise<boolean> {
  await new Promise<void>((resolve) => setImmediate(resolve));
  return "stream" in req ? !stillReceiving(req.stream) : req.complete;
}

/**
 * The client waits for a 100 Continue before it sends its body (the server left that to this door: see server.ts).
 * Read as Node reads it, which left it to this door: Java's HttpClient sends `Expect: 100-Continue`. An HTTP/1.0
 * request's expectation is ignored (RFC 9110 10.1.1), as Node ignores it: no 100 goes to an HTTP/1.0 client.
 */
function awaitsContinue(req: Req): boolean {
  const expect = req.headers.expect;
  if (expect === undefined) return false;
  if (req.httpVersionMajor === 1 && req.httpVersionMinor !== 1) return false;
  return isContinueExpectation(expect);
}

/**
 * A refusal made before the body has come: an HTTP/1.1 connection closes after it, rather than read on a body the
 * client may still trickle, after which Node's own 408 followed the refusal on the same connection (found from
 * outside), or wait for one the client was never asked for (Expect: 100-continue).
 */
function closeAfterRefusal(req: Req, res: Res): void {
  if (req.httpVersionMajor === 1) res.setHeader("connection", "close");
}

/** Before a refusal of a request whose body nothing reads: closeAfterRefusal when that body has not all come, or was never asked for. */
async function closeUnlessBodyCame(req: Req, res: Res): Promise<void> {
  if (awaitsContinue(req) || !(await arrivedWhole(req))) closeAfterRefusal(req, res);
}

export function createJsonRpcHttpHandler(gateway: Gateway) {
  return async function handleJsonRpcHttp(req: Req, res: Res, route: NativeRoute): Promise<void> {
    const started = performance.now();
    const requestId = requestIdFrom(header(req, REQUEST_ID_HEADER));
    let calls: readonly CallRecord[] = [];
    let logged = false;
    // A client that left is logged with 499 (as nginx logs one); its calls keep what they came to (Canceled if cut short).
    const log = (status: number): void => {
      if (logged) return;
      logged = true;
      logAnswer(gateway, "jsonrpc-http", calls, started, { status, network: route.network, requestId });
    };
    res.on("finish", () => log(res.statusCode));
    if (req.method !== "POST") {
      await closeUnlessBodyCame(req, res);
      calls = refuse(res, requestId, invalidRequest("use POST"), 405, { allow: "POST" });
      return;
    }
    const contentType = req.headers["content-type"] ?? "";
    if (!isJsonMediaType(contentType)) {
      await closeUnlessBodyCame(req, res);
      calls = refuse(res, requestId, invalidRequest("content-type must be application/json"), 415);
      return;
    }
    const encoding = contentEncoding(header(req, "content-encoding"));
    if (!isSupportedEncoding(encoding)) {
      await closeUnlessBodyCame(req, res);
      calls = refuse(res, requestId, invalidRequest(`content-encoding ${encoding} is not supported (send ${SUPPORTED_ENCODINGS}, or none)`), 415);
      return;
    }
    // A plain body (nearly all) is read without another promise on the way.
    const readDecodedBody = (): Promise<Buffer | undefined> =>
      encoding === undefined
        ? readBody(req, gateway.limits.maxBodyBytes)
        : readBody(req, gateway.limits.maxBodyBytes).then((raw) => (raw === undefined ? undefined : decodeBody(raw, encoding, gateway.limits.maxBodyBytes)));
    let network;
    let key;
    try {
      key = gateway.access.authenticate({
        key: route.key,
        authorization: header(req, "authorization"),
        origin: header(req, "origin"),
        userAgent: header(req, "user-agent"),
      });
      network = gateway.network(route.network);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      // A body still to come is not waited for (nothing counts a request no key was found for: bodiless ones would
      // stay until the request deadline); one that came with its head is read, so each call hears why under its own id.
      if (!(await arrivedWhole(req))) {
        closeAfterRefusal(req, res);
        calls = refuse(res, requestId, err);
        return;
      }
      let text: Buffer | undefined;
      try {
        text = await readDecodedBody();
      } catch (readErr) {
        if (readErr instanceof UndecodableBody) {
          calls = refuse(res, requestId, err);
          return;
        }
        const unread = unreadRecord(req);
        calls = unread.calls;
        log(unread.status);
        return;
      }
      if (text === undefined) calls = refuse(res, requestId, err);
      else calls = refuseEach(res, requestId, err, refusalAnswer(text, err));
      return;
    }
    // One of the key's requests is held from its head on, not from its body's end: a client that sent heads and never
    // a body held none, so one key pinned any number of streams or connections until the request deadline (found from
    // outside: 10,000 HTTP/2 streams, 8 KB each, on a limit of 50). Given back once the request is answered or its
    // response closes (a client that left), whichever comes first.
    let releaseRequest: Release | undefined;
    try {
      releaseRequest = gateway.quotas.acquire(key, "requests");
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      // Over the key's maximum: a body that came with its head is read, and each call hears why under its own id
      // (answerJsonRpc refuses it, as before); one still to come is not waited for.
      if (!(await arrivedWhole(req))) {
        closeAfterRefusal(req, res);
        calls = refuse(res, requestId, err);
        return;
      }
    }
    if (releaseRequest !== undefined) whenResponseDone(res, releaseRequest);
    // Asked for only now, once the key and its quota have passed: a client is not told to send a body that is refused
    // whatever it holds (found from outside: 100 Continue went out before the 401). One declared over the limit is
    // refused (413, below) without being asked for.
    if (awaitsContinue(req) && !res.headersSent) {
      if (Number(req.headers["content-length"]) > gateway.limits.maxBodyBytes) closeAfterRefusal(req, res);
      else res.writeContinue();
    }
    try {
      let body: Buffer | undefined;
      try {
        body = await readDecodedBody();
      } catch (err) {
        if (err instanceof UndecodableBody) {
          calls = refuse(res, requestId, invalidRequest(err.message), 400);
          return;
        }
        // The client went away (or was cut off by a deadline) before its body arrived: nobody to answer, nothing wrong here.
        gateway.log.debug({ err: (err as Error).message }, "native request body not received");
        const unread = unreadRecord(req);
        calls = unread.calls;
        log(unread.status);
        return;
      }
      if (body === undefined) {
        if (!req.complete) closeAfterRefusal(req, res);
        calls = refuse(res, requestId, invalidRequest(`request body exceeds ${gateway.limits.maxBodyBytes} bytes`), 413);
        return;
      }
      const cancellation = new CallCancellation();
      let answered = false;
      whenResponseDone(res, () => {
        if (res.writableFinished) return;
        cancellation.abort();
        // Left while the answer was going out; one that left before it was ready is logged when its calls end.
        if (answered) log(CLIENT_CLOSED);
      });
      const ctx = answerContext(gateway, key, network, cancellation.signal);
      // The request taken above is the one the text holds while it is answered.
      if (releaseRequest !== undefined) ctx.quotas = undefined;
      const answer = await answerJsonRpc(body, ctx);
      calls = answer.calls;
      answered = true;
      if (cancellation.aborted) {
        answer.release?.();
        log(CLIENT_CLOSED);
        return;
      }
      if (answer.release !== undefined) whenResponseDone(res, answer.release);
      if (answer.body === undefined) {
        res.writeHead(204, { [REQUEST_ID_HEADER]: requestId });
        res.end();
        return;
      }
      sendAnswer(res, requestId, answer.status, answer.body, answer.retryAfterSeconds);
    } finally {
      releaseRequest?.();
    }
  };
}

/** The media types geth takes (rpc/http.go acceptedContentTypes), parameters such as charset aside, in any case. */
const JSON_MEDIA_TYPES = new Set(["application/json", "application/json-rpc", "application/jsonrequest"]);

/**
 * Whether a Content-Type names JSON as geth reads it: the media type whole, so
 * application/json-seq or application/json-patch+json is not taken (found
 * from outside: a prefix match let them through).
 */
function isJsonMediaType(contentType: string): boolean {
  if (contentType === "application/json") return true;
  const semicolon = contentType.indexOf(";");
  return JSON_MEDIA_TYPES.has((semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase());
}
