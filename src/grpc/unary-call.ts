/**
 * One call on a lean unary lane, the same on gRPC and on the Connect
 * protocol: read the request body up to the body limit, keep the deadline,
 * invoke the method, cancel the upstream call when the client goes, answer
 * once, and log and count the call once. What differs between the lanes (how
 * the messages are encoded and framed, the timeout header, how an answer or
 * an error is written) comes in a UnaryProtocol and a UnaryExchange.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import { type DescMessage, fromBinary, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { CallCancellation } from "../call-signal.js";
import type { Gateway } from "../gateway.js";
import { logTypedCall, REQUEST_ID_HEADER, requestIdFrom } from "../observability/request-log.js";
import type { UpstreamResult } from "../upstream/reply.js";
import { toConnectError } from "./errors.js";
import { HELD_FROM_BYTES } from "../upstream/held-answers.js";
import { answerKey, credentialsFrom, type HeaderSource, invokeTyped } from "./typed-services.js";
import type { ApiKey } from "../auth/api-keys.js";
import type { Release } from "../auth/key-quotas.js";
import { headerSource, type UnaryRoute } from "./unary-routes.js";
import { leftAtDeadline } from "../http/client-deadline.js";

/** A lane's protocol: how it encodes and frames the request and the answer, and where its deadline is. */
export interface UnaryProtocol {
  /** The front door's label in logs and metrics. */
  readonly door: string;
  /** The call's timeout, from its headers. */
  timeout(header: HeaderSource): { timeoutMs?: number; error?: ConnectError };
  /** The most body bytes a request message of `maxMessageBytes` arrives in (its framing, its text encoding). */
  bodyBytes(maxMessageBytes: number): number;
  /** The request message from the body as received (decompressed to at most `maxBytes`); throws ConnectError as Connect words it. */
  request(body: Buffer, header: HeaderSource, route: UnaryRoute, maxBytes: number): Message;
  /** The answer's body for the node's result; throws what the result's decoding throws. */
  answer(route: UnaryRoute, result: UpstreamResult): Buffer;
}

/** A protobuf request message from its bytes, failing as Connect words it. */
export function parseBinary(desc: DescMessage, bytes: Uint8Array): Message {
  try {
    return fromBinary(desc, bytes);
  } catch (err) {
    throw new ConnectError(`parse binary: ${(err as Error).message}`, Code.Internal);
  }
}

/** One request and its answer on the wire (an HTTP/2 stream, or a request and response). */
export interface UnaryExchange {
  readonly headers: IncomingHttpHeaders;
  /** The request body. */
  readonly body: Readable;
  /** Calls `fn` once the exchange is over, answered or not (a client that goes away closes it early). */
  whenDone(fn: () => void): void;
  /** Whether an answer can still be written. */
  open(): boolean;
  /** Writes the answer, whose body the protocol made. */
  answer(body: Buffer, requestId: string): void;
  /** Writes a failed call's answer. */
  answerError(error: ConnectError, requestId: string): void;
  /** Drops what the exchange still holds of the call once it is over. */
  release(): void;
  /** Once closed: whether the answer written left whole (a client that reset or left first never read its status). */
  delivered(): boolean;
  /** Once closed: the status another part of the server answered with (a request deadline), if one did. */
  answeredElsewhere(): ConnectError | undefined;
}

export function serveUnary(gateway: Gateway, route: UnaryRoute, protocol: UnaryProtocol, exchange: UnaryExchange): void {
  new UnaryCall(gateway, route, protocol, exchange).start();
}

