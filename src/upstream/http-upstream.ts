/**
 * JSON-RPC over HTTP(S) through an undici keep-alive pool: one POST per call,
 * a per-request deadline, and cancellation when the caller goes away.
 */
import { Pool, errors as undiciErrors } from "undici";
import { cancelled, upstreamBadResponse, upstreamTimeout, upstreamUnavailable } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { readReply, requestBody, type UpstreamResult } from "./reply.js";
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
    // Not AbortSignal.any: on Node 20 it leaves an entry on the caller's signal per call, and a native
    // WebSocket connection's signal lives as long as the connection (one entry per call it makes).
    const controller = new AbortController();
    let timedOut = false;
    const deadline = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, options.timeoutMs).unref();
    const onCallerGone = (): void => controller.abort();
    options.signal?.addEventListener("abort", onCallerGone, { once: true });
    if (options.signal?.aborted) controller.abort();
    const signal = controller.signal;
    let statusCode: number;
    let body: Buffer;
    let framed: boolean;
    let retryAfter: string | string[] | undefined;
    try {
      const res = await this.#pool.request({
        path: this.#path,
        method: "POST",
        headers: this.#headers,
        body: requestBody(id, method, paramsText),
        signal,
      });
      statusCode = res.statusCode;
      retryAfter = res.headers["retry-after"];
      // undici fails a body shorter than its content-length or missing its last chunk; a body that
      // simply ends when the connection closes has no such check, so readReply scans it whole.
      framed = res.headers["content-length"] !== undefined || /chunked/i.test(String(res.headers["transfer-encoding"] ?? ""));
      body = Buffer.from(await res.body.arrayBuffer());
    } catch (err) {
      throw this.#transportError(err, options, timedOut);
    } finally {
      clearTimeout(deadline);
      options.signal?.removeEventListener("abort", onCallerGone);
    }
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

  #transportError(err: unknown, options: CallOptions, timedOut: boolean): GatewayError {
    if (options.signal?.aborted) return cancelled();
    if (timedOut) return upstreamTimeout(options.timeoutMs);
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
