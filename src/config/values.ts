/** Value rules that the YAML file and the environment share. */
import { PLANS, type Plan } from "./config.js";

/** What an API key may be, in the file and in NODEGATE_API_KEYS. */
export const KEY_PATTERN = /^[A-Za-z0-9_-]{8,128}$/;

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
  return value;
}

export function plan(value: string | undefined, fail: (m: string) => never): Plan {
  if (value === undefined) return "core";
  if (!(PLANS as readonly string[]).includes(value)) fail(`want one of ${PLANS.join(", ")}`);
  return value as Plan;
}
