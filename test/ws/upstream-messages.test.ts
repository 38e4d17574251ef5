/**
 * How the WebSocket upstream tells a node's messages apart: replies by their
 * id (found without reading the result), notifications by subscription id.
 */
import { describe, expect, it } from "vitest";
import { readSubscriptionNotification } from "../../src/upstream/notification.js";
import { peekReplyId, resultText } from "../../src/upstream/reply.js";

const buf = (s: string) => Buffer.from(s);

describe("peekReplyId", () => {
  it("finds the id wherever it is, as raw text", () => {
    expect(peekReplyId(buf('{"jsonrpc":"2.0","id":42,"result":{"a":[1,2,{"id":7}]}}'))).toBe("42");
    expect(peekReplyId(buf('{"result":{"id":7},"jsonrpc":"2.0","id":43}'))).toBe("43");
    expect(peekReplyId(buf(' {"id":"abc","error":{"code":-32000,"message":"x"}}\n'))).toBe('"abc"');
    expect(peekReplyId(buf('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}'))).toBe("null");
  });

  it("says undefined for a message without id, and throws for one that is not an object", () => {
    expect(peekReplyId(buf('{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0x1","result":"0x2"}}'))).toBeUndefined();
    expect(() => peekReplyId(buf('[{"id":1}]'))).toThrow();
    expect(() => peekReplyId(buf("not json"))).toThrow();
  });
});

describe("readSubscriptionNotification", () => {
  it("reads an eth_subscription notification with the result as raw text", () => {
    const n = readSubscriptionNotification(
      buf('{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0xabc","result":{"number":"0x10","big":123456789012345678901234567890}}}'),
    );
    expect(n?.method).toBe("eth_subscription");
    expect(n?.subscription).toBe("0xabc");
    expect(resultText(n?.result as never)).toBe('{"number":"0x10","big":123456789012345678901234567890}');
  });

  it("reads Starknet's subscription_id, numeric ids included", () => {
    const n = readSubscriptionNotification(
      buf('{"jsonrpc":"2.0","method":"starknet_subscriptionNewHeads","params":{"subscription_id":12,"result":{"block_number":5}}}'),
    );
    expect(n).toMatchObject({ method: "starknet_subscriptionNewHeads", subscription: "12" });
  });

  it("says undefined for a message that is not a notification", () => {
    expect(readSubscriptionNotification(buf('{"jsonrpc":"2.0","method":"eth_subscription","params":["0x1"]}'))).toBeUndefined();
    expect(readSubscriptionNotification(buf('{"jsonrpc":"2.0","id":1,"result":"0x1"}'))).toBeUndefined();
  });
});
