/**
 * JSON-RPC over HTTP(S) through an undici keep-alive pool: one POST per call,
 * a per-request deadline, and cancellation when the caller goes away.
 * Calls go through undici's dispatch API: the reply is collected without an
 * extra copy when it arrives in one chunk, and a deadline or the caller's
 * abort cancels the request directly (no AbortSignal per call).
 */
import type { IncomingHttpHeaders } from "node:http";
import { type Dispatcher, Pool, errors as undiciErrors } from "undici";
import { cancelled, upstreamBadResponse, upstreamTimeout, upstreamUnavailable } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { readChunkedReply, readReply, requestBody, type UpstreamResult } from "./reply.js";
import type { CallOptions, Upstream } from "./upstream.js";

export interface HttpUpstreamOptions {
  /** The node's URL, for example https://mainnet.example/v3/<KEY>. */
  url: string;
  /** Safe-to-log name. */
  label: string;
  /** Sockets kept open to the node. Default 64. */
  connections?: number;
}

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

/**
 * The provider's own rate-limit answer (HTTP 429 with a JSON-RPC error, as
 * -32005): passed on as the provider sent it, its error with its status and
 * its Retry-After (whole seconds), so native callers back off as they would
 * from the provider, and typed callers get RESOURCE_EXHAUSTED with RetryInfo.
 */
function asProviderRateLimit(err: GatewayError, retryAfter: string | string[] | undefined): GatewayError {
  const header = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter;
  const seconds = header !== undefined && /^[0-9]{1,9}$/.test(header.trim()) ? Number(header.trim()) : undefined;
  return new GatewayError({
    code: err.code,
    message: err.message,
    ...(err.data === undefined ? {} : { data: err.data }),
    grpcCode: err.grpcCode,
    httpStatus: 429,
    ...(seconds === undefined ? {} : { retryAfterSeconds: seconds }),
    origin: "upstream",
  });
}

/** Why nodegate cancelled an exchange (compared by identity, never shown). */
const DEADLINE = new Error("deadline");
const CALLER_LEFT = new Error("caller left");

/** Replies at least this large stay in the chunks they arrived in (see ChunkedResult). */
const KEEP_CHUNKS_FROM = 16 * 1024;

/** One request/reply with the pool: collects the reply, and can be cancelled at any point. */
class Exchange implements Dispatcher.DispatchHandler {
  readonly reply: Promise<{ statusCode: number; headers: IncomingHttpHeaders; chunks: Buffer[] }>;
  #resolve!: (reply: { statusCode: number; headers: IncomingHttpHeaders; chunks: Buffer[] }) => void;
  #reject!: (err: unknown) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #cancelled: Error | undefined;
  #statusCode = 0;
  #headers: IncomingHttpHeaders = {};
  #chunks: Buffer[] = [];
  /** Bytes received so far. */
  length = 0;

  constructor() {
    this.reply = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  cancel(reason: Error): void {
    if (this.#cancelled !== undefined) return;
    this.#cancelled = reason;
    if (this.#controller !== undefined) this.#controller.abort(reason);
    else this.#reject(reason); // still queued in the pool: it will abort on start
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#cancelled !== undefined) controller.abort(this.#cancelled);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.#statusCode = statusCode;
    this.#headers = headers;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    // Body chunks are views of the socket's own read buffers, which are never reused: keeping them is safe.
    this.#chunks.push(chunk);
    this.length += chunk.length;
  }

  onResponseEnd(): void {
    this.#resolve({ statusCode: this.#statusCode, headers: this.#headers, chunks: this.#chunks });
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.#reject(this.#cancelled ?? err);
  }
}

export class HttpUpstream implements Upstream {
  readonly label: string;
  readonly #pool: Pool;
  readonly #path: string;
  readonly #headers: Record<string, string>;
  #nextId = 1;

  constructor(options: HttpUpstreamOptions) {
    const url = new URL(options.url);
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new Error(`upstream ${options.label}: want an http(s) URL`);
    }
    this.label = options.label;
    this.#path = `${url.pathname}${url.search}`;
    this.#headers = { "content-type": "application/json" };
    if (url.username || url.password) {
      const user = decodeURIComponent(url.username);
      const secret = decodeURIComponent(url.password);
      this.#headers.authorization = `Basic ${Buffer.from(`${user}:${secret}`).toString("base64")}`;
    }
    this.#pool = new Pool(url.origin, {
      connections: options.connections ?? 64,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 600_000,
    });
  }

  async call(method: string, paramsText: string, options: CallOptions): Promise<UpstreamResult> {
    const id = this.#nextId++;
    if (this.#nextId > 0x3fffffff) this.#nextId = 1;
    if (options.signal?.aborted) throw cancelled();
    const exchange = new Exchange();
    // Not AbortSignal.any: on Node 20 it leaves an entry on the caller's signal per call, and a native
    // WebSocket connection's signal lives as long as the connection (one entry per call it makes).
    const deadline = setTimeout(() => exchange.cancel(DEADLINE), options.timeoutMs).unref();
    const onAbort = () => exchange.cancel(CALLER_LEFT);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    let statusCode: number;
    let headers: IncomingHttpHeaders;
    let chunks: Buffer[];
    try {
      this.#pool.dispatch({ path: this.#path, method: "POST", headers: this.#headers, body: requestBody(id, method, paramsText) }, exchange);
      ({ statusCode, headers, chunks } = await exchange.reply);
    } catch (err) {
      throw this.#transportError(err, options);
    } finally {
      clearTimeout(deadline);
      options.signal?.removeEventListener("abort", onAbort);
    }
    // undici fails a body shorter than its content-length or missing its last chunk; a body that
    // simply ends when the connection closes has no such check, so it is read whole and verified.
    const framed = headers["content-length"] !== undefined || /chunked/i.test(String(headers["transfer-encoding"] ?? ""));
    const retryAfter = headers["retry-after"];
    if (statusCode === 200 && framed && chunks.length > 1 && exchange.length >= KEEP_CHUNKS_FROM) return readChunkedReply(chunks, id);
    const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, exchange.length);
    if (statusCode !== 200) {
      // Some providers answer errors (rate limits) with a JSON-RPC body and a non-200 status.
      try {
        return readReply(body, id, { verify: !framed });
      } catch (err) {
        if (err instanceof GatewayError && err.origin === "upstream") {
          throw statusCode === 429 ? asProviderRateLimit(err, retryAfter) : err;
        }
      }
      if (statusCode === 429 || statusCode >= 500) {
        throw upstreamUnavailable(`HTTP ${statusCode}`);
      }
      throw upstreamBadResponse(`HTTP ${statusCode}`);
    }
    return readReply(body, id, { verify: !framed });
  }

  #transportError(err: unknown, options: CallOptions): GatewayError {
    if (err === CALLER_LEFT || options.signal?.aborted) return cancelled();
    if (err === DEADLINE) return upstreamTimeout(options.timeoutMs);
    const code = (err as { code?: string }).code;
    const words = code === undefined ? undefined : NETWORK_ERRORS.get(code);
    if (words !== undefined) return upstreamUnavailable(words, err);
    if (err instanceof undiciErrors.SocketError) return upstreamUnavailable("connection reset", err);
    if (err instanceof undiciErrors.ConnectTimeoutError) return upstreamUnavailable("connect timeout", err);
    if (err instanceof undiciErrors.UndiciError) return upstreamUnavailable(err.message, err);
    return upstreamUnavailable("request failed", err);
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }
}
