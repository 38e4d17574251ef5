/**
 * What a subscription follows: new heads, logs matching an address and
 * topics filter, or pending transactions. Filters are brought to one
 * canonical form (lowercase, sorted, deduplicated, trailing wildcards
 * dropped), so two clients that ask for the same logs in different words
 * share one upstream subscription.
 */
import { invalidParams } from "../errors/catalogue.js";
import type { GatewayError } from "../errors/gateway-error.js";

export type SubscriptionKind = "newHeads" | "logs" | "newPendingTransactions";

/** A logs filter in canonical form. */
export interface LogTopicFilter {
  /** Lowercase 20-byte addresses, sorted; empty matches any address. */
  readonly addresses: readonly string[];
  /** Per position: lowercase 32-byte topics, sorted (any of them matches), or null for any topic. */
  readonly topics: readonly (readonly string[] | null)[];
}

export type Topic =
  | { readonly kind: "newHeads" }
  | { readonly kind: "logs"; readonly filter: LogTopicFilter }
  | { readonly kind: "newPendingTransactions" };

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const TOPIC = /^0x[0-9a-fA-F]{64}$/;

function sortedUnique(values: readonly string[]): string[] {
  return [...new Set(values.map((v) => v.toLowerCase()))].sort();
}

/** Brings a filter to canonical form; values must already be valid hex. */
export function canonicalLogFilter(addresses: readonly string[], topics: readonly (readonly string[] | null)[]): LogTopicFilter {
  const positions = topics.map((t) => (t === null || t.length === 0 ? null : sortedUnique(t)));
  while (positions.length > 0 && positions[positions.length - 1] === null) positions.pop();
  return { addresses: sortedUnique(addresses), topics: positions };
}

/** Addresses plus topic values: what the eth_getLogs parameter limit counts. */
export function filterSize(filter: LogTopicFilter): number {
  return filter.addresses.length + filter.topics.reduce((n, t) => n + (t?.length ?? 0), 0);
}

/** The filter object as JSON-RPC writes it, optionally with a block range (numbers). */
export function logFilterJson(filter: LogTopicFilter, range?: { from: number; to: number }): string {
  const parts: string[] = [];
  if (range !== undefined) parts.push(`"fromBlock":"0x${range.from.toString(16)}"`, `"toBlock":"0x${range.to.toString(16)}"`);
  if (filter.addresses.length > 0) parts.push(`"address":${JSON.stringify(filter.addresses)}`);
  if (filter.topics.length > 0) parts.push(`"topics":${JSON.stringify(filter.topics)}`);
  return `{${parts.join(",")}}`;
}

/** Identifies a topic: equal keys, one upstream subscription. */
export function topicKey(topic: Topic): string {
  return topic.kind === "logs" ? `logs:${logFilterJson(topic.filter)}` : topic.kind;
}

/** The params of the upstream eth_subscribe call for a topic. */
export function subscribeParams(topic: Topic): string {
  return topic.kind === "logs" ? `["logs",${logFilterJson(topic.filter)}]` : `["${topic.kind}"]`;
}

function bad(reason: string): GatewayError {
  return invalidParams(`eth_subscribe: ${reason}`);
}

function readAddresses(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  const list = Array.isArray(value) ? value : [value];
  for (const a of list) {
    if (typeof a !== "string" || !ADDRESS.test(a)) throw bad("logs filter address must be a 20-byte hex address or a list of them");
  }
  return list as string[];
}

function readTopics(value: unknown): (string[] | null)[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw bad("logs filter topics must be a list");
  if (value.length > 4) throw bad(`logs filter topics has ${value.length} positions; a log has at most 4`);
  return value.map((position: unknown, i) => {
    if (position === null) return null;
    const options = Array.isArray(position) ? position : [position];
    // A null among a position's options matches anything, as nodes read it.
    if (options.includes(null)) return null;
    for (const t of options) {
      if (typeof t !== "string" || !TOPIC.test(t)) throw bad(`logs filter topics[${i}] must be a 32-byte hex topic, a list of them, or null`);
    }
    return options as string[];
  });
}

/**
 * The blocks whose logs a logs subscription delivers, both ends included
 * (`to` is Infinity for "latest"). It still follows new blocks only, as geth
 * reads a range in eth_subscribe: past logs are eth_getLogs' work.
 */
export interface LogBlockRange {
  readonly from: number;
  readonly to: number;
}

