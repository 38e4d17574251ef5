/**
 * Weighs a JSON text before it is parsed. JSON.parse spends about 0.4 µs on each array or object it builds, on
 * the one thread every caller shares: 5 MiB of `[],[],…` (1.6 million empty arrays) held every other caller for
 * 0.6 s, and `[[[…]]]` 2.5 million deep for 1 to 3.6 s, where 5 MiB of strings or numbers parses in about 0.1 s.
 * Counting the openers outside strings bounds that cost without building anything.
 */
import { BACKSLASH, OPEN_BRACE, OPEN_BRACKET, QUOTE } from "./json-scan.js";

/** Most arrays and objects a request may hold: a 1,000-call batch holds a few thousand; this many cost about 50 ms. */
export const MAX_JSON_CONTAINERS = 100_000;

/** Whether `text` (UTF-8 JSON, valid or not) holds more than `max` arrays and objects. */
export function holdsMoreJsonContainers(text: Uint8Array, max = MAX_JSON_CONTAINERS): boolean {
  if (text.length <= 2 * max) return false; // each takes two bytes at least: nothing to weigh
  let openers = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text[i];
    if (c === QUOTE) {
      // Skip the string at native speed: its closing quote is the first one not escaped.
      for (;;) {
        i = text.indexOf(QUOTE, i + 1);
        if (i < 0) return false;
        let backslashes = 0;
        while (text[i - 1 - backslashes] === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) break;
      }
    } else if ((c === OPEN_BRACKET || c === OPEN_BRACE) && ++openers > max) {
      return true;
    }
  }
  return false;
}
