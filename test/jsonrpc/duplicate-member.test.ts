/**
 * duplicateMember finds an object member name written twice, at any depth, as a node's JSON library would read the
 * names (escapes decoded), and says where; it never reports JSON that holds each name once per object.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { duplicateMember } from "../../src/jsonrpc/raw-json.js";

const A = "0x1111111111111111111111111111111111111111";
const X = "0x2222222222222222222222222222222222222222";

describe("duplicateMember", () => {
  it("finds a name twice in one object, with the path to that object", () => {
    expect(duplicateMember(`[{"to":"${X}","to":"${A}"},"latest"]`)).toEqual({ path: [0], key: "to" });
    expect(duplicateMember(`[{"to":"${A}"},"latest",{"${A}":{"code":"0x00","code":null}}]`)).toEqual({ path: [2, A], key: "code" });
    expect(duplicateMember(`[{"to":"${A}"},"latest",{"${A}":{"code":"0x00"},"${A}":{"balance":"0x1"}}]`)).toEqual({ path: [2], key: A });
    expect(duplicateMember(`[{"to":"${A}","authorizationList":[{"address":"${A}"},{"address":"${X}","address":"${A}"}]}]`)).toEqual({
      path: [0, "authorizationList", 1],
      key: "address",
    });
    expect(duplicateMember(`{"a":{"b":[1,[2,{"c":1,"c":2}]]}}`)).toEqual({ path: ["a", "b", 1, 1], key: "c" });
  });

  it("compares names as decoded: an escaped spelling is the same name", () => {
    expect(duplicateMember(`[{"t\\u006f":"${X}","to":"${A}"}]`)).toEqual({ path: [0], key: "to" });
    expect(duplicateMember(`[{"a\\"b":1,"a\\u0022b":2}]`)).toEqual({ path: [0], key: 'a"b' });
    // Different names: case and escapes that decode differently are not duplicates (a case fold is the codec's to refuse).
    expect(duplicateMember(`[{"to":"${A}","TO":"${X}","t\\\\o":1}]`)).toBeUndefined();
  });

  it("reports nothing for the same name in sibling or nested objects, names as values, or brackets in strings", () => {
    expect(duplicateMember(`[{"to":"${A}"},{"to":"${X}"}]`)).toBeUndefined();
    expect(duplicateMember(`[{"to":{"to":{"to":1}}}]`)).toBeUndefined();
    expect(duplicateMember(`[{"a":"a","b":"a"},["a","a"],{},[],{"a":{}, "b":[{}], "c":"{\\"a\\":1,\\"a\\":2}"}]`)).toBeUndefined();
    expect(duplicateMember(`[{"a":[{},"a"],"b":1}]`)).toBeUndefined();
    expect(duplicateMember(`["latest",false]`)).toBeUndefined();
    expect(duplicateMember(`[]`)).toBeUndefined();
  });

  it("finds a duplicate after an empty object or array closes", () => {
    expect(duplicateMember(`[{"a":{},"a":1}]`)).toEqual({ path: [0], key: "a" });
    expect(duplicateMember(`[{"a":[],"b":[{}],"a":1}]`)).toEqual({ path: [0], key: "a" });
  });

  it("reads deep nesting without recursion", () => {
    const deep = `${"[".repeat(200_000)}{"a":1,"a":2}${"]".repeat(200_000)}`;
    expect(duplicateMember(deep)?.key).toBe("a");
  });

  it("agrees with JSON.stringify's output (never a duplicate) and finds one spliced into any object", () => {
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small" },
        fc.string({ maxLength: 6 }),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie("value"), { maxLength: 4 }),
        fc.dictionary(fc.string({ maxLength: 4 }), tie("value"), { maxKeys: 4 }),
      ),
    })).value;
    fc.assert(
      fc.property(json, fc.constantFrom(undefined, 0, 2), (value, indent) => {
        const text = JSON.stringify(value, null, indent);
        expect(duplicateMember(text)).toBeUndefined();
        // Write an object's first member twice: found, whatever surrounds it.
        const first = /\{\s*("(?:[^"\\]|\\.)*")\s*:/.exec(text);
        if (first === null) return;
        const at = first.index + first[0].length;
        const doubled = `${text.slice(0, at)} 0, ${first[1]}:${text.slice(at)}`;
        expect(duplicateMember(doubled)?.key).toBe(JSON.parse(first[1] as string));
      }),
      { numRuns: 300 },
    );
  });
});
