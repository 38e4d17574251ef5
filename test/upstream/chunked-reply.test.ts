/**
 * Large replies stay in the chunks they arrived in (no joined copy on the
 * native path). Whatever the chunking, the result is the same bytes readReply
 * finds in the joined reply, eth_getLogs counts the same logs, and replies
 * off the fast path (other key order, errors, wrong ids) are read exactly as
 * readReply reads them.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { countLogs } from "../../src/methods/policies/get-logs-limits.js";
import { ChunkedResult, readChunkedReply, readReply, resultSlices, resultText } from "../../src/upstream/reply.js";

function log(i: number): string {
  return `{"address":"0x${"12".repeat(20)}","topics":["0x${"ab".repeat(32)}"],"data":"0x${"00".repeat(i % 40)}","blockNumber":"0x${(i >> 4).toString(16)}","transactionIndex":"0x1","logIndex":"0x${i.toString(16)}","removed":false}`;
}

const logs = `[${Array.from({ length: 3000 }, (_, i) => log(i)).join(",")}]`;

function split(body: Buffer, sizes: number[]): Buffer[] {
  const chunks: Buffer[] = [];
  let at = 0;
  for (let i = 0; at < body.length; i++) {
    const size = sizes[i % sizes.length] as number;
    chunks.push(body.subarray(at, at + size));
    at += size;
  }
  return chunks;
}

describe("a chunked reply", () => {
  it("keeps the chunks and finds the same result and log count as the joined reply, however it is cut", () => {
    const body = Buffer.from(`{"jsonrpc":"2.0","id":42,"result":${logs}}\r\n`);
    const whole = readReply(body, 42);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 70_000 }), { minLength: 1, maxLength: 6 }), fc.integer({ min: 40, max: 70_000 }), (sizes, first) => {
        const chunks = split(body, [first, ...sizes]).length > 1 ? [body.subarray(0, first), ...split(body.subarray(first), sizes)] : [body];
        const chunked = readChunkedReply(chunks, 42);
        expect(resultText(chunked)).toBe(resultText(whole));
        expect(Buffer.concat(resultSlices(chunked)).toString()).toBe(resultText(whole));
        expect(countLogs(chunked)).toBe(3000);
        if (chunks.length > 1) expect(chunked).toBeInstanceOf(ChunkedResult);
      }),
      { numRuns: 60, seed: 11 },
    );
  });

  it.each([
    ['{"id":7,"jsonrpc":"2.0","result":[1,2]}', "other key order"],
    ['{"jsonrpc":"2.0","id":7,"result":  [1,2]  }', "whitespace around the result"],
    ['{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"nope"}}', "an error"],
    ['{"jsonrpc":"2.0","id":8,"result":[1,2]}', "another id"],
    ['{"jsonrpc":"2.0","id":7,"result":[1,2]', "no closing brace"],
  ])("%s (%s) is read as readReply reads it", (text) => {
    const body = Buffer.from(text);
    const expected = (() => {
      try {
        return resultText(readReply(body, 7));
      } catch (err) {
        return (err as Error).message;
      }
    })();
    for (const cut of [20, 34, 36, body.length - 1]) {
      const got = (() => {
        try {
          return resultText(readChunkedReply([body.subarray(0, cut), body.subarray(cut)], 7));
        } catch (err) {
          return (err as Error).message;
        }
      })();
      expect(got).toBe(expected);
    }
  });
});
