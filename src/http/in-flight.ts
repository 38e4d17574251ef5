/**
 * The requests a server is serving, for its drain: those whose request has
 * arrived whole are waited for; so is an HTTP/1.1 request whose body is
 * still arriving while bytes keep coming (an upload under way: found from
 * outside, one cut at the drain's start got a broken pipe and no status). One
 * that has stalled (a slowloris, a client that stopped part way through its
 * body) is not, as nodegate has not started on it: found from outside, one
 * unfinished upload held every graceful stop to the drain deadline. An HTTP/2
 * stream still arriving is refused at the drain (REFUSED_STREAM: its client
 * may send it elsewhere).
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

/** How long an HTTP/1.1 request still arriving may go without a byte before the drain stops waiting for it. */
const STALLED_UPLOAD_MS = 1000;
/** How often the drain looks again. */
const POLL_MS = 50;

export class InFlight {
  readonly #requests = new Set<Source>();

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
    return () => void this.#requests.delete(source);
  }

  /**
   * Resolves when no request received whole is still being answered, and no
   * HTTP/1.1 upload is still arriving; at `until` (performance.now() ms) at
   * the latest.
   */
  idle(until: number): Promise<void> {
    const progress = new Map<http.IncomingMessage, { bytes: number; at: number }>();
    return new Promise((resolve) => {
      const check = (): void => {
        if (this.#waitedFor(progress) === 0 || performance.now() >= until) resolve();
        else setTimeout(check, Math.min(POLL_MS, Math.max(1, until - performance.now())));
      };
      check();
    });
  }

  /** The requests a drain waits for now; `progress` remembers when each upload last received a byte. */
  #waitedFor(progress: Map<http.IncomingMessage, { bytes: number; at: number }>): number {
    const now = performance.now();
    let n = 0;
    for (const source of this.#requests) {
      if (!receiving(source)) n++;
      else if ("complete" in source) {
        const bytes = source.socket?.bytesRead ?? 0;
        const last = progress.get(source);
        if (last === undefined || bytes !== last.bytes) {
          progress.set(source, { bytes, at: now });
          n++;
        } else if (now - last.at < STALLED_UPLOAD_MS) n++;
      }
    }
    return n;
  }

  /** Refuses the HTTP/2 streams whose requests are still arriving (RST_STREAM REFUSED_STREAM: their clients may retry them elsewhere). */
  refuseReceiving(): void {
    for (const source of this.#requests) if (!("complete" in source) && receiving(source)) source.close(http2.constants.NGHTTP2_REFUSED_STREAM);
  }
}
