/**
 * JSON-RPC over HTTP(S) through an undici keep-alive pool: one POST per call,
 * a per-request deadline, and cancellation when the caller goes away.
 * Calls go through undici's dispatch API: the reply is collected without an
 * extra copy when it arrives in one chunk, and a deadline or the caller's
 * abort cancels the request directly (no AbortSignal per call).
 */
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

/** Why nodegate cancelled an exchange (compared by identity, never shown). */
const DEADLINE = new Error("deadline");
const CALLER_LEFT = new Error("caller left");

/** Replies at least this large stay in the chunks they arrived in (see ChunkedResult). */
const KEEP_CHUNKS_FROM = 16 * 1024;

/** One request/reply with the pool: collects the reply, and can be cancelled at any point. */
class Exchange implements Dispatcher.DispatchHandler {
  readonly reply: Promise<{ statusCode: number; chunks: Buffer[] }>;
  #resolve!: (reply: { statusCode: number; chunks: Buffer[] }) => void;
  #reject!: (err: unknown) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #cancelled: Error | undefined;
  #statusCode = 0;
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

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    this.#statusCode = statusCode;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    // Body chunks are views of the socket's own read buffers, which are never reused: keeping them is safe.
    this.#chunks.push(chunk);
    this.length += chunk.length;
  }

  onResponseEnd(): void {
    this.#resolve({ statusCode: this.#statusCode, chunks: this.#chunks });
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
    const deadline = setTimeout(() => exchange.cancel(DEADLINE), options.timeoutMs);
    const onAbort = () => exchange.cancel(CALLER_LEFT);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    let statusCode: number;
    let chunks: Buffer[];
    try {
      this.#pool.dispatch({ path: this.#path, method: "POST", headers: this.#headers, body: requestBody(id, method, paramsText) }, exchange);
      ({ statusCode, chunks } = await exchange.reply);
    } catch (err) {
      throw this.#transportError(err, options);
    } finally {
      clearTimeout(deadline);
      options.signal?.removeEventListener("abort", onAbort);
    }
    if (statusCode === 200 && chunks.length > 1 && exchange.length >= KEEP_CHUNKS_FROM) return readChunkedReply(chunks, id);
    const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, exchange.length);
    if (statusCode !== 200) {
      // Some providers answer errors (rate limits) with a JSON-RPC body and a non-200 status.
      try {
        return readReply(body, id);
      } catch (err) {
        if (err instanceof GatewayError && err.origin === "upstream") throw err;
      }
      if (statusCode === 429 || statusCode >= 500) {
        throw upstreamUnavailable(`HTTP ${statusCode}`);
      }
      throw upstreamBadResponse(`HTTP ${statusCode}`);
    }
    return readReply(body, id);
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
