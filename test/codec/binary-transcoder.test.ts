/**
 * The one-pass JSON -> protobuf transcoder of the gRPC lane is the object
 * codec's twin: for any text, it either gives up (the object path then
 * answers) or writes bytes that decode to exactly the message the object
 * codec builds. Checked on every execution-apis fixture, on edge values, and
 * on randomly edited answers, including ones the object codec rejects.
 */
import { equals, fromBinary, type Message } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BinaryCompiler, ResultTranscoder } from "../../src/codec/binary-transcoder.js";
import { ethBinarySpecials } from "../../src/codec/eth-binary.js";
import { decodeKeepingNumbers } from "../../src/codec/exact-numbers.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import type { MethodSpec } from "../../src/methods/method-table.js";
import { type ConformanceCase, conformanceCases } from "../support/conformance.js";

const table = createMethodTable();
const compiler = new BinaryCompiler(table.registry, ethBinarySpecials);

const cases = conformanceCases().filter((c) => "result" in c.response && table.byJsonRpc(c.method) !== undefined);

function transcoder(method: string): { spec: MethodSpec; fast: ResultTranscoder } {
  const spec = table.byJsonRpc(method) as MethodSpec;
  const fast = ResultTranscoder.compile(compiler, spec.rpc.output);
  if (fast === undefined) throw new Error(`${method} has no fast path`);
  return { spec, fast };
}

/** The object path's message, or undefined when it rejects the text. */
function objectPath(spec: MethodSpec, text: string): Message | undefined {
  try {
    return decodeKeepingNumbers(JSON.parse(text), () => text, (json) => spec.result.decode(json));
  } catch {
    return undefined;
  }
}

/** Both paths on one text: "gave up", or the fast bytes decoded (after checking they equal the object path). */
function both(method: string, text: string): "gave up" | Message {
  const { spec, fast } = transcoder(method);
  const body = Buffer.from(`  ${text} `);
  const bytes = fast.write(body, 2, body.length - 1, 5);
  if (bytes === undefined) return "gave up";
  const expected = objectPath(spec, text);
  expect(expected, `the fast path accepted what the object codec rejects: ${text.slice(0, 200)}`).toBeDefined();
  const got = fromBinary(spec.rpc.output, bytes.subarray(5));
  expect(equals(spec.rpc.output, got, expected as Message), `different message for ${text.slice(0, 200)}`).toBe(true);
  return got;
}

describe("every fixture answer", () => {
  // eth_getProof: storage slots have no binary writer. Starknet: felts (minimal hex) and the transaction variants (a oneof) are left to the object codec.
  it("every typed method but eth_getProof and the Starknet one has a fast path", () => {
    const without = table
      .all()
      .filter((s) => ResultTranscoder.compile(compiler, s.rpc.output) === undefined)
      .map((s) => s.jsonrpcMethod);
    expect(without).toEqual(["eth_getProof", "starknet_getTransactionByBlockIdAndIndex"]);
  });

  for (const c of cases.filter((x) => x.method !== "eth_getProof")) {
    it(`${c.method} ${c.file}: same message, no fallback`, () => {
      expect(both(c.method, JSON.stringify(c.response.result))).not.toBe("gave up");
    });
  }
});

