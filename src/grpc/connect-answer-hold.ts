/**
 * Answers made by Connect's own handlers (Connect GET, compressed requests,
 * gRPC and gRPC-Web with JSON payloads, JsonRpcService) count in the reply
 * budget until their response closes, as the lean lanes' answers do
 * (unary-call.ts): a client that asks for large answers and never reads them
 * would otherwise hold them in memory without bound. Connect serializes the
 * answer after the handler returns, out of sight, so what is counted is the
 * node's result as JSON, about what the serialized answer takes (protobuf is
 * smaller; JsonRpcService's JSON escapes the result's quotes, a little larger).
 */
import type { HandlerContext } from "@connectrpc/connect";
import type { ApiKey } from "../auth/api-keys.js";
import type { Gateway } from "../gateway.js";
import { HELD_FROM_BYTES } from "../upstream/held-answers.js";
import { whenResponseCloses } from "./node-request.js";

/**
 * Holds `jsonBytes` for this call's answer (a call of `key`) until its response closes; throws the budget's refusal
 * (RESOURCE_EXHAUSTED) when it does not fit.
 */
export function holdConnectAnswer(gateway: Gateway, ctx: HandlerContext, key: ApiKey, jsonBytes: number): void {
  const held = gateway.heldAnswers;
  if (held === undefined || jsonBytes < HELD_FROM_BYTES) return;
  // Each call counts on its own: Connect makes a serialized copy for each, even of one shared result.
  const release = held.hold({}, jsonBytes, key);
  if (typeof release === "string") throw held.refusal("the answers waiting for their clients", "", release);
  whenResponseCloses(ctx.values, release);
}
