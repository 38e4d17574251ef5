/**
 * GatewayError <-> gRPC status. A status nodegate sends carries the JSON-RPC
 * error losslessly in its details (plus the revert bytes and reason for code 3,
 * and RetryInfo for rate limits), so it maps back to the same JSON-RPC error.
 */
import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { JsonRpcErrorSchema, RevertErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { jsonRpcCodeForGrpc } from "../errors/code-map.js";
import { GatewayError, type JsonRpcErrorObject } from "../errors/gateway-error.js";
import { revertData, revertReason } from "../errors/revert.js";

type Detail = NonNullable<ConstructorParameters<typeof ConnectError>[3]>[number];

/**
 * A GatewayError as a Connect error whose details carry the JSON-RPC error
 * losslessly (plus the revert bytes and reason for code 3, and RetryInfo for
 * rate limits).
 */
export function toConnectError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  if (err instanceof GatewayError) {
    const details: Detail[] = [
      {
        desc: JsonRpcErrorSchema,
        value: create(JsonRpcErrorSchema, {
          code: BigInt(err.code),
          message: err.message,
          ...(err.data === undefined ? {} : { data: err.data }),
          // `,"k":v` each (GatewayError.otherMembers): one object's text.
          ...(err.otherMembers === undefined ? {} : { otherMembers: `{${err.otherMembers.slice(1)}}` }),
        }),
      },
    ];
    const data = revertData(err);
    if (data !== undefined) {
      // Only with the bytes known: an empty RevertError would say "reverted with no data".
      const reason = revertReason(err, data);
      details.push({ desc: RevertErrorSchema, value: create(RevertErrorSchema, { data, ...(reason === undefined ? {} : { reason }) }) });
    }
    if (err.retryAfterSeconds === undefined) return new ConnectError(err.message, err.grpcCode, undefined, details, err);
    details.push({ desc: RetryInfoSchema, value: create(RetryInfoSchema, { retryDelay: durationFromMs(err.retryAfterSeconds * 1000) }) });
    // Also in the header HTTP clients and proxies read, where the protocol answers errors in HTTP terms (Connect's
    // 429 and 503, GET and compressed POST included); a gRPC status carries it as metadata beside RetryInfo.
    return new ConnectError(err.message, err.grpcCode, { "retry-after": String(Math.ceil(err.retryAfterSeconds)) }, details, err);
  }
  return new ConnectError("internal error", Code.Internal, undefined, undefined, err);
}


/**
 * What a handler run by Connect throws once its call was ended from outside:
 * Connect's own abort when it ended the call (its deadline passed), and
 * CANCELED when the client went away, rather than whatever the interrupted
 * work threw (an upstream call's "cancelled", an abort error: INTERNAL).
 */
export function handlerError(err: unknown, signal: AbortSignal): ConnectError {
  if (signal.aborted) return signal.reason instanceof ConnectError ? signal.reason : new ConnectError("the client cancelled the call", Code.Canceled);
  return toConnectError(err);
}

/** The JSON-RPC error a gRPC status stands for: its JsonRpcError detail, else its code through the table. */
export function fromConnectError(err: ConnectError): JsonRpcErrorObject {
  const [detail] = err.findDetails(JsonRpcErrorSchema);
  if (detail !== undefined) {
    return { code: Number(detail.code), message: detail.message, ...(detail.data === undefined ? {} : { data: detail.data }) };
  }
  return { code: jsonRpcCodeForGrpc(err.code), message: err.rawMessage };
}
