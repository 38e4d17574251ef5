/**
 * Numbers in members nodegate does not model (json_extras.unknown_fields),
 * kept at the value the node wrote. JSON.parse reads every number as a
 * double: a vendor's `"l1Nonce": 18446744073709551615` would come back
 * 18446744073709552000 on the typed door while the native door forwards the
 * node's text. Such a member is written out again from the number's own
 * text when a double does not hold its value.
 *
 * Both ways a result is read agree on it:
 * - the lean transcoder has the member's bytes (`exactSpanText`);
 * - the object path has only the parsed result. Its decoding runs inside
 *   `decodeKeepingNumbers`: the first member that holds a number that may
 *   have been rounded (anything but a safe integer) stops the decoding, and
 *   the result's text is read once more by a parser that notes each
 *   rounded number's text beside its container (rare: nodes' numbers are hex
 *   strings). Outside it (a native caller's params), members are written as
 *   JSON.stringify writes them, as before.
 *
 * What stays as before in both: a number a double holds exactly is written
 * as JSON.stringify writes it (`1.5e3` as `1500`), and so is one the double
 * rounds to a whole number, wherever it is (JSON.parse leaves nothing to
 * tell it by: `1.000000000000000001` comes back `1`, `1e-400` `0`).
 */
import { CodecError } from "./codec-error.js";

/** Where the texts of a parsed value's rounded numbers are: by container (object or array) and key (an array's index as a string). */
export class NumberTexts {
  readonly #byContainer = new WeakMap<object, Map<string, string>>();
  /** The text of a number that is the whole parsed value, when rounded. */
  top: string | undefined;

  get(container: object, key: string): string | undefined {
    return this.#byContainer.get(container)?.get(key);
  }

  note(container: object, key: string, text: string | undefined): void {
    let texts = this.#byContainer.get(container);
    if (text === undefined) {
      texts?.delete(key); // a duplicate key whose last value a double holds
      return;
    }
    if (texts === undefined) this.#byContainer.set(container, (texts = new Map()));
    texts.set(key, text);
  }

  /** `to` holds some of `from`'s members (a codec's copy of an object): their texts go with them. */
  carry(from: object, to: object): void {
    const texts = this.#byContainer.get(from);
    if (texts !== undefined) this.#byContainer.set(to, texts);
  }
}

/** Thrown inside `decodeKeepingNumbers`'s first reading: a member holds a number that may have been rounded. */
class NumberTextsWanted extends Error {}

const DETECT = Symbol("detect");
let reading: typeof DETECT | NumberTexts | undefined;

/**
 * `decode(json)`, where `json` is JSON.parse of `text()`; when an unknown member holds a number that may have been
 * rounded, the decoding is done again from a reading that keeps the numbers' texts.
 */
export function decodeKeepingNumbers<T>(json: unknown, text: () => string, decode: (json: unknown) => T): T {
  const outer = reading;
  reading = DETECT;
  try {
    return decode(json);
  } catch (err) {
    if (!(err instanceof NumberTextsWanted)) throw err;
  } finally {
    reading = outer;
  }
  let exact: { value: unknown; texts: NumberTexts };
  try {
    exact = parseKeepingNumberTexts(text());
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    return decode(json); // nested past the stack: written as before
  }
  reading = exact.texts;
  try {
    return decode(exact.value);
  } finally {
    reading = outer;
  }
}

/** The codec made a copy of `from` holding some of its members (see NumberTexts.carry). */
export function carryNumberTexts(from: object, to: object): void {
  if (reading instanceof NumberTexts) reading.carry(from, to);
}

/** The text of the unknown member `container[key]` (its value `value`), on the object path. */
export function unknownMemberText(value: unknown, container: object, key: string): string {
  const plain = stringify(value);
  if (reading === undefined || !mayBeRounded(value)) return plain;
  if (reading === DETECT) throw new NumberTextsWanted();
  return writeExact(value, reading, container, key);
}

/** The text of an unknown member whose value is `text` (as the lean transcoder reads it); `value` is its JSON.parse. */
export function exactSpanText(value: unknown, text: () => string): string {
  const plain = JSON.stringify(value);
  if (!mayBeRounded(value)) return plain;
  const exact = parseKeepingNumberTexts(text());
  return writeExact(exact.value, exact.texts, undefined, "");
}

function stringify(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (err instanceof RangeError) throw new CodecError("", "nested too deeply");
    throw err;
  }
}

/** Whether `value` holds a number JSON.parse may have rounded: any number but a safe integer. */
function mayBeRounded(value: unknown): boolean {
  if (typeof value === "number") return !Number.isSafeInteger(value);
  if (value === null || typeof value !== "object") return false;
  const stack: object[] = [value];
  for (let container = stack.pop(); container !== undefined; container = stack.pop()) {
    for (const v of Array.isArray(container) ? container : Object.values(container)) {
      if (typeof v === "number") {
        if (!Number.isSafeInteger(v)) return true;
      } else if (v !== null && typeof v === "object") {
        stack.push(v as object);
      }
    }
  }
  return false;
}

