/**
 * The Starknet methods: one entry per StarknetService RPC. The seed spec
 * calls its one rollup method rollup_getTransactionByBlockIdAndIndex; that
 * name stands for starknet_getTransactionByBlockIdAndIndex, the name
 * Starknet nodes serve.
 */
import { StarknetService } from "../../gen/nodegate/starknet/v1/starknet_service_pb.js";
import type { MethodEntry } from "./method-table.js";

const m = StarknetService.method;

/**
 * Starknet pass-through methods that name no contract and run none (blocks,
 * transactions and receipts by hash, the chain's state of sync), which a key
 * held to its contracts may call, as ADDRESS_FREE_PASS_THROUGH for Ethereum.
 * Accounts are contracts on Starknet, so the write methods are not among them.
 */
export const STARKNET_ADDRESS_FREE_PASS_THROUGH: ReadonlySet<string> = new Set([
  "starknet_blockHashAndNumber",
  "starknet_blockNumber",
  "starknet_chainId",
  "starknet_getBlockTransactionCount",
  "starknet_getBlockWithReceipts",
  "starknet_getBlockWithTxHashes",
  "starknet_getBlockWithTxs",
  "starknet_getMessagesStatus",
  "starknet_getStateUpdate",
  "starknet_getTransactionByHash",
  "starknet_getTransactionReceipt",
  "starknet_getTransactionStatus",
  "starknet_specVersion",
  "starknet_syncing",
]);

export const starknetMethods: readonly MethodEntry[] = [
  {
    rpc: m.getTransactionByBlockIdAndIndex,
    // The seed spec's rollup method takes named params, as the provider's example sends them; callers' positional params are accepted too.
    paramStyle: "named",
    // Added in spec 0.10.1; older nodes reject a third param, so it is sent only when set.
    params: { response_flags: { optional: true } },
  },
];