describe("edge values", () => {
  it.each([
    ["0x0", 0n],
    ["0x1", 1n],
    ["0xffffffff", 0xffffffffn],
    ["0x100000000", 0x100000000n],
    ["0x1fffffffffffff", 0x1fffffffffffffn],
    ["0x20000000000001", 0x20000000000001n],
    ["0xffffffffffffffff", 0xffffffffffffffffn],
    ["0xABCdef", 0xabcdefn],
  ])("quantity %s as uint64", (text, value) => {
    const got = both("eth_blockNumber", JSON.stringify(text)) as unknown as { number?: bigint };
    expect(got.number).toBe(value);
  });

  it.each(['"0x10000000000000000"', '"0x01"', '"0x"', '"1"', '"0X1"', "1", '"0x1g"', "true", "[]"])("%s is left to the object path", (text) => {
    expect(both("eth_blockNumber", text)).toBe("gave up");
  });

  it.each(["0x0", "0x1", "0xabc", "0x1000000000000000000000000000000000000000000000000000000000000000", `0x${"f".repeat(64)}`])("Uint256 %s", (text) => {
    expect(both("eth_getBalance", JSON.stringify(text))).not.toBe("gave up");
  });

  it.each(['"0x00"', `"0x1${"0".repeat(64)}"`, '"0x"'])("Uint256 %s is left to the object path", (text) => {
    expect(both("eth_getBalance", text)).toBe("gave up");
  });

  // The writer of a fixed-length value looks for its closing quote where the length puts it; a shorter or longer
  // value with a quote at that place (the next member's) must still be refused, as the object path refuses it.
  it.each([
    ["a short blockHash, the next key's quote where a whole one would end", `{"blockHash":"0x${"ab".repeat(26)}","y":"${"c".repeat(5)}"}`],
    ["a long address", `{"address":"0x${"ab".repeat(21)}"}`],
    ["an address cut short before the next key's quote", `{"address":"0x${"ab".repeat(10)}","data":"0x${"00".repeat(4)}"}`],
  ])("%s is left to the object path", (_label, log) => {
    const text = `[${log}]`;
    expect(objectPath(table.byJsonRpc("eth_getLogs") as MethodSpec, text)).toBeUndefined();
    expect(both("eth_getLogs", text)).toBe("gave up");
  });

  it("a null result leaves field 1 unset", () => {
    const got = both("eth_getBlockByHash", "null") as unknown as { block?: unknown };
    expect(got.block).toBeUndefined();
  });

  it("json_extras: null keys, unknown fields, absent and empty lists survive", () => {
    const text = JSON.stringify({
      number: "0x1",
      hash: null,
      uncles: [],
      transactions: [],
      withdrawals: [],
      "x-provider": { nested: [1, 2.5, "é"] },
      "0": true,
    });
    const got = both("eth_getBlockByNumber", text) as unknown as { block: { jsonExtras?: { nullKeys: string[]; emptyKeys: string[]; unknownFields: Record<string, string> } } };
    expect(got.block.jsonExtras?.nullKeys).toEqual(["hash"]);
    expect(got.block.jsonExtras?.emptyKeys).toEqual(["withdrawals"]);
    expect(got.block.jsonExtras?.unknownFields).toEqual({ "x-provider": '{"nested":[1,2.5,"é"]}', "0": "true" });
  });

  it("numbers a double does not hold, in unknown members, come back as the node wrote them on both paths", () => {
    // Found from outside (h57): 2^64 - 1 came back 18446744073709552000 on the typed door.
    const text =
      '{"number":"0x1","l1Nonce":18446744073709551615,"x":{"a":[1,123456789012345678901234567890,0.1,1.5e3,-0],"b":1e400},' +
      '"plain":{"n":[1,2.5,1.5e3]},"fraction":0.30000000000000000001}';
    const got = both("eth_getBlockByNumber", text) as unknown as { block: { jsonExtras?: { unknownFields: Record<string, string> } } };
    expect(got.block.jsonExtras?.unknownFields).toEqual({
      l1Nonce: "18446744073709551615",
      // Numbers a double holds are written as JSON.stringify writes them, beside the kept ones.
      x: '{"a":[1,123456789012345678901234567890,0.1,1500,0],"b":1e400}',
      plain: '{"n":[1,2.5,1500]}',
      fraction: "0.30000000000000000001",
    });
    // The object path alone (a Connect caller's), also when it is the one to read the answer: a duplicate key makes the fast path give up.
    const duplicated = '{"number":"0x1","number":"0x2","big":[18446744073709551615]}';
    expect(both("eth_getBlockByNumber", duplicated)).toBe("gave up");
    const { spec } = transcoder("eth_getBlockByNumber");
    const object = objectPath(spec, duplicated) as unknown as { block: { jsonExtras?: { unknownFields: Record<string, string> } } };
    expect(object.block.jsonExtras?.unknownFields).toEqual({ big: "[18446744073709551615]" });
  });

  it("\"0x\" where a hash, root or bloom goes (Tron's stateRoot, OKExChain's roots, early Hedera's logsBloom) is read and written back as \"0x\"", () => {
    // Found from outside: such blocks and receipts were refused (-32053) on the typed door, and typed newHeads ended.
    const block = `{"number":"0x10","hash":"0x${"ab".repeat(32)}","parentHash":"0x","stateRoot":"0x","transactionsRoot":"0x","logsBloom":"0x","nonce":"0x","transactions":[]}`;
    const receipt = '{"blockHash":"0x","logsBloom":"0x","status":"0x1","logs":[{"blockHash":"0x","topics":[],"data":"0x"}]}';
    for (const [method, text] of [["eth_getBlockByNumber", block], ["eth_getTransactionReceipt", receipt]] as const) {
      const got = both(method, text);
      expect(got).not.toBe("gave up");
      const { spec } = transcoder(method);
      expect(JSON.parse(spec.result.encode(got as Message))).toEqual(JSON.parse(text));
    }
    // Requests keep the exact length: "0x" is not a block hash to ask for.
    const byHash = table.byJsonRpc("eth_getBlockByHash") as MethodSpec;
    expect(() => byHash.params.decode(["0x", false])).toThrow(/want 32 bytes, got 0/);
    const logs = table.byJsonRpc("eth_getLogs") as MethodSpec;
    expect(() => logs.params.decode([{ blockHash: "0x" }])).toThrow(/want 32 bytes, got 0/);
  });

  it("a \"__proto__\" key is an unknown field like any other, on both paths", () => {
    // Found from outside: the object path lost it (assigned, it set the map's prototype).
    const got = both("eth_getBlockByNumber", '{"number":"0x1","__proto__":{"polluted":true}}') as unknown as { block: { jsonExtras?: { unknownFields: Record<string, string> } } };
    expect(Object.entries(got.block.jsonExtras?.unknownFields ?? {})).toEqual([["__proto__", '{"polluted":true}']]);
  });

  it("a block's transactions as hashes and as objects", () => {
    const hash = `0x${"ab".repeat(32)}`;
    expect(both("eth_getBlockByNumber", JSON.stringify({ number: "0x1", transactions: [hash, hash] }))).not.toBe("gave up");
    expect(both("eth_getBlockByNumber", JSON.stringify({ number: "0x1", transactions: [{ hash, nonce: "0x0" }] }))).not.toBe("gave up");
    expect(both("eth_getBlockByNumber", JSON.stringify({ number: "0x1", transactions: [hash, { hash }] }))).toBe("gave up");
  });

  it("strings with escapes or non-ASCII text are read as JSON.parse reads them", () => {
    const text = '{"jsonrpc":"2.0","id":1}';
    expect(both("eth_getLogs", `[{"address":"0x${"11".repeat(20)}","x":${JSON.stringify(text)},"y":"caf\\u00e9 ✓"}]`)).not.toBe("gave up");
  });

  it("duplicate keys and escaped keys go to the object path", () => {
    expect(both("eth_blockNumber", '"0x1"')).not.toBe("gave up");
    expect(both("eth_getTransactionByHash", '{"nonce":"0x1","nonce":"0x2"}')).toBe("gave up");
    expect(both("eth_getTransactionByHash", '{"x":1,"x":2}')).toBe("gave up");
    expect(both("eth_getTransactionByHash", '{"\\u006eonce":"0x1"}')).toBe("gave up");
  });

  it("an unknown member nested too deeply for the stack goes to the object path, which names it", () => {
    const deep = `${"[".repeat(20_000)}${"]".repeat(20_000)}`;
    const { spec, fast } = transcoder("eth_getTransactionByHash");
    const body = Buffer.from(`{"nonce":"0x1","extra":${deep}}`);
    expect(fast.write(body, 0, body.length, 5)).toBeUndefined();
    expect(() => spec.result.decode(JSON.parse(body.toString()))).toThrow(/nested too deeply/);
  });

  it("text after the result, or broken JSON, is never accepted", () => {
    for (const text of ['"0x1" "0x2"', '"0x1",1', "[", '{"number":"0x1"', '{"number":"0x1",}', "nul", '{"number":"0x1"} x']) {
      expect(both(text.startsWith("{") ? "eth_getBlockByNumber" : "eth_blockNumber", text)).toBe("gave up");
    }
  });
});

