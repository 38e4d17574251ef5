/**
 * The native JSON-RPC path over HTTP: POST /v3/<KEY> (and /<network>/v3/<KEY>).
 * Same method table, validation and upstream as the typed path; the node's
 * answer goes back as the node wrote it, under the caller's id.
 */
import type { NodeRequest, NodeResponse } from "../http-types.js";
import { invalidRequest } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import type { Gateway } from "../gateway.js";
import { type Entry, readEnvelope } from "./envelope.js";
import { type NativeCallContext, type Outcome, renderResponse, runNativeCall } from "./native-call.js";
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
    const logged: { methods: string[]; errors: number } = { methods: [], errors: 0 };
    res.on("finish", () => {
      gateway.log.info(
        {
          door: "jsonrpc-http",
          method: logged.methods.length <= 1 ? logged.methods[0] : `batch(${logged.methods.length})`,
          ...(logged.methods.length > 1 ? { methods: logged.methods.slice(0, 10) } : {}),
          status: res.statusCode,
          errors: logged.errors,
          network: route.network,
          requestId,
          ms: Math.round((performance.now() - started) * 100) / 100,
        },
        "request",
      );
    });
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
    const body = await readBody(req, gateway.limits.maxBodyBytes);
    if (body === undefined) {
      sendError(res, invalidRequest(`request body exceeds ${gateway.limits.maxBodyBytes} bytes`), 413);
      return;
    }
    const abort = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) abort.abort();
    });

    let envelope;
    try {
      envelope = readEnvelope(body);
    } catch (err) {
      if (err instanceof GatewayError) {
        sendError(res, err, 200);
        return;
      }
      throw err;
    }
    if (envelope.batch && envelope.entries.length > gateway.limits.maxBatchSize) {
      sendError(res, invalidRequest(`batch of ${envelope.entries.length} exceeds the maximum of ${gateway.limits.maxBatchSize}`), 200);
      return;
    }
    try {
      // The provider counts a batch of N as N + 1 requests.
      await gateway.access.count(key, envelope.batch ? envelope.entries.length + 1 : 1);
    } catch (err) {
      if (err instanceof GatewayError) {
        sendError(res, err);
        return;
      }
      throw err;
    }
    const ctx: NativeCallContext = {
      table: gateway.table,
      passesThrough: (method) => gateway.passesThrough(method),
      access: gateway.access,
      key,
      network,
      limits: gateway.limits,
      policies: gateway.policies,
      signal: abort.signal,
    };
    const run = (entry: Entry): Promise<Outcome | undefined> =>
      entry.error !== undefined ? Promise.resolve({ error: entry.error }) : runNativeCall(entry.call, ctx);
    for (const entry of envelope.entries) if (entry.call) logged.methods.push(entry.call.method.slice(0, 64));
    const outcomes = await Promise.all(envelope.entries.map(run));
    logged.errors = outcomes.filter((o) => o?.error !== undefined).length;
    if (abort.signal.aborted) return;

    const parts: Buffer[] = [];
    let status = 200;
    envelope.entries.forEach((entry, i) => {
      const id = entry.error !== undefined ? entry.id : entry.call.id;
      if (id === undefined) return; // a notification gets no response
      const outcome = outcomes[i] as Outcome;
      if (!envelope.batch && outcome.error !== undefined) status = outcome.error.httpStatus;
      if (envelope.batch) parts.push(Buffer.from(parts.length === 0 ? "[" : ","));
      parts.push(...renderResponse(id, outcome));
    });
    if (parts.length === 0) {
      res.writeHead(204);
      res.end();
      return;
    }
    if (envelope.batch) parts.push(Buffer.from("]"));
    writeParts(res, status, parts);
  };
}

function writeParts(res: Res, status: number, parts: Buffer[]): void {
  let length = 0;
  for (const part of parts) length += part.length;
  res.writeHead(status, { ...JSON_HEADERS, "content-length": length });
  endWithParts(res, parts);
}
