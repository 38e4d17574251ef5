import { callGasCap, estimateGasBounds } from "./policies/gas-cap.js";
import { filterLogsLimits, getLogsLimits, newFilterLimits } from "./policies/get-logs-limits.js";
import { pendingReceiptsAreLatest } from "./policies/pending-receipts.js";
import type { MethodPolicy } from "./policy.js";

/** The policies nodegate applies, by JSON-RPC method. */
export function createPolicies(): ReadonlyMap<string, MethodPolicy> {
  return new Map<string, MethodPolicy>([
    ["eth_getLogs", getLogsLimits],
    ["eth_newFilter", newFilterLimits],
    ["eth_getFilterLogs", filterLogsLimits],
    ["eth_call", callGasCap],
    ["eth_estimateGas", estimateGasBounds],
    ["eth_getBlockReceipts", pendingReceiptsAreLatest],
  ]);
}
