/**
 * Events keep the node's text: a header read from a polled block loses only
 * its transactions, a log taken back by a reorganization only changes its
 * "removed", and nothing else is re-serialised (numbers beyond 2^53 in a
 * chain's own fields, key order and spacing stay as the node wrote them).
 */
import { describe, expect, it } from "vitest";
import { withMember } from "../../src/jsonrpc/raw-json.js";
import { asRemoved, readHead, readLog } from "../../src/subscriptions/events.js";

const hash = (b: string) => `0x${b.repeat(32)}`;

describe("withMember", () => {
  it.each([
    ['{"a":1,"b":2,"c":3}', "a", '{"b":2,"c":3}'],
    ['{"a":1,"b":2,"c":3}', "b", '{"a":1,"c":3}'],
    ['{"a":1,"b":2,"c":3}', "c", '{"a":1,"b":2}'],
    ['{"a":1}', "a", "{}"],
    ['{ "a" : [1, {"b":"}"}] , "c" : 3 }', "a", '{ "c" : 3 }'],
    ['{"a":1,"b":2}', "x", '{"a":1,"b":2}'],
  ])("takes a member out of %s (%s)", (text, key, want) => {
    expect(withMember(text, key, undefined)).toBe(want);
    expect(() => JSON.parse(withMember(text, key, undefined))).not.toThrow();
  });

  it.each([
    ['{"a":1,"removed":false,"c":3}', '{"a":1,"removed":true,"c":3}'],
    ['{"a":1}', '{"a":1,"removed":true}'],
    ["{}", '{"removed":true}'],
    ['{ "a" : 1 }', '{ "a" : 1,"removed":true }'],
  ])("sets a member in %s", (text, want) => {
    expect(withMember(text, "removed", "true")).toBe(want);
  });
});

describe("event texts", () => {
  const big = '{"big":12345678901234567890}';
  const block = `{"number":"0x10","hash":"${hash("aa")}","transactions":["${hash("bb")}"],"parentHash":"${hash("cc")}","l1Weird":${big}}`;

  it("a polled block's header keeps every field as written, without its transactions", () => {
    const head = readHead(block);
    expect(head.text).toBe(`{"number":"0x10","hash":"${hash("aa")}","parentHash":"${hash("cc")}","l1Weird":${big}}`);
    expect(head.number).toBe(16);
  });

  it("a removed log keeps every field as written", () => {
    const log = readLog(`{"blockNumber":"0x10","blockHash":"${hash("aa")}","logIndex":"0x0","removed":false,"l2":${big}}`);
    expect(asRemoved(log).text).toBe(`{"blockNumber":"0x10","blockHash":"${hash("aa")}","logIndex":"0x0","removed":true,"l2":${big}}`);
    expect(asRemoved(log).removed).toBe(true);
  });
});
