/**
 * Reads a subscription notification a node pushes over WebSocket
 * (`{"method":"eth_subscription","params":{"subscription":ID,"result":...}}`;
 * Starknet names the id `subscription_id`), keeping the result as raw text.
 */
import { RawJsonError, scanObject, skipValue, skipWhitespace } from "../jsonrpc/raw-json.js";
import type { UpstreamResult } from "./reply.js";

export interface SubscriptionNotification {
  /** The notification method (eth_subscription, starknet_subscriptionNewHeads, ...). */
  method: string;
  /** The subscription id as the node wrote it, without quotes when it is a string. */
  subscription: string;
  /** The pushed value's raw span. */
  result: UpstreamResult;
}

function idText(body: Buffer, start: number, end: number): string {
  const value = JSON.parse(body.toString("utf8", start, end)) as unknown;
  if (typeof value === "string") return value;
  if (typeof value === "number") return body.toString("latin1", start, end);
  throw new RawJsonError("subscription id is neither a string nor a number");
}

/** The notification in `body`, or undefined when it is not one. Throws RawJsonError for unreadable text. */
export function readSubscriptionNotification(body: Buffer): SubscriptionNotification | undefined {
  let method: string | undefined;
  let subscription: string | undefined;
  let result: { start: number; end: number } | undefined;
  scanObject(body, skipWhitespace(body, 0), (key, valueStart) => {
    if (key === "method") {
      const end = skipValue(body, valueStart);
      const value = JSON.parse(body.toString("utf8", valueStart, end)) as unknown;
      if (typeof value === "string") method = value;
      return end;
    }
    if (key !== "params" || body[valueStart] !== 0x7b) return -1;
    return scanObject(body, valueStart, (paramKey, paramStart) => {
      const end = skipValue(body, paramStart);
      if (paramKey === "subscription" || paramKey === "subscription_id") subscription = idText(body, paramStart, end);
      else if (paramKey === "result") result = { start: paramStart, end };
      return end;
    });
  });
  if (method === undefined || subscription === undefined || result === undefined) return undefined;
  return { method, subscription, result: { body, start: result.start, end: result.end } };
}
