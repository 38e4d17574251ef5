/**
 * The native JSON-RPC path over HTTP: POST /v3/<KEY> (and /<network>/v3/<KEY>).
 * Same method table, validation and upstream as the typed path; the node's
 * answer goes back as the node wrote it, under the caller's id.
 */
import { setMaxListeners } from "node:events";
import type { NodeRequest, NodeResponse } from "../http-types.js";
import { invalidRequest } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import type { Gateway } from "../gateway.js";
import { answerJsonRpc, type CallRecord } from "./answer.js";
import { nativeCallContext } from "./native-call.js";
import { logAnswer } from "./answer-log.js";
import type { NativeRoute } from "./paths.js";
import { REQUEST_ID_HEADER, requestIdFrom } from "../observability/request-log.js";
import { endWithParts } from "../response-body.js";

type Req = NodeRequest;
type Res = NodeResponse;

const JSON_HEADERS = { "content-type": "application/json" };

function sendError(res: Res, error: GatewayError, status = error.httpStatus, extraHeaders: Record<string, string> = {}): void {
  const body = `{"jsonrpc":"2.0","id":null,"error":${error.toJson()}}`;
  const retry = error.retryAfterSeconds === undefined ? {} : { "retry-after": String(error.retryAfterSeconds) };
  res.writeHead(status, { ...JSON_HEADERS, ...retry, ...extraHeaders });
  res.end(body);
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
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(tooLarge ? undefined : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    req.on("error", reject);
  });
}

export function createJsonRpcHttpHandler(gateway: Gateway) {
  return async function handleJsonRpcHttp(req: Req, res: Res, route: NativeRoute): Promise<void> {
    const started = performance.now();
    const requestId = requestIdFrom(header(req, REQUEST_ID_HEADER));
    res.setHeader(REQUEST_ID_HEADER, requestId);
    let calls: CallRecord[] = [];
    res.on("finish", () => logAnswer(gateway, "jsonrpc-http", calls, started, { status: res.statusCode, network: route.network, requestId }));
    if (req.method !== "POST") {
      sendError(res, invalidRequest("use POST"), 405, { allow: "POST" });
      return;
    }
    const contentType = req.headers["content-type"] ?? "";
    if (!/^application\/json\b/i.test(contentType)) {
      sendError(res, invalidRequest("content-type must be application/json"), 415);
      return;
    }
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
      if (err instanceof GatewayError) {
        req.resume();
        sendError(res, err);
        return;
      }
      throw err;
    }
    let body: Buffer | undefined;
    try {
      body = await readBody(req, gateway.limits.maxBodyBytes);
    } catch (err) {
      // The client went away (or was cut off by a deadline) before its body arrived: nobody to answer, nothing wrong here.
      gateway.log.debug({ err: (err as Error).message }, "native request body not received");
      return;
    }
    if (body === undefined) {
      sendError(res, invalidRequest(`request body exceeds ${gateway.limits.maxBodyBytes} bytes`), 413);
      return;
    }
    const abort = new AbortController();
    // Each call of a batch listens to this signal; a large batch is normal, not a leak.
    setMaxListeners(0, abort.signal);
    res.on("close", () => {
      if (!res.writableFinished) abort.abort();
    });
    const answer = await answerJsonRpc(body, {
      ...nativeCallContext(gateway, key, network, abort.signal),
      maxBatchSize: gateway.limits.maxBatchSize,
      quotas: gateway.quotas,
    });
    calls = answer.calls;
    if (abort.signal.aborted) return;
    if (answer.body === undefined) {
      res.writeHead(204);
      res.end();
      return;
    }
    const retry = answer.retryAfterSeconds === undefined ? {} : { "retry-after": String(answer.retryAfterSeconds) };
    let length = 0;
    for (const part of answer.body) length += part.length;
    res.writeHead(answer.status, { ...JSON_HEADERS, ...retry, "content-length": length });
    endWithParts(res, answer.body);
  };
}

