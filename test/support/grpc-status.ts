/**
 * Reads the JsonRpcError nodegate puts in a gRPC status's details
 * (grpc-status-details-bin: a google.rpc.Status whose details are Anys),
 * as a grpc-js caller would.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import type * as grpc from "@grpc/grpc-js";
import { type JsonRpcError, JsonRpcErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";

export function jsonRpcErrorOf(err: grpc.ServiceError): JsonRpcError | undefined {
  const bin = err.metadata?.get("grpc-status-details-bin")[0];
  if (!(bin instanceof Buffer)) return undefined;
  const status = new BinaryReader(bin);
  while (status.pos < status.len) {
    const [field, wireType] = status.tag();
    if (field !== 3) {
      status.skip(wireType);
      continue;
    }
    const any = new BinaryReader(status.bytes());
    let typeUrl = "";
    let value: Uint8Array | undefined;
    while (any.pos < any.len) {
      const [f, wt] = any.tag();
      if (f === 1) typeUrl = any.string();
      else if (f === 2) value = any.bytes();
      else any.skip(wt);
    }
    if (typeUrl.endsWith(`/${JsonRpcErrorSchema.typeName}`) && value) return fromBinary(JsonRpcErrorSchema, value);
  }
  return undefined;
}
