/**
 * Which Ethereum answers are fixed once their block is final. Reads at a block
 * number are final with that block; lookups by hash are final when the block
 * the answer names is (a transaction can still be pending or be reorged out,
 * and an unknown hash answers null until the block arrives). State reads at a
 * block hash are not cached: nodegate cannot tell the hash's height without
 * another call.
 */
import type { Message } from "@bufbuild/protobuf";
import type {
  CallRequest,
  GetBalanceRequest,
  GetBlockByNumberRequest,
  GetBlockReceiptsRequest,
  GetLogsRequest,
} from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import type { BlockId } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import type { FinalityRule } from "./finality-rule.js";
import { firstElementBlock, objectBlock } from "./result-block.js";

type Rule = (request: Message) => FinalityRule | undefined;

function atNumber(block: BlockId | undefined): FinalityRule | undefined {
  return block?.kind.case === "number" ? { kind: "block", number: block.kind.value } : undefined;
}

/** A read whose block param is `block` (a number is final with its block; tags and hashes are never cached). */
const atBlockParam: Rule = (r) => atNumber((r as GetBalanceRequest).block);

const blockNamedBy = (key: string): Rule => {
  const blockOf = objectBlock(key);
  return () => ({ kind: "result", blockOf });
};

const receiptsBlockOf = firstElementBlock("blockNumber");

export const ethFinalityRules: ReadonlyMap<string, Rule> = new Map<string, Rule>([
  ["eth_getBlockByHash", blockNamedBy("number")],
  ["eth_getBlockByNumber", (r) => atNumber((r as GetBlockByNumberRequest).block)],
  ["eth_getUncleByBlockNumberAndIndex", atBlockParam],
  ["eth_getTransactionByBlockNumberAndIndex", atBlockParam],
  ["eth_getBlockTransactionCountByNumber", atBlockParam],
  ["eth_getTransactionByHash", blockNamedBy("blockNumber")],
  ["eth_getTransactionByBlockHashAndIndex", blockNamedBy("blockNumber")],
  ["eth_getTransactionReceipt", blockNamedBy("blockNumber")],
  [
    "eth_getBlockReceipts",
    (r) => {
      const block = (r as GetBlockReceiptsRequest).block;
      if (block?.kind.case === "hash") return { kind: "result", blockOf: receiptsBlockOf };
      return atNumber(block);
    },
  ],
  [
    "eth_getLogs",
    (r) => {
      const filter = (r as GetLogsRequest).filter;
      // An unset fromBlock or toBlock means latest; a blockHash filter is not cached (an empty answer proves nothing).
      if (filter === undefined || filter.blockHash !== undefined) return undefined;
      const from = atNumber(filter.fromBlock);
      const to = atNumber(filter.toBlock);
      if (from === undefined || to === undefined || from.kind !== "block" || to.kind !== "block") return undefined;
      return from.number > to.number ? undefined : to;
    },
  ],
  ["eth_call", (r) => atNumber((r as CallRequest).block)],
  ["eth_getBalance", atBlockParam],
  ["eth_getCode", atBlockParam],
  ["eth_getStorageAt", atBlockParam],
  ["eth_getTransactionCount", atBlockParam],
  ["eth_getProof", atBlockParam],
  // Not eth_feeHistory: its last baseFeePerGas is the next block's, which Anvil works out from its head, so its answer
  // for a final range still changes (found from outside, h93); wallets ask it of `latest` anyway.
]);
