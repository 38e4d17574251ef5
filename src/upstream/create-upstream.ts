/**
 * Picks an upstream's transport by its URL scheme: http(s) gets the HTTP
 * pool, ws(s) the multiplexed WebSocket.
 */
import type { Logger } from "pino";
import type { UpstreamConfig, WebSocketSettings } from "../config/config.js";
import { keepSecretsOf } from "../errors/secret-texts.js";
import { HttpUpstream } from "./http-upstream.js";
import type { ReplyBudget } from "./reply-budget.js";
import type { Upstream } from "./upstream.js";
import { WsUpstream } from "./ws-upstream.js";

/** `http`: an http(s) upstream's pool size (default 64) and batch size (default 100). */
export function createUpstream(url: string, label: string, websocket: WebSocketSettings, log?: Logger, budget?: ReplyBudget, http: Pick<UpstreamConfig, "connections" | "batchSize"> = {}): Upstream {
  // A node may quote its URL (its key) in what it answers: that text must not reach callers or logs.
  keepSecretsOf(url);
  const scheme = new URL(url).protocol;
  if (scheme === "ws:" || scheme === "wss:") {
    return new WsUpstream({
      url,
      label,
      pingIntervalMs: websocket.upstreamPingIntervalMs,
      pongTimeoutMs: websocket.pongTimeoutMs,
      reconnectMinDelayMs: websocket.reconnectMinDelayMs,
      reconnectMaxDelayMs: websocket.reconnectMaxDelayMs,
      maxReplyBytes: budget?.maxBytes,
      log,
    });
  }
  return new HttpUpstream({
    url,
    label,
    ...(budget === undefined ? {} : { budget }),
    ...(http.connections === undefined ? {} : { connections: http.connections }),
    ...(http.batchSize === undefined ? {} : { batchSize: http.batchSize }),
    ...(log === undefined ? {} : { log }),
  });
}
