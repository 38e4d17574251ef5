/** The request log line and metrics of one native-path answer (an HTTP body or a WebSocket message). */
import type { Gateway } from "../gateway.js";
import { observeCall } from "../observability/request-log.js";
import type { CallRecord } from "./answer.js";

export function logAnswer(gateway: Gateway, door: string, calls: readonly CallRecord[], started: number, fields: Record<string, unknown>): void {
  const ms = performance.now() - started;
  for (const call of calls) {
    const label = gateway.table.byJsonRpc(call.method) || gateway.passesThrough(call.method) ? call.method : "other";
    observeCall(gateway.metrics, door, label, call.outcome, ms / 1000);
  }
  gateway.log.info(
    {
      door,
      method: calls.length <= 1 ? calls[0]?.method : `batch(${calls.length})`,
      ...(calls.length > 1 ? { methods: calls.slice(0, 10).map((c) => c.method) } : {}),
      errors: calls.filter((c) => c.outcome !== "ok").length,
      ...fields,
      ms: Math.round(ms * 100) / 100,
    },
    "request",
  );
}