/** One end of a subscription filter's range: a block number, or "latest" (also for absent). */
function rangeEnd(value: unknown, key: string): bigint | "latest" {
  if (value === undefined || value === null || value === "latest") return "latest";
  if (value === "earliest") return 0n;
  // geth's error texts, here and in readBlockRange.
  if (value === "pending") throw bad("pending logs are not supported");
  const got = JSON.stringify(value).slice(0, 40);
  // Hex as geth's hexutil reads it (0X too), with its texts, up to int64.
  if (typeof value === "string" && /^0[xX][0-9a-fA-F]+$/.test(value)) {
    if (/^0[xX]0./.test(value)) throw bad(`logs filter ${key} ${got}: hex number with leading zero digits`);
    const number = value.length > 18 ? undefined : BigInt(`0x${value.slice(2)}`);
    if (number === undefined || number > 0x7fffffffffffffffn) throw bad(`logs filter ${key} ${got}: block number larger than int64`);
    return number;
  }
  // geth refuses these in a subscription with its range text; the caller is told what a range takes.
  if (value === "safe" || value === "finalized") throw bad(`invalid from and to block combination: ${key} ${got} (a subscription's range takes a hex block number, "earliest" or "latest")`);
  // web3.js sends a whole JSON number here (found from outside): say it must be hex, not that it must be a number.
  throw bad(`logs filter ${key} must be a hex block number such as "0x1b4", "earliest" or "latest", got ${got}`);
}

/** A logs filter's fromBlock and toBlock, with geth's rules for eth_subscribe; undefined when they bound nothing. */
function readBlockRange(filter: Record<string, unknown>): LogBlockRange | undefined {
  const from = rangeEnd(filter.fromBlock, "fromBlock");
  const to = rangeEnd(filter.toBlock, "toBlock");
  if (from === "latest" && to === "latest") return undefined;
  // Compared exact: two ends past 2^53 are told apart, as geth tells them.
  if (from === "latest" || (to !== "latest" && to < from)) throw bad("invalid from and to block combination");
  if (from === 0n && to === "latest") return undefined;
  return { from: blockNumberOf(from), to: to === "latest" ? Number.POSITIVE_INFINITY : blockNumberOf(to) };
}

/** Past 2^53, where no chain has come, a range end is read as that far. */
const blockNumberOf = (end: bigint): number => (end > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(end));

/** Whether a log of block `blockNumber` is one a subscription with `range` delivers. */
export function inBlockRange(range: LogBlockRange | undefined, blockNumber: number): boolean {
  return range === undefined || (blockNumber >= range.from && blockNumber <= range.to);
}

/** A logs filter as a JSON-RPC caller wrote it (eth_subscribe "logs"), and the block range it may carry. */
export function readLogFilterJson(value: unknown): { filter: LogTopicFilter; blocks: LogBlockRange | undefined } {
  if (value === undefined || value === null) return { filter: canonicalLogFilter([], []), blocks: undefined };
  if (typeof value !== "object" || Array.isArray(value)) throw bad("the logs filter must be an object with address and topics");
  const filter = value as Record<string, unknown>;
  for (const key of Object.keys(filter)) {
    if (key === "blockHash" || key === "blockhash") {
      throw bad(`a logs subscription follows new blocks, so its filter takes no ${key}; use eth_getLogs for one block's logs`);
    }
    if (key !== "address" && key !== "topics" && key !== "fromBlock" && key !== "toBlock") {
      throw bad(`unknown logs filter key "${key}" (known: address, topics, fromBlock, toBlock)`);
    }
  }
  return { filter: canonicalLogFilter(readAddresses(filter.address), readTopics(filter.topics)), blocks: readBlockRange(filter) };
}

/** What a native eth_subscribe asks for: the topic, and for logs the blocks whose logs it wants. */
export interface SubscribeRequest {
  readonly topic: Topic;
  readonly blocks?: LogBlockRange | undefined;
}

/** A native eth_subscribe call's params; throws -32602 naming what is wrong. */
export function readSubscribeParams(params: unknown): SubscribeRequest {
  if (!Array.isArray(params) || typeof params[0] !== "string") {
    throw bad(`want ["newHeads"], ["logs", {address, topics}] or ["newPendingTransactions"]`);
  }
  const [kind, option, ...rest] = params as [string, unknown, ...unknown[]];
  if (rest.length > 0) throw bad(`${kind} takes at most one option`);
  switch (kind) {
    case "newHeads":
      if (option !== undefined) throw bad("newHeads takes no option");
      return { topic: { kind } };
    case "logs": {
      const { filter, blocks } = readLogFilterJson(option);
      return { topic: { kind, filter }, blocks };
    }
    case "newPendingTransactions":
      if (option === true) throw bad("newPendingTransactions with full transaction objects is not offered; subscribe without the option to receive hashes");
      if (option !== undefined && option !== false) throw bad("the newPendingTransactions option must be a boolean");
      return { topic: { kind } };
    default:
      throw bad(`unsupported subscription "${kind.slice(0, 64)}"; nodegate offers newHeads, logs and newPendingTransactions`);
  }
}
