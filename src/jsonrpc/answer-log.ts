/** The request log line and metrics of one native-path answer (an HTTP body or a WebSocket message). */
import { JSONRPC_TO_GRPC } from "../errors/code-map.js";
import type { Gateway } from "../gateway.js";
import { SUBSCRIPTION_METHODS } from "../methods/method-names.js";
import { observeCall } from "../observability/request-log.js";
import { loggablePath, UNSERVED_RPC } from "../observability/typed-refusal-log.js";
import type { CallRecord } from "./answer.js";
import { writeRequestLine } from "../observability/request-line.js";

/** The method logged and counted (as "other") for a request refused before its body was read. */
export const REFUSED_METHOD = "(refused)";

/** What the door adds to the line: the HTTP status (or the answer's), the network asked for, the request id (the HTTP request's, or the WebSocket connection's). */
export interface AnswerFields {
  status: number;
  network: string | undefined;
  requestId?: string;
}

/** The JSON-RPC codes counted under their own outcome label besides the server-error range: the spec's and the code table's. */
const LABELLED_CODES = new Set(["-32700", "-32600", "-32601", "-32602", "-32603", ...JSONRPC_TO_GRPC.map((m) => String(m.jsonrpc))]);

/**
 * A call's outcome as a metric label: a node's error code outside JSON-RPC's server-error range (-32099 to -32000),
 * the spec's own codes and the code table is counted as "other_error", since a node may answer any integer (found
 * from outside: each new code made a new series; the rest of the reserved range still allowed 700 per method). The
 * log line keeps the code itself.
 */
export function outcomeLabel(outcome: string): string {
  if (LABELLED_CODES.has(outcome)) return outcome;
  const code = Number(outcome);
  if (!Number.isInteger(code) || outcome === "") return outcome;
  return code >= -32099 && code <= -32000 ? outcome : "other_error";
}

export function logAnswer(gateway: Gateway, door: string, calls: readonly CallRecord[], started: number, fields: AnswerFields): void {
  const ms = performance.now() - started;
  for (const call of calls) {
    const label = gateway.table.byJsonRpc(call.method) || gateway.passesThrough(call.method) || SUBSCRIPTION_METHODS.has(call.method) ? call.method : "other";
    observeCall(gateway.metrics, door, label, outcomeLabel(call.outcome), ms / 1000);
  }
  let errors = 0;
  for (const call of calls) if (call.outcome !== "ok") errors++;
  writeRequestLine(gateway.log, "info", {
    door,
    method: calls.length <= 1 ? calls[0]?.method : `batch(${calls.length})`,
    methods: calls.length > 1 ? calls.slice(0, 10).map((c) => c.method) : undefined,
    // What each call came to, as the metrics count it: "ok", the JSON-RPC error code, or Canceled.
    outcome: calls.length === 1 ? calls[0]?.outcome : undefined,
    outcomes: calls.length > 1 ? calls.slice(0, 10).map((c) => c.outcome) : undefined,
    errors,
    status: fields.status,
    // A path's first segment names the network only when one is configured by that name: else it may be a key
    // (/<KEY>/v3 was logged as its network, found from outside).
    network: fields.network === undefined || gateway.hasNetwork(fields.network) ? fields.network : "(unknown)",
    requestId: fields.requestId,
    ms: Math.round(ms * 100) / 100,
  });
}

/**
 * The line and metrics of a request to a path nothing serves (a mistyped native path such as /v4/<KEY>, a
 * WebSocket address asked over plain HTTP, a WebSocket upgrade to an HTTP address): counted under "(unserved)" with
 * its HTTP status, its path logged only as far as it holds no key. Found from outside: such requests left no trace.
 */
export function logUnservedPath(gateway: Gateway, url: string, status: number, requestId: string | undefined, started: number, door = "jsonrpc-http", typedStatus?: string): void {
  const ms = performance.now() - started;
  // A typed call's outcome is its gRPC status, as for every typed call; its HTTP status is kept beside it.
  observeCall(gateway.metrics, door, UNSERVED_RPC, typedStatus ?? String(status), ms / 1000);
  writeRequestLine(gateway.log, "info", {
    door,
    method: UNSERVED_RPC,
    path: loggablePath((url.split("?")[0] as string) || "/"),
    status: typedStatus ?? status,
    httpStatus: typedStatus === undefined ? undefined : status,
    requestId,
    ms: Math.round(ms * 100) / 100,
  });
}
