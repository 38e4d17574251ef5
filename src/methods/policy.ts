/**
 * Per-method rules nodegate enforces itself, whatever the upstream allows
 * (the seed's limits): they may adjust a request before it goes upstream,
 * set its deadline, check the raw result, and restate an upstream failure.
 */
import type { Message } from "@bufbuild/protobuf";
import type { Limits } from "../config/config.js";
import type { GatewayError } from "../errors/gateway-error.js";
import type { ChainHead } from "../upstream/chain-head.js";
import type { UpstreamResult } from "../upstream/reply.js";

export interface PolicyContext {
  limits: Limits;
  head: ChainHead;
}

export interface MethodPolicy {
  /** Checks or adjusts the typed request; resolves true when it changed it. Throws GatewayError to refuse. */
  before?(request: Message, ctx: PolicyContext): boolean | Promise<boolean>;
  /**
   * The native caller's params text with before's change made in it, every other byte as the caller wrote it (nodes
   * answer by the text: key order, duplicates, nulls in place, numbers past 2^53); undefined to send the request encoded
   * again. Without it, a changed request is encoded again.
   */
  inText?(request: Message, paramsText: string): string | undefined;
  /** For a method outside the typed table (forwarded as sent): checks its params as JSON. Throws GatewayError to refuse. */
  checkParams?(params: unknown, ctx: PolicyContext): void;
  /** The deadline of the upstream call, when the method has its own. */
  timeoutMs?(limits: Limits): number;
  /** Checks the raw result; throws GatewayError to refuse it. */
  after?(result: UpstreamResult, ctx: PolicyContext): void;
  /** Restates an upstream failure (a deadline becomes the method's own limit error). */
  onError?(err: GatewayError, ctx: PolicyContext): GatewayError;
}
