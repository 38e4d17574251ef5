/** readBatchAnswer: a node's array answer split into its elements, matched to calls by the id each was sent with. */
import { describe, expect, it } from "vitest";
import { RawJsonError } from "../../src/jsonrpc/raw-json.js";
import { readBatchAnswer } from "../../src/upstream/batch-answer.js";

const calls = new Map([
  ["11", "a"],
  ["12", "b"],
  ["13", "c"],
]);
const read = (text: string) => {
  const body = Buffer.from(text);
  const { answers, strays } = readBatchAnswer(body, text.indexOf("["), calls);
  return { answers: answers.map(([call, element]) => [call, element.toString()]), strays };
};

describe("readBatchAnswer", () => {
  it("matches elements to calls by id, in whatever order the node wrote them, each element's text exactly", () => {
    const c = '{"jsonrpc":"2.0","id":13,"result":"0x3"}';
    const a = '{"jsonrpc":"2.0","id":11,"result":{"s":"],[{\\"id\\":12}"}}';
    const b = '{"id":12,"jsonrpc":"2.0","error":{"code":-32000,"message":"x"}}';
    expect(read(` [ ${c} ,\n${a},${b} ] \n`)).toEqual({ answers: [["c", c], ["a", a], ["b", b]], strays: 0 });
  });

  it("counts elements whose id is no call's: another id, the id as a string, id null, none, elements that are no object", () => {
    const text = '[{"id":14,"result":1},{"id":"11","result":1},{"id":null,"error":{"code":-32600,"message":"m"}},{"result":1},7,"x",null,[{"id":11}],{"id":12,"result":"0x2"}]';
    expect(read(text)).toEqual({ answers: [["b", '{"id":12,"result":"0x2"}']], strays: 8 });
  });

  it("reads an empty array as no answers", () => {
    expect(read("[ ]")).toEqual({ answers: [], strays: 0 });
  });

  it.each([
    ["a truncated array", '[{"id":11,"result":1}'],
    ["a truncated element", '[{"id":11,"result":"0x'],
    ["text after the array", '[{"id":11,"result":1}] x'],
    ["a missing comma", '[{"id":11,"result":1} {"id":12,"result":1}]'],
  ])("refuses %s", (_, text) => {
    expect(() => read(text)).toThrow(RawJsonError);
  });
});
