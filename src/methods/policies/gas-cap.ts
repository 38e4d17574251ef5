/**
 * The seed's gas rules for eth_call and eth_estimateGas: the gas param is
 * capped at 10x the latest block's gas limit (a larger value is lowered to
 * the cap, as nodes cap gas), and eth_estimateGas without gas (and without a
 * fee, so no balance check applies) gets the pending block's gas limit as its
 * upper bound (the latest block's when the node has no pending block). A node
 * that gives neither gets the call as the caller sent it: it caps gas itself.
 * Nor is the bound added when the caller overrides the block's gas limit
 * (block_overrides.gas_limit): the node bounds the estimate by that limit,
 * and a gas param would take its place.
 */
import type { Message } from "@bufbuild/protobuf";
import type { CallRequest, EstimateGasRequest } from "../../../gen/nodegate/eth/v1/eth_service_pb.js";
import { encodeQuantity } from "../../codec/hex.js";
import { OPEN_BRACKET, skipWhitespace, withEveryMember } from "../../jsonrpc/raw-json.js";
import type { MethodPolicy, PolicyContext } from "../policy.js";

async function capGas(request: CallRequest | EstimateGasRequest, ctx: PolicyContext): Promise<boolean> {
  const tx = request.transaction;
  if (tx?.gas === undefined) return false;
  const limit = await ctx.head.gasLimit("latest");
  if (limit === undefined) return false;
  const cap = limit * BigInt(ctx.limits.gasCapMultiplier);
  if (tx.gas <= cap) return false;
  tx.gas = cap;
  return true;
}

/**
 * The native caller's params text with the gas the policy set: in the transaction (the first param), each "gas" member
 * given it, or one added last; every other member and param as the caller wrote it (encoded again, a state override's
 * null was dropped, the call object's keys reordered, an EIP-1898 block re-spelled and numbers past 2^53 changed).
 */
function gasInText(request: Message, paramsText: string): string | undefined {
  const gas = (request as CallRequest | EstimateGasRequest).transaction?.gas;
  if (gas === undefined) return undefined;
  const buf = Buffer.from(paramsText, "utf8");
  const open = skipWhitespace(buf, 0);
  // Params decoded have a call object first, in an array (the eth methods take no named params).
  if (buf[open] !== OPEN_BRACKET) return undefined;
  return withEveryMember(buf, skipWhitespace(buf, open + 1), "gas", `"${encodeQuantity(gas)}"`);
}

export const callGasCap: MethodPolicy = {
  before: (request, ctx) => capGas(request as CallRequest, ctx),
  inText: gasInText,
};

export const estimateGasBounds: MethodPolicy = {
  async before(request, ctx) {
    const r = request as EstimateGasRequest;
    const tx = r.transaction;
    if (tx !== undefined && tx.gas === undefined && tx.gasPrice === undefined && tx.maxFeePerGas === undefined) {
      if (r.blockOverrides?.gasLimit !== undefined) return false;
      const bound = (await ctx.head.gasLimit("pending")) ?? (await ctx.head.gasLimit("latest"));
      if (bound === undefined) return false;
      tx.gas = bound;
      return true;
    }
    return capGas(r, ctx);
  },
  inText: gasInText,
};
