/**
 * Numbers in unknown members (json_extras.unknown_fields) come back at the
 * value the node wrote, on the lean transcoder and on the object path alike;
 * the parser that keeps their texts reads every text as JSON.parse does.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeKeepingNumbers, exactSpanText, parseKeepingNumberTexts, roundedNumberText, unknownMemberText } from "../../src/codec/exact-numbers.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import { STARKNET_FIXTURES } from "../support/starknet-fixtures.js";

describe("roundedNumberText", () => {
  it("is the literal when its double is another value, else undefined", () => {
    const kept = ["9007199254740993", "18446744073709551615", "-18446744073709551617", "0.30000000000000000001", "1e400", "-1e400", "1e-400", "123456789012345678901234567890"];
    for (const literal of kept) expect(roundedNumberText(literal, Number(literal)), literal).toBe(literal);
    const same = ["0", "-0", "1", "9007199254740991", "9007199254740992", "1.5", "1.50", "15e-1", "1.5e3", "1E3", "1e+3", "0.1", "100", "1e21", "12345678901234567000", "5e-324"];
    for (const literal of same) expect(roundedNumberText(literal, Number(literal)), literal).toBeUndefined();
  });
});

describe("parseKeepingNumberTexts", () => {
  it("reads any JSON text as JSON.parse does: values, key order, duplicate keys, __proto__", () => {
    fc.assert(
      fc.property(fc.json(), (text) => {
        const { value } = parseKeepingNumberTexts(text);
        expect(value).toStrictEqual(JSON.parse(text));
        expect(JSON.stringify(value)).toBe(JSON.stringify(JSON.parse(text)));
      }),
      { numRuns: 500 },
    );
    for (const text of ['{"b":1,"1":2,"a":3,"b":4}', '{"__proto__":{"x":1}}', ' [ "a\\"b\\\\" , "\\u00e9\\ud83d\\ude00" , -0 , 1E+2 ] ', '"\\ud800"']) {
      const { value } = parseKeepingNumberTexts(text);
      expect(value).toStrictEqual(JSON.parse(text));
      expect(Object.keys(value as object)).toEqual(Object.keys(JSON.parse(text) as object));
    }
  });

  it("notes a duplicate key's last number, not its first", () => {
    const { value, texts } = parseKeepingNumberTexts('{"n":18446744073709551615,"n":1}');
    expect(texts.get(value as object, "n")).toBeUndefined();
  });
});

/** JSON text holding numbers of every kind, big ones included. */
const numbery: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom("18446744073709551615", "1e400", "0.30000000000000000001", "9007199254740993", "1.5e3", "-0", "0.1", "2.5"),
    fc.bigInt({ min: -(1n << 80n), max: 1n << 80n }).map(String),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
    fc.string().map((s) => JSON.stringify(s)),
    fc.array(tie("value"), { maxLength: 4 }).map((items) => `[${items.join(",")}]`),
    fc.array(fc.tuple(fc.constantFrom("a", "b", "1", "__proto__", "x y"), tie("value")), { maxLength: 4 }).map(
      (members) => `{${members.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`,
    ),
  ),
})).value;

describe("both readings of an unknown member agree", () => {
  it("the lean transcoder's text of a member equals the object path's, for any value", () => {
    fc.assert(
      fc.property(numbery, (member) => {
        const lean = exactSpanText(JSON.parse(member), () => member);
        const text = `{"m":${member}}`;
        const object = decodeKeepingNumbers(JSON.parse(text), () => text, (json) => unknownMemberText((json as { m: unknown }).m, json as object, "m"));
        expect(object).toBe(lean);
        // The same value (-0 aside, which JSON.stringify writes 0), and read again, the same text: each rounded number kept.
        expect(JSON.stringify(JSON.parse(lean))).toBe(JSON.stringify(JSON.parse(member)));
        expect(exactSpanText(JSON.parse(lean), () => lean)).toBe(lean);
      }),
      { numRuns: 500 },
    );
  });

  it("each number is written as the node wrote it when its double is another value, else as JSON.stringify writes it", () => {
    const literal = fc.oneof(
      fc.constantFrom("18446744073709551615", "1e400", "0.30000000000000000001", "9007199254740993", "1.5e3", "-0", "1E2"),
      fc.bigInt({ min: -(1n << 80n), max: 1n << 80n }).map(String),
      fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
    );
    fc.assert(
      fc.property(fc.array(literal, { minLength: 1, maxLength: 6 }), (literals) => {
        const member = `[${literals.join(" , ")}]`;
        const wanted = `[${literals.map((l) => roundedNumberText(l, Number(l)) ?? JSON.stringify(Number(l))).join(",")}]`;
        expect(exactSpanText(JSON.parse(member), () => member)).toBe(wanted);
      }),
      { numRuns: 300 },
    );
  });

  it("a number a double rounds to a whole number is written as that number whatever else the member holds", () => {
    // Found from outside (h67): 1e-400 came back 0 alone, and as written beside a fraction.
    for (const [member, wanted] of [
      ["[1e-400]", "[0]"],
      ["[1e-400,1.5]", "[0,1.5]"],
      ['{"a":1.000000000000000001,"b":0.5,"c":18446744073709551615}', '{"a":1,"b":0.5,"c":18446744073709551615}'],
    ] as const) {
      expect(exactSpanText(JSON.parse(member), () => member), member).toBe(wanted);
    }
  });

  it("outside a typed result's decoding (a native caller's params), a member is written as JSON.stringify writes it", () => {
    const json = { m: [18446744073709551615] };
    expect(unknownMemberText(json.m, json, "m")).toBe("[18446744073709552000]");
  });

  it("a Starknet transaction's own unknown member keeps its number (the variant reads a copy of the object)", () => {
    const spec = createMethodTable().byJsonRpc("starknet_getTransactionByBlockIdAndIndex");
    if (spec === undefined) throw new Error("no starknet_getTransactionByBlockIdAndIndex");
    const fixture = STARKNET_FIXTURES[0];
    if (fixture === undefined) throw new Error("no Starknet fixture");
    const text = `${JSON.stringify(fixture.json).slice(0, -1)},"vendor_counter":18446744073709551615,"vendor_list":[18446744073709551617]}`;
    const message = decodeKeepingNumbers(JSON.parse(text), () => text, (json) => spec.result.decode(json)) as unknown as {
      transaction: { variant: { value: { jsonExtras?: { unknownFields: Record<string, string> } } } };
    };
    expect(message.transaction.variant.value.jsonExtras?.unknownFields).toEqual({ vendor_counter: "18446744073709551615", vendor_list: "[18446744073709551617]" });
    expect(JSON.parse(spec.result.encode(message as never).replace(/18446744073709551615|18446744073709551617/g, '"$&"'))).toMatchObject({
      vendor_counter: "18446744073709551615",
      vendor_list: ["18446744073709551617"],
    });
  });
});
