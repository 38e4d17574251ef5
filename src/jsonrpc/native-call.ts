/**
 * Runs one native JSON-RPC call through the method table: params validated by
 * the same codecs as the typed path, then forwarded as the caller wrote them,
 * and the node's result returned untouched.
 */
import { cancelled, invalidParams, methodNotFound } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import type { MethodTable } from "../methods/method-table.js";
import { InvalidParamsError } from "../methods/params-codec.js";
import type { UpstreamResult } from "../upstream/reply.js";
import type { Network } from "../upstream/network.js";
import type { Call } from "./envelope.js";

export type Outcome = { result: UpstreamResult; error?: undefined } | { result?: undefined; error: GatewayError };

export interface NativeCallContext {
  table: MethodTable;
  network: Network;
  signal: AbortSignal;
}

export async function runNativeCall(call: Call, ctx: NativeCallContext): Promise<Outcome> {
  try {
    const spec = ctx.table.byJsonRpc(call.method);
    if (spec === undefined || spec.family !== ctx.network.family) {
      return { error: methodNotFound(call.method) };
    }
    let paramsText = call.paramsText ?? "[]";
    try {
      const decoded = spec.params.decode(call.params);
      if (decoded.rewritten !== undefined) paramsText = decoded.rewritten;
    } catch (err) {
      if (err instanceof InvalidParamsError) return { error: invalidParams(err.message) };
      throw err;
    }
    const result = await ctx.network.call(spec.jsonrpcMethod, paramsText, { signal: ctx.signal, idempotent: spec.idempotent });
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
