/**
 * The one path a call takes after its front door has read it: the key's
 * per-call allowlists, the method's policy, the network call (with failover),
 * and the node's errors restated where the seed says so (reverts). Both front
 * doors end here; they differ only in how they read params and write results.
 */
import type { Message } from "@bufbuild/protobuf";
import type { ApiKey } from "../auth/api-keys.js";
import type { AccessControl } from "../auth/access-control.js";
import type { Limits } from "../config/config.js";
import { invalidParams } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { asSpecRevert } from "../errors/revert.js";
import { duplicateMember } from "../jsonrpc/raw-json.js";
import type { Network } from "../upstream/network.js";
import type { UpstreamResult } from "../upstream/reply.js";
import { ADDRESS_FREE_PASS_THROUGH } from "./eth-methods.js";
import { STARKNET_ADDRESS_FREE_PASS_THROUGH } from "./starknet-methods.js";
import type { MethodSpec } from "./method-table.js";
import type { MethodPolicy } from "./policy.js";
import { MAX_KEYED_PARAMS } from "../cache/call-cache.js";
import type { CallSignal } from "../call-signal.js";

export interface InvokeContext {
  access: AccessControl;
  key: ApiKey;
  network: Network;
  limits: Limits;
  policies: ReadonlyMap<string, MethodPolicy>;
  signal: CallSignal;
}

function restate(err: unknown, policy: MethodPolicy | undefined, ctx: InvokeContext): unknown {
  if (!(err instanceof GatewayError)) return err;
  const restated = policy?.onError ? policy.onError(err, { limits: ctx.limits, head: ctx.network.head }) : err;
  // Reverts are Ethereum's: a Starknet node's errors (-32015 "Reverted 0x08c379a0…" included) go on as it sent them.
  return ctx.network.family === "eth" ? asSpecRevert(restated) : restated;
}

/**
 * The call to the node of one invoke; callers sharing one upstream call share its policy's check too. Made here rather
 * than as a named arrow function in the invoke: tsx (esbuild's keepNames) names each such function with
 * Object.defineProperty as it is made, once per call.
 */
function nodeFetch(
  ctx: InvokeContext,
  method: string,
  paramsText: string,
  idempotent: boolean,
  policy: MethodPolicy | undefined,
  policyCtx: { limits: Limits; head: Network["head"] },
): (signal: CallSignal, onSent?: () => void) => Promise<UpstreamResult> {
  return async (signal, onSent) => {
    const result = await ctx.network.call(method, paramsText, {
      signal,
      timeoutMs: policy?.timeoutMs?.(ctx.limits),
      idempotent,
      plan: ctx.key.plan,
      flow: ctx.key.label,
      onSent,
    });
    policy?.after?.(result, policyCtx);
    return result;
  };
}

/** -32602 naming the first key a params text holds twice in one object, and where: "invalid argument 0 (transaction)". */
function refuseDuplicateKeys(spec: MethodSpec, paramsText: string): void {
  const duplicate = duplicateMember(paramsText);
  if (duplicate === undefined) return;
  const [first, ...rest] = duplicate.path;
  const param = typeof first === "number" ? spec.params.names[first] : first;
  const where = [param ?? "params", ...rest.map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`))].join("");
  throw invalidParams(
    `invalid argument ${typeof first === "number" ? `${first} ` : ""}(${where}): duplicate key "${duplicate.key}": nodes differ on which of the two they read, so a key with a contract allowlist must send each key once`,
  );
}

/**
 * Calls a table method. `callerParams` is the caller's own params text (native
 * path), forwarded as sent unless a policy changed the request; then the
 * policy makes its change in that text (MethodPolicy.inText), or, when it
 * cannot, the request is encoded again, params the caller left to the node
 * (`leftToNode`) staying as it left them.
 */
export async function invokeMethod(
  spec: MethodSpec,
  request: Message,
  ctx: InvokeContext,
  callerParams?: string,
  leftToNode?: ReadonlySet<number>,
): Promise<UpstreamResult> {
  // The contract addresses matter only to a key with a contract allowlist; the rest skip writing them out.
  const addresses = ctx.key.allowlists?.contractAddresses?.length
    ? spec.addresses?.(request).map((a) => `0x${Buffer.from(a).toString("hex")}`)
    : undefined;
  // The contracts were read from the params as JSON.parse reads them, keeping the last of duplicate keys; the caller's
  // text goes on as sent, and a node whose JSON library keeps the first would run what was not checked. Refused, to such
  // a key only: one scan of the text, for the calls a contract allowlist judges.
  if (addresses !== undefined && callerParams !== undefined) refuseDuplicateKeys(spec, callerParams);
  ctx.access.checkCall(ctx.key, spec.jsonrpcMethod, addresses);
  const policy = ctx.policies.get(spec.jsonrpcMethod);
  const policyCtx = { limits: ctx.limits, head: ctx.network.head };
  // Encoding validates a typed request; do it before a policy may call the upstream.
  let sent = callerParams ?? spec.params.encode(request);
  try {
    if (policy?.before && (await policy.before(request, policyCtx))) {
      sent = (callerParams === undefined ? undefined : policy.inText?.(request, callerParams)) ?? spec.params.encode(request, leftToNode);
    }
  } catch (err) {
    throw restate(err, undefined, ctx);
  }
  const fetch = nodeFetch(ctx, spec.jsonrpcMethod, sent, spec.idempotent, policy, policyCtx);
  const cache = ctx.network.cache;
  try {
    if (cache === undefined || !spec.idempotent || sent.length > MAX_KEYED_PARAMS) return await fetch(ctx.signal);
    // Keyed by the params text the node is sent: calls share an upstream call or a stored answer only when the node
    // sees the same request, as its answer can depend on the spelling (eth_getProof echoes each storage key as sent;
    // a node may refuse 0x01 where it takes 0x1). Typed calls send one encoding, so they share with each other, and
    // with native calls that spell their params the same way.
    return await cache.call(spec.jsonrpcMethod, sent, cache.rule(spec.jsonrpcMethod, request), ctx.network.mayFailOver(spec.jsonrpcMethod, ctx.key.plan), fetch, ctx.signal, ctx.key.label);
  } catch (err) {
    throw restate(err, policy, ctx);
  }
}

/** Forwards a method outside the typed table (pass-through allowlist), params as sent (`params` as the front door parsed them), under its policy if it has one. */
export async function invokePassThrough(method: string, params: unknown, paramsText: string, idempotent: boolean, ctx: InvokeContext): Promise<UpstreamResult> {
  // Naming no contract it can be checked against, any other method fails a contract allowlist.
  const addressFree = ADDRESS_FREE_PASS_THROUGH.has(method) || STARKNET_ADDRESS_FREE_PASS_THROUGH.has(method);
  ctx.access.checkCall(ctx.key, method, addressFree ? undefined : []);
  const policy = ctx.policies.get(method);
  const policyCtx = { limits: ctx.limits, head: ctx.network.head };
  policy?.checkParams?.(params, policyCtx);
  const fetch = nodeFetch(ctx, method, paramsText, idempotent, policy, policyCtx);
  const cache = ctx.network.cache;
  try {
    if (cache === undefined || !idempotent) return await fetch(ctx.signal);
    return await cache.call(method, paramsText, undefined, ctx.network.mayFailOver(method, ctx.key.plan), fetch, ctx.signal, ctx.key.label);
  } catch (err) {
    throw restate(err, policy, ctx);
  }
}