class UnaryCall {
  readonly #started = performance.now();
  readonly #header: HeaderSource;
  readonly #requestId: string;
  readonly #cancellation = new CallCancellation();
  #answered = false;
  /** The status the call was answered with (undefined: ok), logged once the exchange closes. */
  #outcome: ConnectError | undefined;
  #deadline: NodeJS.Timeout | undefined;
  /** The client's deadline, ms from the call's start. */
  #deadlineMs: number | undefined;
  #chunks: Buffer[] = [];
  #size = 0;
  /** Gives back what the answer holds of the reply budget while it waits for the client to read it. */
  #releaseAnswer: (() => void) | undefined;
  /** The key whose request the call holds from its headers on (#holdRequest), and how it gives it back. */
  #heldKey: ApiKey | undefined;
  #releaseRequest: Release | undefined;

  // The listeners are bound methods, not arrow functions in fields: tsx (esbuild's keepNames) names each arrow function
  // a field holds with Object.defineProperty (__name) as it is made, four times per call. With the other per-call
  // named closures of the small gRPC call (invoke.ts, coalescer.ts, http-upstream.ts), that was 3-6% of its CPU.
  readonly #onData: (chunk: Buffer) => void = this.#data.bind(this);
  readonly #onEnd: () => void = this.#end.bind(this);
  readonly #onDeadline: () => void = this.#deadlinePassed.bind(this);
  readonly #onClose: () => void = this.#closed.bind(this);

  constructor(
    private readonly gateway: Gateway,
    private readonly route: UnaryRoute,
    private readonly protocol: UnaryProtocol,
    private readonly exchange: UnaryExchange,
  ) {
    this.#header = headerSource(exchange.headers);
    this.#requestId = requestIdFrom(this.#header.get(REQUEST_ID_HEADER));
  }

