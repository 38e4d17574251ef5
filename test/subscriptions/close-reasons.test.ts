/**
 * The reason a native WebSocket subscriber's connection is closed with when
 * its subscription cannot go on: the WebSocket protocol caps a close reason
 * at 123 bytes (RFC 6455 5.5), and the errors' own texts are two or three
 * times that, so cut there they lost what to do ("…; subscribe again" cut to
 * "(sub..."). Each such error carries a short form for the close (its message,
 * whole, stays for the typed door and the log): within 123 bytes, whatever the
 * numbers in it, and ending with what to do. The e2e side is in
 * deep-reorg.test.ts and fresh-chain.test.ts.
 */
import { expect, it } from "vitest";
import { blockLogsRefused, historyLost, reorgTooDeep, subscriberTooSlow } from "../../src/errors/catalogue.js";
import type { GatewayError } from "../../src/errors/gateway-error.js";

const BIG = Number.MAX_SAFE_INTEGER;

const cases: [string, GatewayError, RegExp][] = [
  ["a fresh chain", reorgTooDeep(0, 64), /^subscription ended: a fresh chain \(another genesis block: a node restarted afresh, or another chain\); subscribe again$/],
  ["a deep reorganization", reorgTooDeep(21_000_000, 64), /^subscription ended: a reorg deeper than the 64 blocks remembered \(forked at or below block 21000000\); subscribe again$/],
  ["a deep reorganization, huge numbers", reorgTooDeep(BIG, BIG), /^subscription ended: a reorg deeper than the \d+ blocks remembered; subscribe again$/],
  ["history lost", historyLost(123_456, 10_000), /^subscription ended: 123456 blocks went by unseen, more than the 10000 fetched from history; subscribe again$/],
  ["history lost, huge numbers", historyLost(BIG, BIG), /^subscription ended: \d+ blocks went by unseen; subscribe again$/],
  ["a block's logs refused as too many", blockLogsRefused(21_000_000), /^subscription ended: the node refuses the logs of block 21000000 for this filter as too many; subscribe again$/],
  ["a block's logs refused at every try", blockLogsRefused(21_000_000, "query timeout exceeded"), /^subscription ended: the node refuses the logs of block 21000000 for this filter at every try \("query ti…; subscribe again$/],
  ["a block's logs refused, a long text of multi-byte characters", blockLogsRefused(BIG, "ä".repeat(200)), /^subscription ended: the node refuses the logs of block \d+ for this filter at every try \("ä*…; subscribe again$/],
  ["too slow, events", subscriberTooSlow(8192), /^subscriber too slow: 8192 events were waiting to be read; read faster or subscribe to fewer events$/],
  ["too slow, bytes", subscriberTooSlow(8192, BIG), /^subscriber too slow: \d+ bytes were waiting to be read; read faster or subscribe to fewer events$/],
];

it.each(cases)("%s: the close reason fits in 123 bytes and says what to do", (_what, error, expected) => {
  expect(error.closeReason).toMatch(expected);
  expect(Buffer.byteLength(error.closeReason ?? "")).toBeLessThanOrEqual(123);
  expect(error.closeReason).not.toContain("\uFFFD");
  // The message stays whole: the typed door's status and the log carry it.
  expect(Buffer.byteLength(error.message)).toBeGreaterThan(Buffer.byteLength(error.closeReason ?? ""));
});
