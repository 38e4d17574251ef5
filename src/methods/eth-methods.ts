/**
 * The Ethereum methods: one entry per EthService RPC. The twelve seed methods
 * come first; the rest are common reads callers expect next to them.
 */
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { ANY_BLOCK_PARAM, blockCountCodec, blockIdCodec, NUMBER_OR_TAG } from "../codec/eth-types.js";
import type { MethodEntry } from "./method-table.js";
import type { ParamRules } from "./params-codec.js";

const m = EthService.method;

/** A JSON integer block number (geth reads one) is sent as hex, which every node reads. */
const isJsonInteger = (json: unknown) => typeof json === "number";

/** A block param that takes a number or tag; typed callers that leave it unset get "latest". */
const numberOrTag: ParamRules = { codec: blockIdCodec(NUMBER_OR_TAG), whenUnset: '"latest"', needsRewrite: isJsonInteger };

/**
 * A block param that also takes a hash (EIP-1898). The seed calls it required,
 * but every node defaults it to latest when absent (execution-apis records
 * that), so the native path lets it be absent.
 */
const anyBlock: ParamRules = { codec: blockIdCodec(ANY_BLOCK_PARAM), whenUnset: '"latest"', optional: true, needsRewrite: isJsonInteger };

/**
 * eth_estimateGas's block: nodes disagree on its default (Anvil, Erigon and
 * older geth estimate at "pending", geth now at "latest"), so a native caller
 * who leaves it out gets the node's own.
 */
const estimateBlock: ParamRules = { ...anyBlock, nodeDefault: true };

/** eth_getBlockReceipts also takes a decimal number (the seed says so); nodes want hex, so it is rewritten. */
const receiptsBlock: ParamRules = {
  codec: blockIdCodec({ hash: true, decimal: true }),
  whenUnset: '"latest"',
  needsRewrite: (json) => typeof json === "number" || (typeof json === "string" && /^[0-9]+$/.test(json)),
};

const callObject: ParamRules = { whenUnset: "{}" };

/**
 * eth_feeHistory's percentiles: geth requires them, Anvil, reth and Nethermind answer without (found from outside:
 * nodegate refused what the node answers), so a native caller's omission is the node's to judge; typed callers send [].
 */
const rewardPercentiles: ParamRules = { optional: true, nodeDefault: true, whenUnset: "[]" };

/** geth's optional third param of eth_call and eth_estimateGas; nodes without it never see it unless a caller sends one. */
const stateOverride: ParamRules = { optional: true, whenSkipped: "{}" };

/** geth's (and Anvil's) optional fourth param of eth_call and eth_estimateGas, as viem sends it for blockOverrides. */
const blockOverrides: ParamRules = { optional: true };

/** The contract a method reads, for contract-address allowlists. */
const accountAddress = (r: { address: Uint8Array }) => [r.address];

interface CallShape {
  transaction?:
    | {
        to?: Uint8Array | undefined;
        authorizationList?: { address?: Uint8Array | undefined; jsonExtras?: { unknownFields: Record<string, string> } | undefined }[];
        jsonExtras?: { unknownFields: Record<string, string> } | undefined;
      }
    | undefined;
  stateOverride?: { accounts: { address: Uint8Array; override?: AccountOverrideShape | undefined }[] } | undefined;
}
interface AccountOverrideShape {
  code?: Uint8Array | undefined;
  movePrecompileToAddress?: Uint8Array | undefined;
  jsonExtras?: { unknownFields: Record<string, string> } | undefined;
}

/**
 * The contracts a call names: its target and every account it overrides. An
 * override that replaces code (or moves a precompile, or carries fields
 * nodegate does not model) names none, so a key held to its contracts is
 * refused it: the code would run against any contract's state. So is a call
 * object with a key nodegate does not model: geth folds JSON keys ("TO",
 * "To", or with Unicode folds such as "ſ" for "s") and would call that address instead.
 * An EIP-7702 authorization names the contract whose code its account runs.
 */
const callAddresses = (r: CallShape): Uint8Array[] => {
  if (hasUnmodelledKeys(r.transaction) || r.transaction?.authorizationList?.some(hasUnmodelledKeys)) return [];
  const accounts = r.stateOverride?.accounts ?? [];
  for (const { override } of accounts) {
    if (override?.code !== undefined || override?.movePrecompileToAddress !== undefined || hasUnmodelledKeys(override)) return [];
  }
  const delegates = (r.transaction?.authorizationList ?? []).map((a) => a.address ?? new Uint8Array(0));
  return [...(r.transaction?.to ? [r.transaction.to] : []), ...accounts.map((a) => a.address), ...delegates];
};