/** Random edits of fixture answers: the property is that the fast path never disagrees with the object path. */
describe("randomly edited answers", () => {
  const samples = cases.filter((c) => c.method !== "eth_getProof" && JSON.stringify(c.response.result).length < 20_000);

  const edit = fc.oneof(
    fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), text: fc.constantFrom(" ", "\n", "0", "x", "\\", '"', ",", "}", "]", "null", "\\u0041", "é", "0X", "00", "-") }),
    fc.record({ kind: fc.constant("delete" as const), at: fc.nat(), length: fc.integer({ min: 1, max: 4 }) }),
    fc.record({ kind: fc.constant("upper" as const), at: fc.nat(), length: fc.integer({ min: 1, max: 70 }) }),
    fc.record({ kind: fc.constant("key" as const), at: fc.nat(), text: fc.constantFrom('"extra":1,', '"number":null,', '"logs":[],', '"accessList":[],', '"hash":"0x00",', '"x":{"y":[1,{}]},') }),
  );

  it("the fast path either gives up or writes the object path's message", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: samples.length - 1 }), fc.array(edit, { minLength: 1, maxLength: 3 }), (which, edits) => {
        const c = samples[which] as ConformanceCase;
        let text = JSON.stringify(c.response.result);
        for (const e of edits) {
          const at = e.at % (text.length + 1);
          if (e.kind === "insert") text = text.slice(0, at) + e.text + text.slice(at);
          else if (e.kind === "delete") text = text.slice(0, at) + text.slice(at + e.length);
          else if (e.kind === "upper") text = text.slice(0, at) + text.slice(at, at + e.length).toUpperCase() + text.slice(at + e.length);
          else {
            // Insert a member right after an object's opening brace, when there is one at or after `at`.
            const brace = text.indexOf("{", at);
            if (brace >= 0) text = `${text.slice(0, brace + 1)}${e.text}${text.slice(brace + 1)}`;
          }
        }
        both(c.method, text); // asserts agreement whenever the fast path answers
      }),
      { numRuns: 400, seed: 7 },
    );
  });

  it("whitespace anywhere between tokens never makes it give up", () => {
    for (const c of samples) {
      const spaced = JSON.stringify(c.response.result, null, 2).replace(/\n/g, "\r\n\t");
      expect(both(c.method, spaced)).not.toBe("gave up");
    }
  });
});
