/**
 * eth_getLogs limits from the seed, enforced by nodegate: at most 5,000
 * addresses and topics in the filter, at most 10,000 results, at most 10
 * seconds (the upstream request is cancelled). Errors are the provider's.
 * The filter methods, which query logs too, get the same limits.
 */
import { Code } from "@connectrpc/connect";
import type { GetLogsRequest } from "../../../gen/nodegate/eth/v1/eth_service_pb.js";
import type { Limits } from "../../config/config.js";
import { GatewayError } from "../../errors/gateway-error.js";
import { ranOutOfOwnDeadline } from "../../upstream/network.js";
import { scanArray } from "../../jsonrpc/raw-json.js";
import { resultSlices, type UpstreamResult } from "../../upstream/reply.js";
import type { MethodPolicy } from "../policy.js";

export function tooManyResults(limit: number, from: bigint | undefined, to: bigint | undefined): GatewayError {
  const range = from !== undefined && to !== undefined ? `,"from":"0x${from.toString(16)}","to":"0x${to.toString(16)}"` : "";
  return new GatewayError({
    code: -32005,
    message: `query returned more than ${limit} results`,
    data: `{"limit":${limit}${range}}`,
    grpcCode: Code.ResourceExhausted,
  });
}

/** The provider's words for a query that ran too long; `detail` says whose limit it was when not the node's own. */
export function queryTimeout(detail?: string): GatewayError {
  return new GatewayError({ code: -32005, message: detail === undefined ? "query timeout exceeded" : `query timeout exceeded (${detail})`, grpcCode: Code.ResourceExhausted });
}

export function tooManyParams(count: number, limit: number): GatewayError {
  return new GatewayError({
    code: -32005,
    message: `query has ${count} addresses and topics, more than the limit of ${limit}`,
    grpcCode: Code.ResourceExhausted,
  });
}

const LOG_INDEX_KEY = Buffer.from('"logIndex"');
const LETTER_G = 0x67;
/** Where the key's "g" sits: `"logIndex"` has it at offset 3. */
const G_OFFSET = 3;

/**
 * Counts the logs in a raw eth_getLogs result without building them: every
 * log object has exactly one "logIndex" key, and hex values cannot contain it.
 * The key is found through its "g", which a byte search finds far faster than
 * a search for the whole key. No other key of a log has a "g" (the capital I
 * is also in "transactionIndex"), so each log costs one search, not two.
 */
function isKeyAt(body: Buffer, at: number): boolean {
  for (let k = 0; k < LOG_INDEX_KEY.length; k++) if (body[at + k] !== LOG_INDEX_KEY[k]) return false;
  return true;
}

export function countLogs(result: UpstreamResult): number {
  const slices = resultSlices(result);
  if (slices.length === 1) return countIn(slices[0] as Buffer);
  // A key can straddle two slices; a slice shorter than the key could hide one across three: join those rare replies.
  if (slices.some((s, i) => i > 0 && i < slices.length - 1 && s.length < LOG_INDEX_KEY.length)) return countIn(result.body.subarray(result.start, result.end));
  let n = 0;
  const edge = LOG_INDEX_KEY.length - 1;
  for (let i = 0; i < slices.length; i++) {
    const slice = slices[i] as Buffer;
    n += countIn(slice);
    if (i > 0) {
      const before = slices[i - 1] as Buffer;
      // Too short to hold a whole key, so every key found here straddles the boundary.
      n += countIn(Buffer.concat([before.subarray(Math.max(0, before.length - edge)), slice.subarray(0, edge)]));
    }
  }
  return n;
}

/**
 * Whether a raw eth_getLogs result holds more than `limit` logs. The fast count (countLogs) may overcount: a log with
 * a member of a node's own holding another "logIndex" (found from outside: an L2's "l2Origin":{"logIndex":...}
 * refused 6,000 logs as over 10,000). A count over the limit is checked by counting the array's elements, which
 * costs a walk of the whole text, only on the way to a refusal.
 */
export function hasMoreLogsThan(result: UpstreamResult, limit: number): boolean {
  if (countLogs(result) <= limit) return false;
  try {
    return scanArray(result.body.subarray(result.start, result.end), 0).elements.length > limit;
  } catch {
    return true;
  }
}