/** Whether a JSON object the proto models carried keys it does not (forwarded as json_extras). */
function hasUnmodelledKeys(message: { jsonExtras?: { unknownFields: Record<string, string> } | undefined } | undefined): boolean {
  return Object.keys(message?.jsonExtras?.unknownFields ?? {}).length > 0;
}

/** A filter's contracts; none (refused by a contract allowlist) when it carries keys nodegate does not model, one of which geth may fold to "address". */
const filterAddresses = (r: { filter?: { address: Uint8Array[]; jsonExtras?: { unknownFields: Record<string, string> } | undefined } | undefined }) =>
  hasUnmodelledKeys(r.filter) ? [] : (r.filter?.address ?? []);

/**
 * Pass-through methods that name no account and run no code (a signed
 * transaction's sender pays for what it runs). nodegate does
 * not read the params of the others (eth_createAccessList, eth_simulateV1,
 * eth_getAccount, debug_*, trace_*, ...), so a key held to its contracts is
 * refused them rather than let them reach any contract.
 */
export const ADDRESS_FREE_PASS_THROUGH: ReadonlySet<string> = new Set([
  "eth_accounts",
  "eth_blobBaseFee",
  "eth_blockNumber",
  "eth_chainId",
  "eth_coinbase",
  "eth_feeHistory",
  "eth_gasPrice",
  "eth_getBlockTransactionCountByHash",
  "eth_getBlockTransactionCountByNumber",
  "eth_getTransactionByBlockHashAndIndex",
  "eth_getTransactionByBlockNumberAndIndex",
  "eth_getTransactionByHash",
  "eth_getUncleCountByBlockHash",
  "eth_getUncleCountByBlockNumber",
  "eth_hashrate",
  "eth_maxPriorityFeePerGas",
  "eth_mining",
  "eth_protocolVersion",
  "eth_sendRawTransaction",
  "eth_syncing",
  "net_listening",
  "net_peerCount",
  "net_version",
  "web3_clientVersion",
  "web3_sha3",
]);

export const ethMethods: readonly MethodEntry[] = [
  { rpc: m.getStorageAt, params: { block: anyBlock }, addresses: accountAddress },
  {
    rpc: m.getLogs,
    params: {
      filter: {
        whenUnset: "{}",
        // The seed spells blockHash as blockhash once; case-sensitive nodes would ignore it.
        needsRewrite: (json) => typeof json === "object" && json !== null && "blockhash" in json,
      },
    },
    addresses: filterAddresses,
  },
  { rpc: m.getBlockByHash },
  { rpc: m.getBlockByNumber, params: { block: numberOrTag } },
  { rpc: m.getUncleByBlockNumberAndIndex, params: { block: numberOrTag } },
  { rpc: m.getUncleByBlockHashAndIndex },
  { rpc: m.getTransactionByBlockNumberAndIndex, params: { block: numberOrTag } },
  { rpc: m.getTransactionReceipt },
  { rpc: m.getBlockReceipts, params: { block: receiptsBlock } },
  { rpc: m.estimateGas, params: { transaction: callObject, block: estimateBlock, state_override: stateOverride, block_overrides: blockOverrides }, addresses: callAddresses },
  { rpc: m.call, params: { transaction: callObject, block: anyBlock, state_override: stateOverride, block_overrides: blockOverrides }, addresses: callAddresses },
  { rpc: m.getProof, params: { block: anyBlock }, addresses: accountAddress },

  { rpc: m.blockNumber },
  { rpc: m.chainId },
  { rpc: m.gasPrice },
  { rpc: m.getBalance, params: { block: anyBlock }, addresses: accountAddress },
  { rpc: m.getCode, params: { block: anyBlock }, addresses: accountAddress },
  { rpc: m.getTransactionCount, params: { block: anyBlock }, addresses: accountAddress },
  { rpc: m.getTransactionByHash },
  { rpc: m.getTransactionByBlockHashAndIndex },
  { rpc: m.getBlockTransactionCountByNumber, params: { block: numberOrTag } },
  { rpc: m.getBlockTransactionCountByHash },
  { rpc: m.feeHistory, params: { block_count: { codec: blockCountCodec }, newest_block: numberOrTag, reward_percentiles: rewardPercentiles } },
];
