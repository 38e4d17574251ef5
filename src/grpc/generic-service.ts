/**
 * JsonRpcService.Call: the native path's semantics (typed table methods
 * validated, allowlisted methods passed through, results as the node wrote
 * them) for typed callers, with the typed path's auth and error statuses.
 */
import { create } from "@bufbuild/protobuf";
import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { type CallRequest, type CallResponse, CallResponseSchema, JsonRpcService } from "../../gen/nodegate/jsonrpc/v1/jsonrpc_service_pb.js";
import { holdsMoreJsonContainers, MAX_JSON_CONTAINERS } from "../codec/json-weight.js";
import { invalidParams, tooManyJsonContainers, upstreamBadResponse } from "../errors/catalogue.js";
import type { Gateway } from "../gateway.js";
import { nativeCallContext, runNativeCall } from "../jsonrpc/native-call.js";
import { resultAlone, resultText } from "../upstream/reply.js";
import { holdConnectAnswer } from "./connect-answer-hold.js";
import { handlerError } from "./errors.js";
import { credentialsFrom, namedNetwork, NETWORK_HEADER } from "./typed-services.js";

async function call(gateway: Gateway, request: CallRequest, ctx: HandlerContext): Promise<CallResponse> {
  let release: (() => void) | undefined;
  try {
    const key = gateway.access.authenticate(credentialsFrom(ctx.requestHeader));
    release = gateway.quotas.acquire(key, "requests");
    await gateway.access.count(key, 1);
    const network = gateway.network(namedNetwork(gateway, ctx.requestHeader));
    if (request.method === "") throw invalidParams("method is required");
    const paramsText = request.paramsJson.trim() === "" ? "[]" : request.paramsJson;
    if (paramsText.length > 2 * MAX_JSON_CONTAINERS && holdsMoreJsonContainers(Buffer.from(paramsText))) throw tooManyJsonContainers(MAX_JSON_CONTAINERS);
    let params: unknown;
    try {
      params = JSON.parse(paramsText);
    } catch {
      throw invalidParams("params_json is not valid JSON");
    }
    if (typeof params !== "object") throw invalidParams("params_json must be a JSON array or object");
    // "null" reads as no params, as on the native door (envelope.ts) and in geth.
    const call = params === null ? { id: "0", method: request.method, params: undefined, paramsText: undefined } : { id: "0", method: request.method, params, paramsText };
    const outcome = await runNativeCall(call, { ...nativeCallContext(gateway, key, network, ctx.signal), reachNetwork: (home) => `set the ${NETWORK_HEADER} header to "${home}"` });
    if (outcome.error !== undefined) throw outcome.error;
    holdConnectAnswer(gateway, ctx, key, outcome.result.end - outcome.result.start);
    const result = resultAlone(outcome.result);
    if (result === undefined) throw upstreamBadResponse("the result is not valid JSON");
    return create(CallResponseSchema, { resultJson: resultText(result) });
  } catch (err) {
    throw handlerError(err, ctx.signal);
  } finally {
    release?.();
  }
}

export function registerGenericService(router: ConnectRouter, gateway: Gateway): void {
  router.service(JsonRpcService, { call: (request, ctx) => call(gateway, request, ctx) });
}
