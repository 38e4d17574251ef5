/**
 * Subscription topics on their own: one canonical form per filter (so equal
 * filters share an upstream subscription) and the eth_subscribe params and
 * eth_getLogs filter written from it.
 */
import { describe, expect, it } from "vitest";
import { logFilterJson, readSubscribeParams, subscribeParams, topicKey } from "../../src/subscriptions/topic.js";

const A = `0x${"aB".repeat(20)}`;
const B = `0x${"01".repeat(20)}`;
const T1 = `0x${"Cd".repeat(32)}`;
const T2 = `0x${"02".repeat(32)}`;

describe("topics", () => {
  it("gives equal filters one key, whatever the case, order, duplicates, single-or-list and trailing wildcards", () => {
    const one = readSubscribeParams(["logs", { address: [A, B, A], topics: [[T2, T1], null, [], null] }]);
    const two = readSubscribeParams(["logs", { address: [B.toUpperCase().replace("0X", "0x"), A.toLowerCase()], topics: [[T1.toLowerCase(), T2]] }]);
    expect(topicKey(one)).toBe(topicKey(two));
    expect(topicKey(readSubscribeParams(["logs", { address: A }]))).toBe(topicKey(readSubscribeParams(["logs", { address: [A] }])));
    expect(topicKey(readSubscribeParams(["logs", { address: A }]))).not.toBe(topicKey(readSubscribeParams(["logs", { address: B }])));
  });

  it("reads a null among a position's options as any topic, as nodes do", () => {
    expect(topicKey(readSubscribeParams(["logs", { topics: [[T1, null], T2] }]))).toBe(topicKey(readSubscribeParams(["logs", { topics: [null, T2] }])));
  });

  it("writes the canonical filter for eth_subscribe and, with a range, for eth_getLogs", () => {
    const topic = readSubscribeParams(["logs", { address: A, topics: [null, T1] }]);
    expect(topic.kind).toBe("logs");
    const lowerA = A.toLowerCase();
    const lowerT1 = T1.toLowerCase();
    expect(subscribeParams(topic)).toBe(`["logs",{"address":["${lowerA}"],"topics":[null,["${lowerT1}"]]}]`);
    if (topic.kind !== "logs") throw new Error("want logs");
    expect(JSON.parse(logFilterJson(topic.filter, { from: 16, to: 31 }))).toEqual({
      fromBlock: "0x10",
      toBlock: "0x1f",
      address: [lowerA],
      topics: [null, [lowerT1]],
    });
    expect(subscribeParams(readSubscribeParams(["newHeads"]))).toBe('["newHeads"]');
    expect(subscribeParams(readSubscribeParams(["newPendingTransactions", false]))).toBe('["newPendingTransactions"]');
  });
});
