/**
 * What nodegate accepts as a node's result. Small results are parsed on
 * arrival (a malformed one is the node's fault: -32052, an outage), large
 * framed ones are forwarded unparsed, and nothing malformed goes into the
 * cache, whatever its size.
 */
import { describe, expect, it } from "vitest";
import { GatewayError } from "../../src/errors/gateway-error.js";
import {
  CHECKED_RESULT_BYTES,
  readChunkedReply,
  readReply,
  readResult,
  rescannedResult,
  resultAlone,
  resultIsJson,
  resultText,
  type UpstreamResult,
} from "../../src/upstream/reply.js";

const reply = (resultText: string, id = 7) => Buffer.from(`{"jsonrpc":"2.0","id":${id},"result":${resultText}}`);

function readError(body: Buffer, id = 7): GatewayError {
  try {
    readReply(body, id);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error(`readReply accepted ${body.toString()}`);
}

const MALFORMED = [
  ["a trailing comma", '{"number":"0x1",}'],
  ["an unquoted hex number", "0x1"],
  ["an object left open", '{"number":"0x1"'],
  ["a bare word", "nul"],
  ["two values", '"0x1" "0x2"'],
  ["a raw control character in a string", '"a\u0001b"'],
] as const;

describe("small results are parsed on arrival", () => {
  it.each(MALFORMED)("%s is an invalid response (-32052), not a result", (_, text) => {
    const err = readError(reply(text));
    expect(err.code).toBe(-32052);
    expect(err.message).toMatch(/^upstream returned an invalid response: /);
  });

  it("text after the reply's closing brace is caught", () => {
    const err = readError(Buffer.from('{"jsonrpc":"2.0","id":7,"result":"0x1"}garbage}'));
    expect(err.code).toBe(-32052);
    expect(err.message).toMatch(/text after the reply object/);
  });

  it("when the id comes after the result (off the fast path), the result is checked too", () => {
    expect(readError(Buffer.from('{"result":{"a":1,},"jsonrpc":"2.0","id":7}')).code).toBe(-32052);
  });

  it("well-formed results of every kind pass unchanged, whitespace and all", () => {
    for (const text of ['"0x1"', "null", "true", "[]", '{"a":[1,2.5e3,-0,null,false,"\\u00e9\\n"]}', ' { "n" : "0x10" } ']) {
      expect(resultText(readReply(reply(text), 7))).toBe(text.trim());
    }
  });

  it(`results over ${CHECKED_RESULT_BYTES} bytes are forwarded unparsed (what keeps large answers cheap)`, () => {
    const large = `{"extraData":"0x${"ab".repeat(CHECKED_RESULT_BYTES)}",}`;
    expect(resultText(readReply(reply(large), 7))).toBe(large);
  });
});

describe("before caching, a result is checked whatever its size", () => {
  const asResult = (text: string): UpstreamResult => {
    const body = reply(text);
    const start = body.indexOf('"result":') + '"result":'.length;
    return { body, start, end: body.length - 1 };
  };

  it.each([
    ["small", 0],
    ["large", 300 * 1024],
  ])("%s well-formed results may be cached", (_, padding) => {
    expect(resultIsJson(asResult(`{"number":"0x1","extraData":"0x${"00".repeat(padding)}","n":[1,2]}`))).toBe(true);
  });

  it.each([
    ["small", 0],
    ["large", 300 * 1024],
  ])("%s results with broken structure are not", (_, padding) => {
    expect(resultIsJson(asResult(`{"number":"0x1","extraData":"0x${"00".repeat(padding)}",}`))).toBe(false);
    expect(resultIsJson(asResult(`{"number":"0x1","extraData":"0x${"00".repeat(padding)}"`))).toBe(false);
    expect(resultIsJson(asResult(`{"number":"0x1","extraData":"0x${"00".repeat(padding)}"}}`))).toBe(false);
  });

  it("small results are parsed, so a misspelt literal is caught too", () => {
    expect(resultIsJson(asResult('{"number":0x1}'))).toBe(false);
  });
});

describe("members beside the result", () => {
  const block = (size: number) => `{"hash":"0x${"e5".repeat(32)}","extraData":"0x${"ab".repeat(size)}"}`;

  it.each([
    ["a JSON-RPC 1.0 style error: null after the result", (r: string) => `{"jsonrpc":"2.0","id":7,"result":${r},"error":null}`],
    ["error: null before the result", (r: string) => `{"jsonrpc":"2.0","id":7,"error":null,"result":${r}}`],
    ["a node's own metadata after the result", (r: string) => `{"id":7,"jsonrpc":"2.0","result":${r},"meta":{"cached":true}}`],
  ])("%s: a small result is read alone", (_, envelope) => {
    const result = block(16);
    expect(resultText(readReply(Buffer.from(envelope(result)), 7))).toBe(result);
  });

  it("error: null after a large result: the result alone, not the text up to the closing brace", () => {
    const result = block(CHECKED_RESULT_BYTES);
    const body = Buffer.from(`{"jsonrpc":"2.0","id":7,"result":${result},"error":null}`);
    expect(resultText(readReply(body, 7))).toBe(result);
    // The same reply in pieces, as a large HTTP body arrives.
    const chunks = [body.subarray(0, 100), body.subarray(100, 3000), body.subarray(3000)];
    expect(resultText(readChunkedReply(chunks, 7))).toBe(result);
  });

  it("a large string result followed by error: null", () => {
    const result = `"0x${"ab".repeat(CHECKED_RESULT_BYTES)}"`;
    expect(resultText(readReply(Buffer.from(`{"jsonrpc":"2.0","id":7,"result":${result},"error":null}`), 7))).toBe(result);
  });

  it("an error after a large result (found from outside: the native door forwarded both) is the node's error, whole or in pieces", () => {
    const body = Buffer.from(`{"jsonrpc":"2.0","id":7,"result":${block(CHECKED_RESULT_BYTES)},"error":{"code":-32000,"message":"boom"}}`);
    expect(readError(body).message).toBe("boom");
    const chunks = [body.subarray(0, 100), body.subarray(100, 3000), body.subarray(3000)];
    expect(() => readChunkedReply(chunks, 7)).toThrow("boom");
  });

  it("a member under another name after a large result: forwarded as written, and found by a rescan (the typed door's)", () => {
    const result = block(CHECKED_RESULT_BYTES);
    const read = readReply(Buffer.from(`{"jsonrpc":"2.0","id":7,"result":${result},"meta":{"a":1}}`), 7);
    expect(resultText(read)).toBe(`${result},"meta":{"a":1}`);
    expect(resultText(rescannedResult(read) as UpstreamResult)).toBe(result);
  });

  it("nodegate's own readers and what keeps the result alone (the cache, JsonRpcService) read it without that member", () => {
    const result = block(CHECKED_RESULT_BYTES);
    const read = readReply(Buffer.from(`{"jsonrpc":"2.0","id":7,"result":${result},"meta":{"a":1}}`), 7);
    expect(readResult(read, (text) => JSON.parse(text) as unknown)).toEqual(JSON.parse(result));
    expect(resultText(resultAlone(read) as UpstreamResult)).toBe(result);
    // A result that is not JSON as the node sent it stays refused, with the reader's own error.
    const broken = readReply(Buffer.from(`{"jsonrpc":"2.0","id":7,"result":${result.replace('"hash":"', '"hash":"\u0001')}}`), 7);
    expect(() => readResult(broken, (text) => JSON.parse(text) as unknown)).toThrow(SyntaxError);
    expect(resultAlone(broken)).toBeUndefined();
    // A result with no member after it is read as it is.
    const plain = readReply(reply(result), 7);
    expect(resultAlone(plain)).toBe(plain);
  });

  it("result: null beside an error object is the node's error", () => {
    const err = readError(Buffer.from('{"jsonrpc":"2.0","id":7,"result":null,"error":{"code":-32000,"message":"header not found"}}'));
    expect(err.code).toBe(-32000);
    expect(err.message).toBe("header not found");
  });
});

describe("a node's error object", () => {
  it("keeps the members besides code, message and data, as the node wrote them (found from outside: the native door dropped them)", () => {
    const err = readError(Buffer.from('{"jsonrpc":"2.0","id":7,"error":{"message":"x","code":-32000,"data":"0x01","reason":"r","stack":{"at":["a", 1]}}}'));
    expect(err.toJson()).toBe('{"code":-32000,"message":"x","data":"0x01","reason":"r","stack":{"at":["a", 1]}}');
    expect(JSON.parse(err.toJson())).toEqual({ code: -32000, message: "x", data: "0x01", reason: "r", stack: { at: ["a", 1] } });
    const plain = readError(Buffer.from('{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"x"}}'));
    expect(plain.toJson()).toBe('{"code":-32000,"message":"x"}');
    const noData = readError(Buffer.from('{"jsonrpc":"2.0","id":7,"error":{"code":429,"message":"too many","extra":{"retryAfter":1}}}'));
    expect(noData.toJson()).toBe('{"code":429,"message":"too many","extra":{"retryAfter":1}}');
  });
});