function countIn(body: Buffer): number {
  const last = body.length - (LOG_INDEX_KEY.length - G_OFFSET);
  let n = 0;
  let i = body.indexOf(LETTER_G, G_OFFSET);
  while (i >= 0 && i <= last) {
    if (isKeyAt(body, i - G_OFFSET)) n++;
    i = body.indexOf(LETTER_G, i + 1);
  }
  return n;
}

/**
 * A block range that would stay under the limit: from the first log's block
 * to just before the block of log `limit + 1`. None when that is the first
 * log's own block: one block holds more logs than the limit, and suggesting
 * it would send a client that follows the hint round in a loop.
 */
function narrowerRange(result: UpstreamResult, limit: number): [bigint, bigint] | undefined {
  try {
    const logs = JSON.parse(result.body.toString("utf8", result.start, result.end)) as { blockNumber?: string | null }[];
    const first = logs[0]?.blockNumber;
    const over = logs[limit]?.blockNumber;
    if (typeof first !== "string" || typeof over !== "string") return undefined;
    const from = BigInt(first);
    const to = BigInt(over) - 1n;
    return to < from ? undefined : [from, to];
  } catch {
    return undefined;
  }
}

function checkParamCount(count: number, limits: Limits): void {
  if (count > limits.getLogsMaxParams) throw tooManyParams(count, limits.getLogsMaxParams);
}

/**
 * The addresses and topics of a filter written as JSON (eth_newFilter's):
 * an address or a list of them; each topic position null, one topic, or a
 * list of alternatives (counted as the typed filter's anyOf, which a null
 * among them does not join). Anything else counts nothing here: the node
 * judges its own params.
 */
function jsonFilterParams(filter: unknown): number {
  if (typeof filter !== "object" || filter === null) return 0;
  const { address, topics } = filter as { address?: unknown; topics?: unknown };
  let count = Array.isArray(address) ? address.length : typeof address === "string" ? 1 : 0;
  if (!Array.isArray(topics)) return count;
  for (const t of topics) {
    if (typeof t === "string") count++;
    // A null among alternatives matches anything, as the node reads it: it counts nothing, as in eth_getLogs.
    else if (Array.isArray(t)) for (const alternative of t) if (typeof alternative === "string") count++;
  }
  return count;
}

/** The query's deadline, its result count, and a deadline it set restated as the provider's "query timeout exceeded". */
const queryLimits: Pick<MethodPolicy, "timeoutMs" | "after" | "onError"> = {
  timeoutMs: (limits) => limits.getLogsTimeoutMs,
  after(result, ctx) {
    const limit = ctx.limits.getLogsMaxResults;
    if (hasMoreLogsThan(result, limit)) {
      const range = narrowerRange(result, limit);
      throw tooManyResults(limit, range?.[0], range?.[1]);
    }
  },
  onError(err) {
    // Only the query's own deadline is the provider's query timeout: the network's (upstreamTimeoutMs, when shorter)
    // running out says the node is not answering, as for any call.
    return ranOutOfOwnDeadline(err) ? queryTimeout() : err;
  },
};

export const getLogsLimits: MethodPolicy = {
  before(request, ctx) {
    const filter = (request as GetLogsRequest).filter;
    checkParamCount((filter?.address.length ?? 0) + (filter?.topics.reduce((n, t) => n + t.anyOf.length, 0) ?? 0), ctx.limits);
    return false;
  },
  ...queryLimits,
};

/**
 * The same limits on the filter methods (passed through for viem's and
 * ethers' watchers), which would otherwise be eth_getLogs without them: a
 * filter of any size made with eth_newFilter, and all its logs read at once
 * with eth_getFilterLogs. Not eth_getFilterChanges: the node hands over a
 * poll's logs once, so refusing a large poll would lose them for the caller.
 */
export const newFilterLimits: MethodPolicy = {
  checkParams(params, ctx) {
    if (Array.isArray(params)) checkParamCount(jsonFilterParams(params[0]), ctx.limits);
  },
};

export const filterLogsLimits: MethodPolicy = queryLimits;
