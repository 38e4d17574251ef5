/** Value rules that the YAML file and the environment share. */
import { PLANS, type Plan } from "./config.js";

/** What an API key may be, in the file and in NODEGATE_API_KEYS. */
export const KEY_PATTERN = /^[A-Za-z0-9_-]{8,128}$/;

/** The longest delay a Node timer takes (2^31-1 ms, about 24.8 days): a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2_147_483_647;

/** pino's levels, and silent. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

export function httpUrl(value: string, fail: (m: string) => never, schemes = ["http:", "https:"]): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return fail("not a URL");
  }
  if (!schemes.includes(url.protocol)) fail(`want a ${schemes.map((s) => `${s}//`).join(" or ")} URL`);
  // Found from outside: both passed the check, then a fragment left a WebSocket upstream failing every call for good,
  // and a bare % in a password ended the start with a URIError. The messages never repeat the URL: it holds secrets.
  if (url.hash !== "" || value.includes("#")) fail("a URL fragment (#...) is never sent to the node: remove it (a # in a password is written %23)");
  for (const part of [url.username, url.password]) {
    try {
      decodeURIComponent(part);
    } catch {
      fail("the user or password has a % that starts no %XX escape (a % in a password is written %25)");
    }
  }
  return value;
}

export function plan(value: string | undefined, fail: (m: string) => never): Plan {
  if (value === undefined) return "core";
  if (!(PLANS as readonly string[]).includes(value)) fail(`want one of ${PLANS.join(", ")}`);
  return value as Plan;
}
