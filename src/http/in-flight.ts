/**
 * The requests a server is serving, for its drain: those whose request has
 * arrived whole are waited for; those still receiving theirs (a slowloris,
 * or a client that stopped part way through its body) are not, as nodegate
 * has not started on them. Found from outside: one unfinished upload held
 * every graceful stop to the drain deadline, over HTTP/1.1 and HTTP/2 alike.
 */
import type http from "node:http";
import http2 from "node:http2";
import { stillReceiving } from "./client-timeouts.js";

/** What a request came as: an HTTP/1.1 message, or the HTTP/2 stream it came on. */
type Source = http.IncomingMessage | http2.ServerHttp2Stream;

/** Whether the client is still sending the request (its body has not all arrived). */
function receiving(source: Source): boolean {
  return "complete" in source ? !source.complete : stillReceiving(source);
}

export class InFlight {
  readonly #requests = new Set<Source>();
  #idleWaiters: (() => void)[] = [];

  /** Requests being served, received whole or not. */
  get count(): number {
    return this.#requests.size;
  }

  /** Requests received whole and not yet answered: what a drain waits for. */
  get started(): number {
    let n = 0;
    for (const source of this.#requests) if (!receiving(source)) n++;
    return n;
  }

  /** Counts a request until the returned function is called (when its response has closed). */
  begin(source: Source): () => void {
    this.#requests.add(source);
    return () => {
      if (!this.#requests.delete(source)) return;
      if (this.#idleWaiters.length > 0 && this.started === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
    };
  }

  /** Resolves when no request received whole is still being answered. */
  idle(): Promise<void> {
    return this.started === 0 ? Promise.resolve() : new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Refuses the HTTP/2 streams whose requests are still arriving (RST_STREAM REFUSED_STREAM: their clients may retry them elsewhere). */
  refuseReceiving(): void {
    for (const source of this.#requests) if (!("complete" in source) && receiving(source)) source.close(http2.constants.NGHTTP2_REFUSED_STREAM);
  }
}
