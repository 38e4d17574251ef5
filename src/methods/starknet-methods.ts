/**
 * The Starknet methods: one entry per StarknetService RPC. The seed spec
 * calls its one rollup method rollup_getTransactionByBlockIdAndIndex; that
 * name stands for starknet_getTransactionByBlockIdAndIndex, the name
 * Starknet nodes serve.
 */
import { StarknetService } from "../../gen/nodegate/starknet/v1/starknet_service_pb.js";
import type { MethodEntry } from "./method-table.js";

const m = StarknetService.method;

export const starknetMethods: readonly MethodEntry[] = [
  {
    rpc: m.getTransactionByBlockIdAndIndex,
    // The seed spec's rollup method takes named params, as the provider's example sends them; callers' positional params are accepted too.
    paramStyle: "named",
    // Added in spec 0.10.1; older nodes reject a third param, so it is sent only when set.
    params: { response_flags: { optional: true } },
  },
];
