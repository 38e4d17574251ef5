/**
 * Checks that raw bytes hold exactly one JSON value, without building it:
 * for results too large to parse just to prove they are JSON (a final block's
 * receipts or logs, checked before they are cached). Strict about structure
 * (brackets that match, commas and colons where they belong, member names
 * that are strings, nothing after the value) and the spelling of numbers and
 * literals. Inside strings it finds the closing quote and no more: escapes and
 * raw control characters are not checked, which keeps strings (most of a
 * node's answer: hex) at memchr speed.
 */
import { CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, isWhitespace, OPEN_BRACE, OPEN_BRACKET, QUOTE, skipString } from "./raw-json.js";

const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
const TRUE = Buffer.from("true");
const FALSE = Buffer.from("false");
const NULL = Buffer.from("null");

/** What may come next. */
const enum Want {
  Value,
  ValueOrClose,
  Name,
  NameOrClose,
  SeparatorOrClose,
}

const OBJECT = 1;
const ARRAY = 0;

/** Whether `buf[start, end)` is one JSON value, whitespace around it allowed. */
export function isJsonValue(buf: Uint8Array, start: number, end: number): boolean {
  const open: number[] = [];
  let want = Want.Value;
  let i = start;
  for (;;) {
    while (i < end && isWhitespace(buf[i])) i++;
    if (i >= end) return want === Want.SeparatorOrClose && open.length === 0;
    const c = buf[i] as number;
    switch (want) {
      case Want.Value:
      case Want.ValueOrClose:
        if (c === CLOSE_BRACKET && want === Want.ValueOrClose) {
          open.pop();
          i++;
          want = Want.SeparatorOrClose;
        } else if (c === OPEN_BRACE) {
          open.push(OBJECT);
          i++;
          want = Want.NameOrClose;
        } else if (c === OPEN_BRACKET) {
          open.push(ARRAY);
          i++;
          want = Want.ValueOrClose;
        } else {
          i = c === QUOTE ? stringEnd(buf, i, end) : scalarEnd(buf, i, end);
          if (i < 0) return false;
          want = Want.SeparatorOrClose;
        }
        break;
      case Want.Name:
      case Want.NameOrClose:
        if (c === CLOSE_BRACE && want === Want.NameOrClose) {
          open.pop();
          i++;
          want = Want.SeparatorOrClose;
          break;
        }
        if (c !== QUOTE) return false;
        i = stringEnd(buf, i, end);
        if (i < 0) return false;
        while (i < end && isWhitespace(buf[i])) i++;
        if (buf[i] !== COLON || i >= end) return false;
        i++;
        want = Want.Value;
        break;
      case Want.SeparatorOrClose: {
        if (open.length === 0) return false; // text after the value
        const inside = open[open.length - 1];
        if (c === COMMA) {
          i++;
          want = inside === OBJECT ? Want.Name : Want.Value;
        } else if (c === (inside === OBJECT ? CLOSE_BRACE : CLOSE_BRACKET)) {
          open.pop();
          i++;
        } else {
          return false;
        }
        break;
      }
    }
  }
}

/** Index after the string opening at `i`, or -1 when it does not close before `end`. */
function stringEnd(buf: Uint8Array, i: number, end: number): number {
  try {
    const after = skipString(buf, i);
    return after <= end ? after : -1;
  } catch {
    return -1; // never closes
  }
}

/** Index after the number or literal at `i`, or -1 when it is not spelt as JSON spells one. */
function scalarEnd(buf: Uint8Array, i: number, end: number): number {
  const c = buf[i];
  if (c === 0x74) return literalEnd(buf, i, end, TRUE);
  if (c === 0x66) return literalEnd(buf, i, end, FALSE);
  if (c === 0x6e) return literalEnd(buf, i, end, NULL);
  if (buf[i] === MINUS) i++;
  if (buf[i] === ZERO) i++;
  else if (isDigit(buf[i]) && i < end) i = digitsEnd(buf, i, end);
  else return -1;
  if (i < end && buf[i] === DOT) {
    const after = digitsEnd(buf, i + 1, end);
    if (after === i + 1) return -1;
    i = after;
  }
  if (i < end && (buf[i] === LOWER_E || buf[i] === UPPER_E)) {
    i++;
    if (i < end && (buf[i] === PLUS || buf[i] === MINUS)) i++;
    const after = digitsEnd(buf, i, end);
    if (after === i) return -1;
    i = after;
  }
  return i;
}

function literalEnd(buf: Uint8Array, i: number, end: number, word: Buffer): number {
  if (i + word.length > end) return -1;
  for (let k = 0; k < word.length; k++) if (buf[i + k] !== word[k]) return -1;
  return i + word.length;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= ZERO && c <= NINE;
}

function digitsEnd(buf: Uint8Array, i: number, end: number): number {
  while (i < end && isDigit(buf[i])) i++;
  return i;
}
