/**
 * What a feed delivers: one header, log or pending transaction hash, as the
 * node's JSON text (the native door sends it on unchanged) plus the few
 * facts the gap-free logic needs (numbers, hashes, log positions). Hashes
 * are kept lowercase so that comparisons do not depend on a node's hex case.
 */
import { RawJsonError, scanArray, skipWhitespace, withMember } from "../jsonrpc/raw-json.js";
import type { UpstreamResult } from "../upstream/reply.js";

export interface HeadEvent {
  readonly kind: "head";
  readonly number: number;
  readonly hash: string;
  readonly parentHash: string;
  /** The header object's JSON text. */
  readonly text: string;
}

export interface LogEvent {
  readonly kind: "log";
  readonly blockNumber: number;
  readonly blockHash: string;
  readonly logIndex: number;
  readonly removed: boolean;
  /** The log object's JSON text. */
  readonly text: string;
}

export interface PendingTransactionEvent {
  readonly kind: "pendingTransaction";
  readonly hash: string;
  /** The hash as a JSON string ("0x..."). */
  readonly text: string;
}

export type FeedEvent = HeadEvent | LogEvent | PendingTransactionEvent;

export class EventShapeError extends Error {
  override name = "EventShapeError";
}

function quantity(value: unknown, what: string): number {
  if (typeof value !== "string" || !/^0x[0-9a-fA-F]{1,13}$/.test(value)) throw new EventShapeError(`${what} is not a block-sized quantity`);
  return Number.parseInt(value.slice(2), 16);
}

function hash32(value: unknown, what: string): string {
  if (typeof value !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(value)) throw new EventShapeError(`${what} is not a 32-byte hash`);
  return value.toLowerCase();
}

function object(text: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new EventShapeError(`${what} is not JSON`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new EventShapeError(`${what} is not an object`);
  return value as Record<string, unknown>;
}

/**
 * A header from a newHeads notification or an eth_getBlockBy* result. A
 * block's transactions list is dropped: subscribers get headers, whichever
 * way nodegate came by them.
 */
export function readHead(text: string): HeadEvent {
  const block = object(text, "header");
  const head = {
    kind: "head" as const,
    number: quantity(block.number, "header number"),
    hash: hash32(block.hash, "header hash"),
    parentHash: hash32(block.parentHash, "header parentHash"),
  };
  if (!("transactions" in block)) return { ...head, text };
  return { ...head, text: withMember(text, "transactions", undefined) };
}

export function readLog(text: string): LogEvent {
  const log = object(text, "log");
  return {
    kind: "log",
    blockNumber: quantity(log.blockNumber, "log blockNumber"),
    blockHash: hash32(log.blockHash, "log blockHash"),
    logIndex: quantity(log.logIndex, "log logIndex"),
    removed: log.removed === true,
    text,
  };
}

export function readPendingTransaction(text: string): PendingTransactionEvent {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new EventShapeError("pending transaction is not JSON");
  }
  return { kind: "pendingTransaction", hash: hash32(value, "pending transaction hash"), text: JSON.stringify(value) };
}

/** The logs of a raw eth_getLogs (or eth_getFilterChanges) result, each kept as the node wrote it. */
export function readLogs(result: UpstreamResult): LogEvent[] {
  const start = skipWhitespace(result.body, result.start);
  if (result.body[start] !== 0x5b) throw new EventShapeError("the logs result is not an array");
  let elements;
  try {
    elements = scanArray(result.body, start).elements;
  } catch (err) {
    if (err instanceof RawJsonError) throw new EventShapeError(`the logs result is unreadable: ${err.message}`);
    throw err;
  }
  return elements.map((span) => readLog(result.body.toString("utf8", span.start, span.end)));
}

/** The same log, taken back by a reorganization (removed: true), as nodes send it. */
export function asRemoved(log: LogEvent): LogEvent {
  return { ...log, removed: true, text: withMember(log.text, "removed", "true") };
}

/** Identifies a log across deliveries: its block, position and whether it is the removal. */
export function logKey(log: LogEvent): string {
  return `${log.blockHash}:${log.logIndex}:${log.removed ? "r" : "a"}`;
}
