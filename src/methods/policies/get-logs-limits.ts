/**
 * eth_getLogs limits from the seed, enforced by nodegate: at most 5,000
 * addresses and topics in the filter, at most 10,000 results, at most 10
 * seconds (the upstream request is cancelled). Errors are the provider's.
 */
import { Code } from "@connectrpc/connect";
import type { GetLogsRequest } from "../../../gen/nodegate/eth/v1/eth_service_pb.js";
import { GatewayError } from "../../errors/gateway-error.js";
import type { UpstreamResult } from "../../upstream/reply.js";
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

export function queryTimeout(): GatewayError {
  return new GatewayError({ code: -32005, message: "query timeout exceeded", grpcCode: Code.ResourceExhausted });
}

export function tooManyParams(count: number, limit: number): GatewayError {
  return new GatewayError({
    code: -32005,
    message: `query has ${count} addresses and topics, more than the limit of ${limit}`,
    grpcCode: Code.ResourceExhausted,
  });
}

const LOG_INDEX_KEY = Buffer.from('"logIndex"');

/**
 * Counts the logs in a raw eth_getLogs result without building them: every
 * log object has exactly one "logIndex" key, and hex values cannot contain it.
 */
export function countLogs(result: UpstreamResult): number {
  let n = 0;
  let i = result.body.indexOf(LOG_INDEX_KEY, result.start);
  while (i >= 0 && i < result.end) {
    n++;
    i = result.body.indexOf(LOG_INDEX_KEY, i + LOG_INDEX_KEY.length);
  }
  return n;
}

/** A block range that would stay under the limit: from the first log's block to just before the block of log `limit + 1`. */
function narrowerRange(result: UpstreamResult, limit: number): [bigint, bigint] | undefined {
  try {
    const logs = JSON.parse(result.body.toString("utf8", result.start, result.end)) as { blockNumber?: string | null }[];
    const first = logs[0]?.blockNumber;
    const over = logs[limit]?.blockNumber;
    if (typeof first !== "string" || typeof over !== "string") return undefined;
    const from = BigInt(first);
    const to = BigInt(over) - 1n;
    return [from, to < from ? from : to];
  } catch {
    return undefined;
  }
}

export const getLogsLimits: MethodPolicy = {
  before(request, ctx) {
    const filter = (request as GetLogsRequest).filter;
    const count = (filter?.address.length ?? 0) + (filter?.topics.reduce((n, t) => n + t.anyOf.length, 0) ?? 0);
    if (count > ctx.limits.getLogsMaxParams) throw tooManyParams(count, ctx.limits.getLogsMaxParams);
    return false;
  },
  timeoutMs: (limits) => limits.getLogsTimeoutMs,
  after(result, _request, ctx) {
    const limit = ctx.limits.getLogsMaxResults;
    if (countLogs(result) > limit) {
      const range = narrowerRange(result, limit);
      throw tooManyResults(limit, range?.[0], range?.[1]);
    }
  },
  onError(err) {
    return err.grpcCode === Code.DeadlineExceeded && err.origin === "nodegate" ? queryTimeout() : err;
  },
};
