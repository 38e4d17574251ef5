/**
 * Whether an upstream failure is the node refusing a call for its rate limit (a refusal a later try of the same call
 * passes), as opposed to one it refuses for what was asked (a result limit, a revert) or an outage.
 */
import { isUpstreamRateLimited } from "./catalogue.js";
import { GatewayError } from "./gateway-error.js";

/** A provider's rate limit in its own words, whatever the code (Infura's "project ID request rate exceeded", Alchemy's, proxyd's, eRPC's). */
const RATE_WORDING = /rate[- ]?limit|request rate|too many requests|requests? per second|\brps\b|compute units? per second|throughput|capacity exceeded/i;

/** The JSON-RPC code some providers use for a rate limit alone: the HTTP status as a code (Alchemy, web3-proxy). */
const RATE_LIMIT_CODE = 429;

/** -32005 "limit exceeded": a rate limit for every method but eth_getLogs, which uses it for its result and time limits too. */
const LIMIT_EXCEEDED = -32005;

export function isRateLimitRefusal(err: unknown, method: string): boolean {
  if (!(err instanceof GatewayError)) return false;
  if (err.origin === "nodegate") return isUpstreamRateLimited(err);
  if (err.httpStatus === 429 || err.code === RATE_LIMIT_CODE || RATE_WORDING.test(err.message)) return true;
  return err.code === LIMIT_EXCEEDED && method !== "eth_getLogs";
}
