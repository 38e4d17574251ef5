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

/** A logs filter as a JSON-RPC caller wrote it (eth_subscribe "logs"). */
export function readLogFilterJson(value: unknown): LogTopicFilter {
  if (value === undefined || value === null) return canonicalLogFilter([], []);
  if (typeof value !== "object" || Array.isArray(value)) throw bad("the logs filter must be an object with address and topics");
  const filter = value as Record<string, unknown>;
  for (const key of Object.keys(filter)) {
    if (key === "fromBlock" || key === "toBlock" || key === "blockHash" || key === "blockhash") {
      throw bad(`a logs subscription follows new blocks, so its filter takes no ${key}; use eth_getLogs for past blocks`);
    }
    if (key !== "address" && key !== "topics") throw bad(`unknown logs filter key "${key}" (known: address, topics)`);
  }
  return canonicalLogFilter(readAddresses(filter.address), readTopics(filter.topics));
}

/** The topic of a native eth_subscribe call's params; throws -32602 naming what is wrong. */
export function readSubscribeParams(params: unknown): Topic {
  if (!Array.isArray(params) || typeof params[0] !== "string") {
    throw bad(`want ["newHeads"], ["logs", {address, topics}] or ["newPendingTransactions"]`);
  }
  const [kind, option, ...rest] = params as [string, unknown, ...unknown[]];
  if (rest.length > 0) throw bad(`${kind} takes at most one option`);
  switch (kind) {
    case "newHeads":
      if (option !== undefined) throw bad("newHeads takes no option");
      return { kind };
    case "logs":
      return { kind, filter: readLogFilterJson(option) };
    case "newPendingTransactions":
      if (option === true) throw bad("newPendingTransactions with full transaction objects is not offered; subscribe without the option to receive hashes");
      if (option !== undefined && option !== false) throw bad("the newPendingTransactions option must be a boolean");
      return { kind };
    default:
      throw bad(`unsupported subscription "${kind.slice(0, 64)}"; nodegate offers newHeads, logs and newPendingTransactions`);
  }
}