/**
 * JSON.stringify's text of `value`, but with each rounded number written as the node wrote it. Only a number that
 * is not a safe integer: one a double rounds to a whole number (1e-400 to 0) is written as that number wherever it
 * is, whatever else the member holds.
 */
function writeExact(value: unknown, texts: NumberTexts, container: object | undefined, key: string): string {
  if (typeof value === "number") {
    if (Number.isSafeInteger(value)) return JSON.stringify(value);
    return (container === undefined ? texts.top : texts.get(container, key)) ?? JSON.stringify(value);
  }
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) out += `${i ? "," : ""}${writeExact(value[i], texts, value, String(i))}`;
    return `${out}]`;
  }
  let out = "{";
  for (const k of Object.keys(value)) {
    out += `${out.length > 1 ? "," : ""}${JSON.stringify(k)}:${writeExact((value as Record<string, unknown>)[k], texts, value, k)}`;
  }
  return `${out}}`;
}

/**
 * The text of a number literal when its double is a different value (JSON.stringify would write another number),
 * else undefined. Compared as decimals: `1.50` and `15e-1` are the double's `1.5`.
 */
export function roundedNumberText(literal: string, n: number): string | undefined {
  if (!Number.isFinite(n)) return literal;
  return decimal(literal) === decimal(JSON.stringify(n)) ? undefined : literal;
}

/** A JSON number literal as sign, significant digits and exponent ("0" for any zero). */
function decimal(literal: string): string {
  let s = literal;
  const negative = s.startsWith("-");
  if (negative) s = s.slice(1);
  let exponent = 0;
  const e = s.search(/[eE]/);
  if (e >= 0) {
    exponent = Number(s.slice(e + 1));
    s = s.slice(0, e);
  }
  const dot = s.indexOf(".");
  if (dot >= 0) {
    exponent -= s.length - dot - 1;
    s = s.slice(0, dot) + s.slice(dot + 1);
  }
  let first = 0;
  while (first < s.length && s[first] === "0") first++;
  let last = s.length;
  while (last > first && s[last - 1] === "0") last--;
  if (first === last) return "0";
  return `${negative ? "-" : ""}${s.slice(first, last)}e${exponent + (s.length - last)}`;
}

const WHITESPACE = /[ \t\n\r]*/y;
const STRING = /"[^"\\]*(?:\\.[^"\\]*)*"/y;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * JSON.parse of `text` (which JSON.parse accepts), noting the text of each number whose double is another value.
 * Recursive: a value nested past the stack throws RangeError.
 */
export function parseKeepingNumberTexts(text: string): { value: unknown; texts: NumberTexts } {
  const texts = new NumberTexts();
  let pos = 0;
  const skipWhitespace = () => {
    WHITESPACE.lastIndex = pos;
    WHITESPACE.test(text);
    pos = WHITESPACE.lastIndex;
  };
  const token = (pattern: RegExp): string => {
    pattern.lastIndex = pos;
    const match = pattern.exec(text);
    if (match === null) throw new SyntaxError(`not JSON at ${pos}`);
    pos = pattern.lastIndex;
    return match[0];
  };
  const string = (): string => {
    const raw = token(STRING);
    return raw.includes("\\") ? (JSON.parse(raw) as string) : raw.slice(1, -1);
  };
  // `into`/`key`: where the value goes, for a number's text.
  const value = (into: object | undefined, key: string): unknown => {
    skipWhitespace();
    const c = text[pos];
    if (c === "{") {
      pos++;
      const object: Record<string, unknown> = {};
      skipWhitespace();
      if (text[pos] === "}") {
        pos++;
        return object;
      }
      for (;;) {
        skipWhitespace();
        const k = string();
        skipWhitespace();
        pos++; // ':'
        const v = value(object, k);
        // As JSON.parse: "__proto__" is an own member, not the object's prototype.
        if (k === "__proto__") Object.defineProperty(object, k, { value: v, enumerable: true, writable: true, configurable: true });
        else object[k] = v;
        skipWhitespace();
        if (text[pos++] === "}") return object;
      }
    }
    if (c === "[") {
      pos++;
      const array: unknown[] = [];
      skipWhitespace();
      if (text[pos] === "]") {
        pos++;
        return array;
      }
      for (;;) {
        array.push(value(array, String(array.length)));
        skipWhitespace();
        if (text[pos++] === "]") return array;
      }
    }
    if (c === '"') return string();
    if (c === "t" || c === "f" || c === "n") {
      const literal = c === "t" ? "true" : c === "f" ? "false" : "null";
      pos += literal.length;
      return c === "t" ? true : c === "f" ? false : null;
    }
    const literal = token(NUMBER);
    const n = Number(literal);
    const rounded = roundedNumberText(literal, n);
    if (into === undefined) texts.top = rounded;
    else texts.note(into, key, rounded);
    return n;
  };
  const parsed = value(undefined, "");
  return { value: parsed, texts };
}
