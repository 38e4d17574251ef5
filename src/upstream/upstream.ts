import type { UpstreamResult } from "./reply.js";
import type { CallSignal } from "../call-signal.js";
import { KEPT_PATH_SEGMENT } from "../errors/secret-texts.js";

export interface CallOptions {
  /** Aborts when the caller goes away. */
  signal?: CallSignal | undefined;
  /** Per-request deadline in milliseconds. */
  timeoutMs: number;
  /** Safe to send again when the connection drops mid-flight (the method table says); unset means no. */
  idempotent?: boolean | undefined;
  /** Whom the call is for (an API key's label): callers take turns for the node's connections. Unset: nodegate's own calls. */
  flow?: string | undefined;
  /**
   * Called once the request has left the line of calls waiting for a connection to the node (at once when there is
   * no line): an identical call of another flow may then join it without waiting behind this flow's calls.
   */
  onSent?: (() => void) | undefined;
  /**
   * nodegate's own liveness question (Network's chain id question): when every connection to the node is busy, it
   * opens one of its own rather than wait behind callers' calls, so a node that is only busy is not judged silent
   * for want of a free connection (found from outside: 128 patient 10 s calls opened a healthy primary's circuit).
   */
  spare?: boolean | undefined;
  /**
   * At its deadline, the connection the call was sent on reads the reply to its end (within this long) rather than
   * close: a front capping connections per client may refuse the connection that would replace it, failing the next
   * caller's call (found from outside: the liveness question's 5 s deadline on a busy node behind such a front).
   */
  finishAtDeadlineMs?: number | undefined;
}

/** One JSON-RPC node nodegate forwards to (HTTP pool or WebSocket multiplexer). */
export interface Upstream {
  /** Safe to log: never the URL, which may hold the provider's key. */
  readonly label: string;
  /** Sends one call; resolves with the raw result, rejects with a GatewayError. */
  call(method: string, paramsText: string, options: CallOptions): Promise<UpstreamResult>;
  close(): Promise<void>;
  /**
   * When the node last sent a reply (performance.now()), whether or not its caller still waited: a late reply to a
   * call whose caller left is a sign of life too. Undefined until the first.
   */
  readonly lastHeardAt?: number | undefined;
  /** Calls `listener` when the node is seen down before any call fails (a WebSocket node's dropped connection); returns the function that stops it. */
  onOutage?(listener: () => void): () => void;
  /** The node's circuit opened: calls still waiting to be sent (all connections busy) fail now, unsent (see Http1Pool). */
  dropUnsent?(): void;
  /** Tells the upstream how to learn that its circuit rests: a call the node dropped unanswered is not sent again then. */
  restsWhile?(resting: () => boolean): void;
}

/** A URL as it may be shown (the start banner): scheme, host and port, with every path segment that could be a key, credentials and query left out. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    // Providers put the key anywhere in the path (/v3/<key>, /v2/<key>, /<token>/): only version-like words stay.
    const path = u.pathname
      .split("/")
      .map((segment) => (segment === "" || KEPT_PATH_SEGMENT.test(segment) ? segment : "<redacted>"))
      .join("/");
    return `${u.protocol}//${u.host}${path}`;
  } catch {
    return "<invalid url>";
  }
}