  start(): void {
    const { exchange } = this;
    exchange.whenDone(this.#onClose);
    const timeout = this.protocol.timeout(this.#header);
    if (timeout.error !== undefined) {
      this.#fail(timeout.error);
      exchange.body.resume();
      return;
    }
    if (timeout.timeoutMs !== undefined) {
      // Known before the "< 1" return below, so that a client resetting at its passed deadline is logged DeadlineExceeded.
      this.#deadlineMs = timeout.timeoutMs;
      // A deadline under a millisecond has passed on arrival: failed now, the node not asked (found from outside: with
      // "0m" or "1u" the timer raced the call, and 4-8 of 10 were answered OK).
      if (timeout.timeoutMs < 1) {
        this.#onDeadline();
        exchange.body.resume();
        return;
      }
      this.#deadline = setTimeout(this.#onDeadline, timeout.timeoutMs);
    }
    if (!this.#holdRequest()) {
      exchange.body.resume();
      return;
    }
    exchange.body.on("data", this.#onData);
    exchange.body.once("end", this.#onEnd);
  }

  /**
   * Takes one of the key's requests (limits.maxConcurrentRequestsPerKey) as the call's headers come, not once its body
   * has: a client that sends headers and never a body held none, so one key pinned any number of streams, 5-10 KB
   * each until the request deadline (found from outside: 20,000 on a limit of 50). Held until the call is answered or
   * its exchange closes, whichever comes first. False, the call answered at once, when the key holds its maximum
   * (RESOURCE_EXHAUSTED) or the headers name no key it knows (UNAUTHENTICATED: not waiting for a body, since nothing
   * would count such streams; found from outside, 5,000 of them stayed until the request deadline), as the native
   * door refuses a key in its path before reading the body.
   */
  #holdRequest(): boolean {
    try {
      const key = this.gateway.access.authenticate(credentialsFrom(this.#header));
      this.#releaseRequest = this.gateway.quotas.acquire(key, "requests");
      this.#heldKey = key;
      return true;
    } catch (err) {
      this.#fail(err);
      return false;
    }
  }

  /** Marks the call answered (once) and stops its deadline; false when it was answered already or the exchange is gone. */
  #settle(error: ConnectError | undefined): boolean {
    if (this.#answered) return false;
    this.#answered = true;
    this.#releaseRequest?.();
    this.#outcome = error;
    if (this.#deadline !== undefined) clearTimeout(this.#deadline);
    return this.exchange.open();
  }

  #fail(err: unknown): void {
    const error = toConnectError(err);
    error.metadata.set(REQUEST_ID_HEADER, this.#requestId);
    if (this.#settle(error)) this.exchange.answerError(error, this.#requestId);
  }

  #data(chunk: Buffer): void {
    if (this.#answered) return;
    this.#size += chunk.length;
    const limit = this.gateway.limits.maxBodyBytes;
    // The limit is the message's, as on Connect's lanes: a gRPC message of exactly the limit passes in its frame.
    if (this.#size > this.protocol.bodyBytes(limit)) {
      // The same bound as the native path's body: a request this large is refused, not buffered.
      this.#chunks.length = 0;
      this.#fail(new ConnectError(`message larger than ${limit} bytes`, Code.ResourceExhausted));
      return;
    }
    this.#chunks.push(chunk);
  }

  #end(): void {
    if (this.#answered) return;
    const { route, protocol } = this;
    let request;
    try {
      const chunks = this.#chunks;
      request = protocol.request(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, this.#size), this.#header, route, this.gateway.limits.maxBodyBytes);
    } catch (err) {
      // A client that cancels mid-message ends its body, then resets: answered at once (trailers-only), the error would
      // go out before the reset that came with the end is read, and a cancel be logged as the client's bad request.
      setImmediate(() => this.#fail(err));
      return;
    }
    invokeTyped(this.gateway, route.spec, request, this.#header, this.#cancellation.signal, this.#heldKey)
      .then((result) => {
        if (this.#answered) return;
        const body = protocol.answer(route, result);
        // A client that reads slowly (or not at all: a zero HTTP/2 window) keeps the answer in memory until the exchange closes.
        const held = this.gateway.heldAnswers;
        if (held !== undefined && body.length >= HELD_FROM_BYTES) {
          const release = held.hold(body, body.length, this.#heldKey ?? answerKey(this.gateway, this.#header));
          if (typeof release === "string") throw held.refusal("the answers waiting for their clients", "", release);
          this.#releaseAnswer = release;
        }
        if (this.#settle(undefined)) this.exchange.answer(body, this.#requestId);
        else this.#releaseAnswer?.();
      })
      .catch((err: unknown) => this.#fail(err));
  }

  /** What a client that left before its answer came to: its deadline passing, or a cancel. */
  #clientLeft(): ConnectError {
    return leftAtDeadline(this.#started, this.#deadlineMs)
      ? new ConnectError("the operation timed out", Code.DeadlineExceeded)
      : new ConnectError("the client cancelled the call", Code.Canceled);
  }

  #deadlinePassed(): void {
    this.#fail(new ConnectError("the operation timed out", Code.DeadlineExceeded));
    this.#cancellation.abort();
  }

  #closed(): void {
    // A finished exchange can outlive the call until a full GC (scavenges keep it, and what it
    // references, alive): the call's listeners leave it, so the call's objects die young.
    const { exchange } = this;
    exchange.body.removeListener("data", this.#onData);
    exchange.body.removeListener("end", this.#onEnd);
    exchange.release();
    this.#releaseAnswer?.();
    this.#releaseRequest?.();
    let seen = this.#outcome;
    if (!this.#answered) {
      this.#answered = true;
      if (this.#deadline !== undefined) clearTimeout(this.#deadline);
      this.#cancellation.abort();
      seen = exchange.answeredElsewhere() ?? this.#clientLeft();
    } else if (!exchange.delivered()) {
      // Logged as the client saw it: a gRPC client that cancels ends its request body before it resets the stream,
      // so the call ran (or failed to parse) without anyone left to read the answer.
      seen = exchange.answeredElsewhere() ?? this.#clientLeft();
    }
    logTypedCall(this.gateway.log, this.gateway.metrics, this.protocol.door, this.route.method, this.#requestId, this.#started, seen);
  }
}
