/**
 * Runs one native JSON-RPC call: a table method has its params validated by
 * the same codecs as the typed path, then goes as the caller wrote it; an
 * allowlisted method outside the table is forwarded verbatim. The node's
 * result comes back untouched.
 */
import { WRITE_METHODS } from "../config.js";
import { cancelled, invalidParams, methodNotFound } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { type InvokeContext, invokeMethod, invokePassThrough } from "../methods/invoke.js";
import type { MethodTable } from "../methods/method-table.js";
import { InvalidParamsError } from "../methods/params-codec.js";
import { resultSlices, type UpstreamResult } from "../upstream/reply.js";
import type { Call } from "./envelope.js";

export type Outcome = { result: UpstreamResult; error?: undefined } | { result?: undefined; error: GatewayError };

export interface NativeCallContext extends InvokeContext {
  table: MethodTable;
  passesThrough(method: string): boolean;
}

function wrongFamily(method: string, ctx: NativeCallContext): GatewayError {
  return methodNotFound(`${method} (network ${ctx.network.name} serves ${ctx.network.family} methods)`);
}

export async function runNativeCall(call: Call, ctx: NativeCallContext): Promise<Outcome> {
  try {
    const spec = ctx.table.byJsonRpc(call.method);
    if (spec !== undefined) {
      if (spec.family !== ctx.network.family) return { error: wrongFamily(call.method, ctx) };
      let decoded;
      try {
        decoded = spec.params.decode(call.params);
      } catch (err) {
        if (err instanceof InvalidParamsError) return { error: invalidParams(err.message) };
        throw err;
      }
      const result = await invokeMethod(spec, decoded.request, ctx, decoded.rewritten ?? call.paramsText ?? "[]");
      return { result };
    }
    if (ctx.network.family === "eth" && ctx.passesThrough(call.method)) {
      const result = await invokePassThrough(call.method, call.paramsText ?? "[]", !WRITE_METHODS.includes(call.method), ctx);
      return { result };
    }
    return { error: methodNotFound(call.method) };
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
  return [VERSION, Buffer.from(id), RESULT, ...resultSlices(outcome.result), CLOSE];
}
