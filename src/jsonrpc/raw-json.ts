/**
 * Finds the spans of JSON values in raw bytes without building them, so the
 * native path can forward a caller's params and a node's result as the exact
 * text they sent (ids echoed as written, big numbers untouched, no
 * parse/stringify of large answers).
 */

export class RawJsonError extends Error {
  override name = "RawJsonError";
}

export const QUOTE = 0x22;
const BACKSLASH = 0x5c;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
export const COLON = 0x3a;
export const COMMA = 0x2c;

export function isWhitespace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

export function skipWhitespace(buf: Uint8Array, i: number): number {
  while (i < buf.length && isWhitespace(buf[i])) i++;
  return i;
}

/** Index just after the closing quote of the string starting at `i` (which must be a quote). */
export function skipString(buf: Uint8Array, i: number): number {
  let j = i + 1;
  for (;;) {
    const q = buf.indexOf(QUOTE, j);
    if (q < 0) throw new RawJsonError("unterminated string");
    // A quote preceded by an odd number of backslashes is escaped.
    let k = q - 1;
    while (k > i && buf[k] === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q + 1;
    j = q + 1;
  }
}

/**
 * Index just after the JSON value starting at `i` (leading whitespace allowed).
 * Checks structure (brackets, strings, separators), not the spelling of
 * numbers and literals, which JSON.parse of the envelope already checked.
 */
export function skipValue(buf: Uint8Array, i: number): number {
  i = skipWhitespace(buf, i);
  const c = buf[i];
  if (c === QUOTE) return skipString(buf, i);
  if (c !== OPEN_BRACE && c !== OPEN_BRACKET) {
    // number, true, false, null: runs to the next delimiter
    let j = i;
    while (j < buf.length) {
      const d = buf[j];
      if (d === COMMA || d === CLOSE_BRACE || d === CLOSE_BRACKET || isWhitespace(d)) break;
      j++;
    }
    if (j === i) throw new RawJsonError(`unexpected ${c === undefined ? "end of input" : `character at ${i}`}`);
    return j;
  }
  let depth = 0;
  let j = i;
  while (j < buf.length) {
    const d = buf[j] as number;
    if (d === QUOTE) {
      j = skipString(buf, j);
      continue;
    }
    if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++;
    else if (d === CLOSE_BRACE || d === CLOSE_BRACKET) {
      depth--;
      if (depth === 0) return j + 1;
    }
    j++;
  }
  throw new RawJsonError("unterminated object or array");
}

function readKey(buf: Uint8Array, start: number, end: number): string {
  // Keys with escapes are rare; let JSON.parse read them exactly.
  const raw = Buffer.from(buf.buffer, buf.byteOffset + start, end - start);
  return raw.includes(BACKSLASH) ? (JSON.parse(raw.toString("utf8")) as string) : raw.toString("utf8", 1, raw.length - 1);
}

export interface Span {
  start: number;
  end: number;
}

/**
 * Calls `visit(key, valueStart, keyStart)` for each member of the object
 * starting at `i`; `visit` returns the index after the value (or -1 to let
 * the scanner skip it). Returns the index after the closing brace.
 */
export function scanObject(buf: Uint8Array, i: number, visit: (key: string, valueStart: number, keyStart: number) => number): number {
  i = skipWhitespace(buf, i);
  if (buf[i] !== OPEN_BRACE) throw new RawJsonError("want an object");
  i = skipWhitespace(buf, i + 1);
  if (buf[i] === CLOSE_BRACE) return i + 1;
  for (;;) {
    if (buf[i] !== QUOTE) throw new RawJsonError("want a member name");
    const keyStart = i;
    const keyEnd = skipString(buf, i);
    const key = readKey(buf, i, keyEnd);
    i = skipWhitespace(buf, keyEnd);
    if (buf[i] !== COLON) throw new RawJsonError("want ':' after a member name");
    const valueStart = skipWhitespace(buf, i + 1);
    const end = visit(key, valueStart, keyStart);
    i = skipWhitespace(buf, end < 0 ? skipValue(buf, valueStart) : end);
    if (buf[i] === COMMA) {
      i = skipWhitespace(buf, i + 1);
      continue;
    }
    if (buf[i] === CLOSE_BRACE) return i + 1;
    throw new RawJsonError("want ',' or '}' in an object");
  }
}

/**
 * The object `text` with its member `key` given the JSON value `valueText`
 * (replaced where it stands, or added last), or taken out when `valueText` is
 * undefined. Everything else stays as written: numbers beyond 2^53, key
 * order, spacing.
 */
export function withMember(text: string, key: string, valueText: string | undefined): string {
  const buf = Buffer.from(text, "utf8");
  const members: { keyStart: number; valueStart: number; valueEnd: number }[] = [];
  let target = -1;
  const close = scanObject(buf, 0, (name, valueStart, keyStart) => {
    const valueEnd = skipValue(buf, valueStart);
    if (name === key) target = members.length;
    members.push({ keyStart, valueStart, valueEnd });
    return valueEnd;
  }) - 1;
  const head = (end: number) => buf.toString("utf8", 0, end);
  const tail = (start: number) => buf.toString("utf8", start);
  const member = members[target];
  if (member !== undefined) {
    if (valueText !== undefined) return head(member.valueStart) + valueText + tail(member.valueEnd);
    const next = members[target + 1];
    if (next !== undefined) return head(member.keyStart) + tail(next.keyStart);
    const previous = members[target - 1];
    return previous === undefined ? head(member.keyStart) + tail(close) : head(previous.valueEnd) + tail(member.valueEnd);
  }
  if (valueText === undefined) return text;
  const last = members[members.length - 1];
  const entry = `${JSON.stringify(key)}:${valueText}`;
  return last === undefined ? `${head(close)}${entry}${tail(close)}` : `${head(last.valueEnd)},${entry}${tail(last.valueEnd)}`;
}

/**
 * The JSON text `buf` with every member named `key` of the object starting at `i` given `valueText`, where it stands,
 * so a node that reads the first of duplicate keys reads it too (JSON.parse, geth and Anvil read the last); added last
 * when there is none. Everything else stays as written, as withMember keeps it.
 */
export function withEveryMember(buf: Uint8Array, i: number, key: string, valueText: string): string {
  const text = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  let out = "";
  // Where the text not yet in `out` starts: past the last member given the value, 0 while there is none.
  let at = 0;
  let lastEnd = -1;
  const close =
    scanObject(buf, i, (name, valueStart) => {
      lastEnd = skipValue(buf, valueStart);
      if (name === key) {
        out += text.toString("utf8", at, valueStart) + valueText;
        at = lastEnd;
      }
      return lastEnd;
    }) - 1;
  if (at > 0) return out + text.toString("utf8", at);
  const entry = `${JSON.stringify(key)}:${valueText}`;
  const insert = lastEnd < 0 ? close : lastEnd;
  return `${text.toString("utf8", 0, insert)}${lastEnd < 0 ? "" : ","}${entry}${text.toString("utf8", insert)}`;
}

/** The spans of the elements of the array starting at `i`. */
export function scanArray(buf: Uint8Array, i: number): { elements: Span[]; end: number } {
  i = skipWhitespace(buf, i);
  if (buf[i] !== OPEN_BRACKET) throw new RawJsonError("want an array");
  const elements: Span[] = [];
  i = skipWhitespace(buf, i + 1);
  if (buf[i] === CLOSE_BRACKET) return { elements, end: i + 1 };
  for (;;) {
    const start = i;
    const end = skipValue(buf, i);
    elements.push({ start, end });
    i = skipWhitespace(buf, end);
    if (buf[i] === COMMA) {
      i = skipWhitespace(buf, i + 1);
      continue;
    }
    if (buf[i] === CLOSE_BRACKET) return { elements, end: i + 1 };
    throw new RawJsonError("want ',' or ']' in an array");
  }
}

/** Index of the last non-whitespace byte at or before `i`, or -1. */
export function lastNonWhitespace(buf: Uint8Array, i: number): number {
  while (i >= 0 && isWhitespace(buf[i])) i--;
  return i;
}

/** Where a member name first comes twice in one object: the path to that object (array indexes and member names) and the name. */
export interface DuplicateMember {
  path: (string | number)[];
  key: string;
}

/** Index just after the closing quote of the string starting at `text[i]` (a quote), in a string (no UTF-8 copy). */
function skipStringText(text: string, i: number): number {
  let j = i + 1;
  for (;;) {
    const q = text.indexOf('"', j);
    if (q < 0) throw new RawJsonError("unterminated string");
    let k = q - 1;
    while (k > i && text.charCodeAt(k) === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q + 1;
    j = q + 1;
  }
}

/**
 * The first object member name that `text` (JSON that JSON.parse accepted) holds twice in one object, at any depth,
 * or undefined. JSON.parse keeps the last of duplicates and so do geth and Anvil, but JSON libraries differ (some keep
 * the first, some refuse), so a node may read the other one. Names are compared as decoded ("t\u006f" is "to").
 * Iterative (nesting is bounded only by the container count); strings are skipped at indexOf speed.
 */
export function duplicateMember(text: string): DuplicateMember | undefined {
  // One frame per open container: an object's names seen so far (null for an array), and the member or index now open.
  const seen: (Set<string> | null)[] = [];
  const at: (string | number)[] = [];
  let expectKey = false;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = skipStringText(text, i);
      const names = seen[seen.length - 1];
      if (expectKey && names) {
        // Names with escapes are rare; let JSON.parse read them exactly.
        const raw = text.slice(i, end);
        const key = raw.includes("\\") ? (JSON.parse(raw) as string) : raw.slice(1, -1);
        if (names.has(key)) return { path: at.slice(0, -1), key };
        names.add(key);
        at[at.length - 1] = key;
        expectKey = false;
      }
      i = end;
      continue;
    }
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      const object = c === OPEN_BRACE;
      seen.push(object ? new Set() : null);
      at.push(object ? "" : 0);
      expectKey = object;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      seen.pop();
      at.pop();
      expectKey = false;
    } else if (c === COMMA) {
      const top = at.length - 1;
      if (seen[top]) expectKey = true;
      else if (top >= 0) at[top] = (at[top] as number) + 1;
    }
    i++;
  }
  return undefined;
}
