/** The back-off an upstream's HTTP answer asks for, read from its Retry-After header (HTTP and WebSocket upstreams). */
import { MAX_RETRY_AFTER_PAUSE_MS } from "./circuit-breaker.js";

/** Retry-After in whole seconds: delay-seconds, or an HTTP-date (RFC 9110 allows both) as seconds from now. */
export function retryAfterSeconds(header: string | undefined, now = Date.now()): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^[0-9]{1,9}$/.test(text)) return Number(text);
  const at = /^[A-Za-z]{3}, /.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/**
 * The back-off a 429 or 503 asks for, held to the longest pause nodegate keeps (the circuit asks again then), so
 * the first answer says what the next do.
 */
export function askedPauseSeconds(header: string | undefined): number | undefined {
  const seconds = retryAfterSeconds(header);
  return seconds === undefined ? undefined : Math.min(seconds, MAX_RETRY_AFTER_PAUSE_MS / 1000);
}
