/**
 * Reads the block number an answer names from its raw JSON text, without
 * building the answer: a block's "number", a transaction's or receipt's
 * "blockNumber", the first receipt's "blockNumber" in a list.
 */
import { decodeUint64 } from "../codec/hex.js";
import { RawJsonError, scanObject, skipValue, skipWhitespace } from "../jsonrpc/raw-json.js";
import type { UpstreamResult } from "../upstream/reply.js";

const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;

function quantityAt(body: Buffer, start: number, end: number, key: string): bigint | undefined {
  let found: bigint | undefined;
  const i = skipWhitespace(body, start);
  if (i >= end || body[i] !== OPEN_BRACE) return undefined; // null, or not an object
  scanObject(body, i, (name, valueStart) => {
    if (name !== key) return -1;
    const valueEnd = skipValue(body, valueStart);
    if (body[valueStart] === 0x22) {
      try {
        found = decodeUint64(body.toString("latin1", valueStart + 1, valueEnd - 1));
      } catch {
        found = undefined;
      }
    }
    return valueEnd;
  });
  return found;
}

/** The block number under `key` in an object answer; undefined for null, a missing or null key, or unreadable text. */
export function objectBlock(key: string): (result: UpstreamResult) => bigint | undefined {
  return (r) => {
    try {
      return quantityAt(r.body, r.start, r.end, key);
    } catch (err) {
      if (err instanceof RawJsonError) return undefined;
      throw err;
    }
  };
}

/** The block number under `key` in the first element of a list answer; undefined for an empty list. */
export function firstElementBlock(key: string): (result: UpstreamResult) => bigint | undefined {
  return (r) => {
    const i = skipWhitespace(r.body, r.start);
    if (i >= r.end || r.body[i] !== OPEN_BRACKET) return undefined;
    try {
      return quantityAt(r.body, skipWhitespace(r.body, i + 1), r.end, key);
    } catch (err) {
      if (err instanceof RawJsonError) return undefined;
      throw err;
    }
  };
}
