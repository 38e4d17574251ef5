/**
 * Runs one native JSON-RPC call: a table method has its params validated by
 * the same codecs as the typed path, then goes as the caller wrote it; an
 * allowlisted method outside the table is forwarded verbatim. The node's
 * result comes back untouched.
 */
import { sentOnlyOnce } from "../config/config.js";
import { cancelled, internalError, invalidParams, methodNotFound, noNetworkOfFamily, notificationsUnsupported, wrongNetworkFamily } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { type InvokeContext, invokeMethod, invokePassThrough } from "../methods/invoke.js";
import { methodFamily } from "../methods/method-family.js";
import type { ChainFamily, MethodTable } from "../methods/method-table.js";
import { SUBSCRIPTION_METHODS } from "../methods/method-names.js";
import { InvalidParamsError, withAppended } from "../methods/params-codec.js";
import type { ApiKey } from "../auth/api-keys.js";
import type { Gateway } from "../gateway.js";
import type { Logger } from "pino";
import type { Network } from "../upstream/network.js";
import { resultSlices, type UpstreamResult } from "../upstream/reply.js";
import type { Call } from "./envelope.js";
import type { CallSignal } from "../call-signal.js";

export type Outcome = { result: UpstreamResult; error?: undefined } | { result?: undefined; error: GatewayError };

export interface NativeCallContext extends InvokeContext {
  table: MethodTable;
  passesThrough(method: string): boolean;
  /** The name of the network that serves a chain family, for the wrong-family error's advice. */
  homeNetwork?: (family: ChainFamily) => string | undefined;
  /** How this door's caller reaches network `home` (the wrong-family error's advice); default: the HTTP path. */
  reachNetwork?: ((home: string) => string) | undefined;
  /** Methods the connection answers itself (eth_subscribe on WebSocket); undefined for every other method. */
  connectionMethod?: ((call: Call) => Promise<Outcome> | undefined) | undefined;
  /** Where a fault inside nodegate is reported; the call is answered -32603 and its batch goes on. */
  log: Logger;
}

/** The context of one native caller: its key, network and cancellation, with the gateway's table and allowlist. */
export function nativeCallContext(gateway: Gateway, key: ApiKey, network: Network, signal: CallSignal): NativeCallContext {
  // One literal per request (no spreads, no closures): this runs for every native request.
  return {
    access: gateway.access,
    key,
    network,
    limits: gateway.limits,
    policies: gateway.policies,
    signal,
    table: gateway.table,
    homeNetwork: gateway.homeNetworkName,
    passesThrough: gateway.passesThrough,
    log: gateway.log,
  };
}

function wrongFamilyFix(family: ChainFamily, ctx: NativeCallContext): string {
  if (ctx.homeNetwork === undefined) return "send it to a network of that family (/<network>/v3/<KEY>)";
  const home = ctx.homeNetwork(family);
  if (home === undefined) return noNetworkOfFamily(family);
  return ctx.reachNetwork === undefined ? `send it to /${home}/v3/<KEY>` : ctx.reachNetwork(home);
}

function wrongFamily(method: string, family: ChainFamily, ctx: NativeCallContext): GatewayError {
  return wrongNetworkFamily({
    method,
    methodFamily: family,
    network: ctx.network.name,
    networkFamily: ctx.network.family,
    fix: wrongFamilyFix(family, ctx),
  });
}

/** A JSON string that is all hex written with "0X" (not after a backslash: then the quote is inside a string). */
const UPPER_X_HEX = /(?<!\\)"0X(?=[0-9A-Fa-f]*")/g;

/**
 * The params text a table method forwards: the caller's, with "0X" hex
 * strings written "0x". geth reads both; other nodes refuse "0X" (Anvil:
 * "invalid string length" for a hash). Only the prefix changes: block
 * objects, key order and every other byte go as the caller wrote them.
 */
function asSent(paramsText: string | undefined): string {
  if (paramsText === undefined) return "[]";
  return paramsText.includes('"0X') ? paramsText.replace(UPPER_X_HEX, '"0x') : paramsText;
}

export async function runNativeCall(call: Call, ctx: NativeCallContext): Promise<Outcome> {
  try {
    const own = ctx.connectionMethod?.(call);
    if (own !== undefined) return await own;
    if (SUBSCRIPTION_METHODS.has(call.method)) {
      return { error: ctx.network.family === "eth" ? notificationsUnsupported(call.method) : wrongFamily(call.method, "eth", ctx) };
    }
    const spec = ctx.table.byJsonRpc(call.method);
    if (spec !== undefined) {
      if (spec.family !== ctx.network.family) return { error: wrongFamily(call.method, spec.family, ctx) };
      let decoded;
      try {
        decoded = spec.params.decode(call.params, call.paramsText);
      } catch (err) {
        if (err instanceof InvalidParamsError) return { error: invalidParams(err.message) };
        throw err;
      }
      const sent =
        (decoded.rewritten === undefined ? undefined : asSent(decoded.rewritten)) ??
        (decoded.appended === undefined ? asSent(call.paramsText) : withAppended(asSent(call.paramsText), Array.isArray(call.params), decoded.appended));
      const result = await invokeMethod(spec, decoded.request, ctx, sent, decoded.leftToNode);
      return { result };
    }
    if (ctx.passesThrough(call.method)) {
      const family = methodFamily(call.method);
      if (family !== ctx.network.family) return { error: wrongFamily(call.method, family, ctx) };
      const result = await invokePassThrough(call.method, call.params, call.paramsText ?? "[]", !sentOnlyOnce(call.method), ctx);
      return { result };
    }
    return { error: methodNotFound(call.method) };
  } catch (err) {
    if (err instanceof GatewayError) return { error: err };
    if (ctx.signal.aborted) return { error: cancelled() };
    ctx.log.error({ err, method: call.method.slice(0, 64) }, "native call failed inside nodegate");
    return { error: internalError(err) };
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
