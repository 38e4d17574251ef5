import type { UpstreamResult } from "./reply.js";
import type { CallSignal } from "../call-signal.js";

export interface CallOptions {
  /** Aborts when the caller goes away. */
  signal?: CallSignal | undefined;
  /** Per-request deadline in milliseconds. */
  timeoutMs: number;
  /** Safe to send again when the connection drops mid-flight (the method table says); unset means no. */
  idempotent?: boolean | undefined;
}

/** One JSON-RPC node nodegate forwards to (HTTP pool or WebSocket multiplexer). */
export interface Upstream {
  /** Safe to log: never the URL, which may hold the provider's key. */
  readonly label: string;
  /** Sends one call; resolves with the raw result, rejects with a GatewayError. */
  call(method: string, paramsText: string, options: CallOptions): Promise<UpstreamResult>;
  close(): Promise<void>;
}

/** Removes a provider key ("/v3/<KEY>") and credentials from a URL before it is shown anywhere. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = "";
    u.password = "";
    u.pathname = u.pathname.replace(/\/v3\/[^/]+/, "/v3/<redacted>");
    u.search = "";
    return u.toString();
  } catch {
    return "<invalid url>";
  }
}
