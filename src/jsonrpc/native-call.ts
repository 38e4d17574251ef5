/**
 * Runs one native JSON-RPC call through the method table: params validated by
 * the same codecs as the typed path, then forwarded as the caller wrote them,
 * and the node's result returned untouched.
 */
import { cancelled, invalidParams, methodNotFound, noNetworkOfFamily, wrongNetworkFamily } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import type { ChainFamily, MethodTable } from "../methods/method-table.js";
import { InvalidParamsError } from "../methods/params-codec.js";
import type { UpstreamResult } from "../upstream/reply.js";
import type { Network } from "../upstream/network.js";
import type { Call } from "./envelope.js";

export type Outcome = { result: UpstreamResult; error?: undefined } | { result?: undefined; error: GatewayError };

export interface NativeCallContext {
  table: MethodTable;
  network: Network;
  signal: AbortSignal;
  /** The name of the network that serves a chain family, for the wrong-family error's advice. */
  homeNetwork?: (family: ChainFamily) => string | undefined;
}

function wrongFamilyFix(family: ChainFamily, ctx: NativeCallContext): string {
  if (ctx.homeNetwork === undefined) return "send it to a network of that family (/<network>/v3/<KEY>)";
  const home = ctx.homeNetwork(family);
  return home === undefined ? noNetworkOfFamily(family) : `send it to /${home}/v3/<KEY>`;
}

export async function runNativeCall(call: Call, ctx: NativeCallContext): Promise<Outcome> {
  try {
    const spec = ctx.table.byJsonRpc(call.method);
    if (spec === undefined) return { error: methodNotFound(call.method) };
    if (spec.family !== ctx.network.family) {
      const error = wrongNetworkFamily({
        method: call.method,
        methodFamily: spec.family,
        network: ctx.network.name,
        networkFamily: ctx.network.family,
        fix: wrongFamilyFix(spec.family, ctx),
      });
      return { error };
    }
    let paramsText = call.paramsText ?? "[]";
    try {
      const decoded = spec.params.decode(call.params);
      if (decoded.rewritten !== undefined) paramsText = decoded.rewritten;
    } catch (err) {
      if (err instanceof InvalidParamsError) return { error: invalidParams(err.message) };
      throw err;
    }
    const result = await ctx.network.call(spec.jsonrpcMethod, paramsText, { signal: ctx.signal });
    return { result };
  } catch (err) {
    if (err instanceof GatewayError) return { error: err };
    if (ctx.signal.aborted) return { error: cancelled() };
    throw err;
  }
}

const VERSION = Buffer.from('{"jsonrpc":"2.0","id":');
const RESULT = Buffer.from(',"result":');
const CLOSE = Buffer.from("}");

/** The response object for one call, as buffers to write in order (the result is not copied). */
export function renderResponse(id: string, outcome: Outcome): Buffer[] {
  if (outcome.error !== undefined) {
    return [VERSION, Buffer.from(`${id},"error":${outcome.error.toJson()}}`)];
  }
  const r = outcome.result;
  return [VERSION, Buffer.from(id), RESULT, r.body.subarray(r.start, r.end), CLOSE];
}
