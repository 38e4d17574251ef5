/**
 * The typed front door: every service in the method table, served by Connect
 * (gRPC, gRPC-Web and the Connect protocol). A handler encodes the request
 * into JSON-RPC params, calls the network, and decodes the result.
 */
import { create, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { JsonRpcErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { CodecError } from "../codec/codec-error.js";
import { resultNotTypeable } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import type { Gateway } from "../gateway.js";
import type { MethodSpec } from "../methods/method-table.js";
import { resultJson } from "../upstream/reply.js";

/** Metadata header that carries the API key on gRPC and Connect calls. */
export const API_KEY_HEADER = "x-api-key";
/** Metadata header that names the network (default: the configured default network). */
export const NETWORK_HEADER = "x-nodegate-network";

/** A GatewayError as a Connect error whose details carry the JSON-RPC error losslessly. */
export function toConnectError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  if (err instanceof GatewayError) {
    const detail = create(JsonRpcErrorSchema, {
      code: BigInt(err.code),
      message: err.message,
      ...(err.data === undefined ? {} : { data: err.data }),
    });
    return new ConnectError(err.message, err.grpcCode, undefined, [{ desc: JsonRpcErrorSchema, value: detail }], err);
  }
  return new ConnectError("internal error", Code.Internal, undefined, undefined, err);
}

async function invoke(gateway: Gateway, spec: MethodSpec, request: Message, ctx: HandlerContext): Promise<Message> {
  try {
    gateway.authenticate(ctx.requestHeader.get(API_KEY_HEADER) ?? undefined);
    const network = gateway.network(ctx.requestHeader.get(NETWORK_HEADER) ?? undefined);
    if (network.family !== spec.family) {
      throw new ConnectError(`${spec.jsonrpcMethod} is not served on network ${network.name} (a ${network.family} network)`, Code.InvalidArgument);
    }
    let paramsText: string;
    try {
      paramsText = spec.params.encode(request);
    } catch (err) {
      if (err instanceof CodecError) throw new ConnectError(`invalid ${spec.rpc.input.name}: ${err.message}`, Code.InvalidArgument);
      throw err;
    }
    const result = await network.call(spec.jsonrpcMethod, paramsText, { signal: ctx.signal, idempotent: spec.idempotent });
    try {
      return spec.result.decode(resultJson(result));
    } catch (err) {
      if (err instanceof CodecError || err instanceof SyntaxError) throw resultNotTypeable(spec.jsonrpcMethod, err.message);
      throw err;
    }
  } catch (err) {
    throw toConnectError(err);
  }
}

export function registerTypedServices(router: ConnectRouter, gateway: Gateway): void {
  for (const service of gateway.table.services()) {
    const impl: Record<string, (request: Message, ctx: HandlerContext) => Promise<Message>> = {};
    for (const rpc of service.methods) {
      const spec = gateway.table.byRpc(rpc);
      if (spec !== undefined) impl[rpc.localName] = (request, ctx) => invoke(gateway, spec, request, ctx);
    }
    router.service(service, impl as never);
  }
}
