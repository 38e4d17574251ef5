/**
 * The typed front door: every service in the method table, served by Connect
 * (gRPC, gRPC-Web and the Connect protocol). A handler checks access, then
 * invokes the method (the same path the native door takes) and decodes the
 * node's result into the response message.
 */
import type { Message } from "@bufbuild/protobuf";
import { Code, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import type { Credentials } from "../auth/access-control.js";
import type { ApiKey } from "../auth/api-keys.js";
import { CodecError } from "../codec/codec-error.js";
import { decodeKeepingNumbers } from "../codec/exact-numbers.js";
import { decodeRespelling } from "../codec/lenient-result.js";
import { invalidParams, noNetworkOfFamily, repeatedMetadata, resultNotTypeable, upstreamBadResponse, wrongNetworkFamily } from "../errors/catalogue.js";
import type { Gateway } from "../gateway.js";
import { invokeMethod } from "../methods/invoke.js";
import type { ChainFamily, MethodSpec } from "../methods/method-table.js";
import { HELD_FROM_BYTES } from "../upstream/held-answers.js";
import type { Network } from "../upstream/network.js";
import { rescannedResult, resultJson, resultText, type UpstreamResult } from "../upstream/reply.js";
import { holdConnectAnswer } from "./connect-answer-hold.js";
import { handlerError } from "./errors.js";
import type { CallSignal } from "../call-signal.js";

/** Metadata header that carries the API key on gRPC and Connect calls. */
export const API_KEY_HEADER = "x-api-key";
/** Metadata header that names the network (default: the configured default network). */
export const NETWORK_HEADER = "x-nodegate-network";

/** Where a typed call's metadata is read from: Connect's Headers, or a raw HTTP/2 header block. */
export interface HeaderSource {
  get(name: string): string | null;
}

/**
 * One metadata value: gRPC allows a key to repeat, and HTTP joins repeats with ", " (an interceptor and the caller's own
 * code may both add x-api-key). Keys and network names hold no comma, so repeats of one value are that value; repeats
 * of different values are refused saying so (found from outside: two networks read as the unknown network
 * "ethereum, sepolia", two keys as an invalid one).
 */
function singleValue(headers: HeaderSource, name: string, refuseRepeats: (values: number) => Error): string | undefined {
  const v = headers.get(name);
  if (v === null || !v.includes(",")) return v ?? undefined;
  const parts = [...new Set(v.split(",").map((p) => p.trim()))];
  if (parts.length === 1) return parts[0];
  throw refuseRepeats(parts.length);
}

/** The network a typed call names in its metadata, if any. */
export function namedNetwork(gateway: Gateway, headers: HeaderSource): string | undefined {
  return singleValue(headers, NETWORK_HEADER, (values) =>
    repeatedMetadata(NETWORK_HEADER, values, Code.InvalidArgument, 400, `name one network (configured: ${gateway.networks().map((n) => n.name).join(", ")})`),
  );
}

export function credentialsFrom(headers: HeaderSource): Credentials {
  return {
    key: singleValue(headers, API_KEY_HEADER, (values) => repeatedMetadata(API_KEY_HEADER, values, Code.Unauthenticated, 401, "send one key")),
    keyHeader: API_KEY_HEADER,
    authorization: headers.get("authorization") ?? undefined,
    origin: headers.get("origin") ?? undefined,
    userAgent: headers.get("user-agent") ?? undefined,
  };
}

/** The network a typed call names (x-nodegate-network, else the default), which must serve `method`'s family. */
export function typedCallNetwork(gateway: Gateway, headers: HeaderSource, method: string, family: ChainFamily): Network {
  const network = gateway.network(namedNetwork(gateway, headers));
  if (network.family === family) return network;
  const home = gateway.homeNetwork(family)?.name;
  throw wrongNetworkFamily({
    method,
    methodFamily: family,
    network: network.name,
    networkFamily: network.family,
    fix: home === undefined ? noNetworkOfFamily(family) : `set the ${NETWORK_HEADER} header to "${home}"`,
  });
}

/**
 * A typed call up to the node's answer: access (key, per-key request quota,
 * rate limit), network, then the shared invoke path. Resolves with the raw
 * result; throws what toConnectError maps. Used by Connect and by the lean
 * unary lanes (gRPC, Connect) alike.
 */
/**
 * The key a typed call was made with, found again for an answer large enough to count in the reply budget
 * (HELD_FROM_BYTES), which each key may hold a share of: the call itself passed the same checks moments before.
 */
export function answerKey(gateway: Gateway, headers: HeaderSource): ApiKey {
  return gateway.access.authenticate(credentialsFrom(headers));
}

/**
 * `heldFor`: the key the caller already holds one of the key's requests for, taken when the call's headers came
 * (unary-call.ts): the call neither authenticates again nor takes another.
 */
export async function invokeTyped(gateway: Gateway, spec: MethodSpec, request: Message, headers: HeaderSource, signal: CallSignal, heldFor?: ApiKey): Promise<UpstreamResult> {
  const key = heldFor ?? gateway.access.authenticate(credentialsFrom(headers));
  const release = heldFor === undefined ? gateway.quotas.acquire(key, "requests") : undefined;
  try {
    await gateway.access.count(key, 1);
    const network = typedCallNetwork(gateway, headers, spec.jsonrpcMethod, spec.family);
    return await invokeMethod(spec, request, gateway.invokeContext(key, network, signal)).catch((err: unknown) => {
      if (err instanceof CodecError) throw invalidParams(`invalid ${spec.rpc.input.name}: ${err.message}`);
      throw err;
    });
  } finally {
    release?.();
  }
}

/**
 * The node's result as the response message (the object path, which words
 * every decoding error). A result that is not JSON at all (large ones arrive
 * unparsed, see reply.ts) is the node's fault, as on the native path.
 */
export function decodeResult(spec: MethodSpec, result: UpstreamResult): Message {
  let json: unknown;
  try {
    json = resultJson(result);
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    // A large result is taken unscanned to the reply's closing brace: a member the node put after it joins it.
    const rescanned = rescannedResult(result);
    if (rescanned === undefined) throw upstreamBadResponse(`the result is not valid JSON (${err.message})`, err);
    return decodeResult(spec, rescanned);
  }
  try {
    return decodeKeepingNumbers(json, () => resultText(result), (parsed) => decodeRespelling((value) => spec.result.decode(value), parsed));
  } catch (err) {
    if (err instanceof CodecError) throw resultNotTypeable(spec.jsonrpcMethod, err.message);
    throw err;
  }
}

async function handle(gateway: Gateway, spec: MethodSpec, request: Message, ctx: HandlerContext): Promise<Message> {
  try {
    const result = await invokeTyped(gateway, spec, request, ctx.requestHeader, ctx.signal);
    if (result.end - result.start >= HELD_FROM_BYTES) holdConnectAnswer(gateway, ctx, answerKey(gateway, ctx.requestHeader), result.end - result.start);
    return decodeResult(spec, result);
  } catch (err) {
    throw handlerError(err, ctx.signal);
  }
}

export function registerTypedServices(router: ConnectRouter, gateway: Gateway): void {
  for (const service of gateway.table.services()) {
    const impl: Record<string, (request: Message, ctx: HandlerContext) => Promise<Message>> = {};
    for (const rpc of service.methods) {
      const spec = gateway.table.byRpc(rpc);
      if (spec !== undefined) impl[rpc.localName] = (request, ctx) => handle(gateway, spec, request, ctx);
    }
    router.service(service, impl as never);
  }
}
