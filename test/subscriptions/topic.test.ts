/**
 * Subscription topics on their own: one canonical form per filter (so equal
 * filters share an upstream subscription) and the eth_subscribe params and
 * eth_getLogs filter written from it.
 */
import { describe, expect, it } from "vitest";
import { inBlockRange, logFilterJson, readSubscribeParams as readSubscribe, subscribeParams, topicKey } from "../../src/subscriptions/topic.js";

const readSubscribeParams = (params: unknown) => readSubscribe(params).topic;

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

// Found from outside: cast logs --subscribe (alloy) always sends a range (fromBlock "earliest" or "latest", toBlock
// "latest"), which geth and Anvil take, and nodegate refused them all.
describe("a logs subscription's block range, read as geth reads it", () => {
  const blocks = (filter: object) => readSubscribe(["logs", filter]).blocks;
  it.each([
    [{}, undefined],
    [{ fromBlock: "latest", toBlock: "latest" }, undefined],
    [{ fromBlock: "earliest", toBlock: "latest" }, undefined],
    [{ fromBlock: "0x0" }, undefined],
    [{ fromBlock: "0x10" }, { from: 16, to: Number.POSITIVE_INFINITY }],
    [{ fromBlock: "0x10", toBlock: "0x1f" }, { from: 16, to: 31 }],
    [{ fromBlock: "earliest", toBlock: "0x5" }, { from: 0, to: 5 }],
    // geth's hexutil reads 0X and any uint64 (found from outside: refused as "must be a hex block number").
    [{ fromBlock: "0X1b4" }, { from: 436, to: Number.POSITIVE_INFINITY }],
    [{ fromBlock: "0x10", toBlock: "0x7fffffffffffffff" }, { from: 16, to: Number.MAX_SAFE_INTEGER }],
    [{ fromBlock: "0x20000000000001", toBlock: "0x20000000000002" }, { from: Number.MAX_SAFE_INTEGER, to: Number.MAX_SAFE_INTEGER }],
  ])("%j bounds the blocks delivered to %j", (filter, want) => expect(blocks(filter)).toEqual(want));

  it.each([
    [{ fromBlock: "pending" }, /pending logs are not supported/],
    [{ toBlock: "pending" }, /pending logs are not supported/],
    [{ fromBlock: "0x1f", toBlock: "0x10" }, /invalid from and to block combination/],
    [{ fromBlock: "latest", toBlock: "0x10" }, /invalid from and to block combination/],
    // Past 2^53 too, where a double holds neither end (found from outside, h69: read as equal, and taken).
    [{ fromBlock: "0x20000000000002", toBlock: "0x20000000000001" }, /invalid from and to block combination/],
    [{ fromBlock: "finalized" }, /invalid from and to block combination: fromBlock "finalized" \(a subscription's range takes a hex block number, "earliest" or "latest"\)/],
    [{ toBlock: "safe" }, /invalid from and to block combination: toBlock "safe"/],
    [{ fromBlock: "0x010" }, /fromBlock "0x010": hex number with leading zero digits/],
    // web3.js v4 sends a range end as a JSON number.
    [{ fromBlock: 3 }, /fromBlock must be a hex block number such as "0x1b4", "earliest" or "latest", got 3$/],
    [{ toBlock: "3" }, /toBlock must be a hex block number such as "0x1b4", "earliest" or "latest", got "3"$/],
    // geth's texts (found from outside, h69).
    [{ fromBlock: "0x10000000000000000" }, /fromBlock "0x10000000000000000": block number larger than int64/],
    [{ toBlock: "0x8000000000000000" }, /toBlock "0x8000000000000000": block number larger than int64/],
    [{ fromBlock: "0x00000000000000001" }, /fromBlock "0x00000000000000001": hex number with leading zero digits/],
    [{ blockHash: `0x${"11".repeat(32)}` }, /takes no blockHash/],
  ])("%j is refused: %s", (filter, message) => expect(() => blocks(filter)).toThrow(message));

  it("keeps the same upstream subscription whatever the range, and delivers only logs of blocks in it", () => {
    expect(topicKey(readSubscribeParams(["logs", { address: A, fromBlock: "0x10" }]))).toBe(topicKey(readSubscribeParams(["logs", { address: A }])));
    const range = blocks({ fromBlock: "0x10", toBlock: "0x1f" });
    expect([15, 16, 31, 32].map((n) => inBlockRange(range, n))).toEqual([false, true, true, false]);
    expect(inBlockRange(undefined, 0)).toBe(true);
  });
});
