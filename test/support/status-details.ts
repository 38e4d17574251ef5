/**
 * Reads the JsonRpcError a gRPC status carries in grpc-status-details-bin
 * (a google.rpc.Status whose details are Any messages), as a grpc-js caller
 * sees it. connect-es callers use ConnectError.findDetails instead.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import type { ServiceError } from "@grpc/grpc-js";
import { type JsonRpcError, JsonRpcErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";

interface AnyDetail {
  typeUrl: string;
  value: Uint8Array;
}

/** The Any details of a serialized google.rpc.Status (field 3). */
function statusDetails(bytes: Uint8Array): AnyDetail[] {
  const details: AnyDetail[] = [];
  const status = new BinaryReader(bytes);
  while (status.pos < status.len) {
    const [field, wireType] = status.tag();
    if (field !== 3) {
      status.skip(wireType);
      continue;
    }
    const any = new BinaryReader(status.bytes());
    const detail: AnyDetail = { typeUrl: "", value: new Uint8Array(0) };
    while (any.pos < any.len) {
      const [f, w] = any.tag();
      if (f === 1) detail.typeUrl = any.string();
      else if (f === 2) detail.value = any.bytes();
      else any.skip(w);
    }
    details.push(detail);
  }
  return details;
}

/** The JsonRpcError detail of a grpc-js error, or undefined when it has none. */
export function jsonRpcErrorOf(err: ServiceError): JsonRpcError | undefined {
  const raw = err.metadata.get("grpc-status-details-bin")[0];
  if (raw === undefined) return undefined;
  const detail = statusDetails(raw as Buffer).find((d) => d.typeUrl.endsWith(`/${JsonRpcErrorSchema.typeName}`));
  return detail === undefined ? undefined : fromBinary(JsonRpcErrorSchema, detail.value);
}
