/**
 * isJsonValue agrees with JSON.parse on every text whose strings hold no
 * escapes or control characters (the one thing it leaves unchecked), and
 * never refuses real JSON.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isJsonValue } from "../../src/jsonrpc/json-check.js";

const check = (text: string) => {
  const buf = Buffer.from(text);
  return isJsonValue(buf, 0, buf.length);
};

const parses = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/** JSON values whose strings are plain (hex and words, as in a node's answer). */
const plainJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.stringMatching(/^[0-9a-zA-Z ]{0,12}$/),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 5 }),
    fc.dictionary(fc.stringMatching(/^[a-zA-Z]{1,6}$/), tie("value"), { maxKeys: 5 }),
  ),
})).value;

const jsonText = fc.tuple(plainJson, fc.constantFrom(undefined, 0, 1, 2, "\t")).map(([v, indent]) => JSON.stringify(v, null, indent));

/**
 * One edit of the kind that breaks structure or spelling: a character put in,
 * taken out or swapped (no control characters or backslashes, which would
 * only break a string's contents).
 */
const edit = fc.tuple(jsonText, fc.nat(), fc.constantFrom(..."{}[],:\"0123456789-+.eExtrufalsn "), fc.constantFrom("insert", "delete", "replace"));

describe("isJsonValue", () => {
  it("accepts every JSON text (any indentation)", () => {
    fc.assert(fc.property(jsonText, (text) => {
        expect(check(text)).toBe(true);
      }), { numRuns: 2000 });
  });

  it("agrees with JSON.parse after any one edit", () => {
    fc.assert(
      fc.property(edit, ([text, at, char, how]) => {
        const i = text.length === 0 ? 0 : at % (text.length + 1);
        const edited = how === "insert" ? text.slice(0, i) + char + text.slice(i) : how === "delete" ? text.slice(0, i) + text.slice(i + 1) : text.slice(0, i) + char + text.slice(i + 1);
        expect(check(edited)).toBe(parses(edited));
      }),
      { numRuns: 5000 },
    );
  });

  it.each([
    ["a trailing comma in an object", '{"a":1,}', false],
    ["a trailing comma in an array", "[1,]", false],
    ["a missing comma", '{"a":1 "b":2}', false],
    ["a mismatched bracket", '{"a":[1}', false],
    ["a name that is not a string", "{a:1}", false],
    ["an unquoted hex number", '{"a":0x1}', false],
    ["a leading zero", "[01]", false],
    ["a bare dot", "[1.]", false],
    ["a misspelt literal", "[nul]", false],
    ["text after the value", '"0x1" x', false],
    ["nothing", "  ", false],
    ["an escaped quote inside a string", '["a\\"b", "c\\\\"]', true],
    ["numbers in every form", "[-0, 1.5e+10, 2E-3, -12.25]", true],
  ])("%s", (_, text, valid) => {
    expect(check(text)).toBe(valid);
    expect(parses(text)).toBe(valid);
  });

  it("checks only the span it is given", () => {
    const buf = Buffer.from('xx{"a":[1,2]}yy');
    expect(isJsonValue(buf, 2, 13)).toBe(true);
    expect(isJsonValue(buf, 2, 12)).toBe(false);
    expect(isJsonValue(buf, 2, 14)).toBe(false);
  });
});
