/**
 * The seed's gas rules for eth_call and eth_estimateGas: the gas param is
 * capped at 10x the latest block's gas limit (a larger value is lowered to
 * the cap, as nodes cap gas), and eth_estimateGas without gas (and without a
 * fee, so no balance check applies) gets the pending block's gas limit as its
 * upper bound.
 */
import type { CallRequest, EstimateGasRequest } from "../../../gen/nodegate/eth/v1/eth_service_pb.js";
import type { MethodPolicy, PolicyContext } from "../policy.js";

async function capGas(request: CallRequest | EstimateGasRequest, ctx: PolicyContext): Promise<boolean> {
  const tx = request.transaction;
  if (tx?.gas === undefined) return false;
  const cap = (await ctx.head.gasLimit("latest")) * BigInt(ctx.limits.gasCapMultiplier);
  if (tx.gas <= cap) return false;
  tx.gas = cap;
  return true;
}

export const callGasCap: MethodPolicy = {
  before: (request, ctx) => capGas(request as CallRequest, ctx),
};

export const estimateGasBounds: MethodPolicy = {
  async before(request, ctx) {
    const r = request as EstimateGasRequest;
    const tx = r.transaction;
    if (tx !== undefined && tx.gas === undefined && tx.gasPrice === undefined && tx.maxFeePerGas === undefined) {
      tx.gas = await ctx.head.gasLimit("pending");
      return true;
    }
    return capGas(r, ctx);
  },
};
