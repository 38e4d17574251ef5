/**
 * Reads the JSON-RPC error nodegate puts in a gRPC status, the way a
 * grpc-js caller has to: the grpc-status-details-bin trailer holds a
 * google.rpc.Status whose details are Any messages. google.rpc.Status is
 * not vendored, so its three fields are read with the wire reader.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { ConnectError } from "@connectrpc/connect";
import type { ServiceError } from "@grpc/grpc-js";
import { type JsonRpcError, JsonRpcErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";

/** google.protobuf.Any */
export interface AnyMessage {
  typeUrl: string;
  value: Uint8Array;
}

/** google.rpc.Status */
export interface RpcStatus {
  code: number;
  message: string;
  details: AnyMessage[];
}

function decodeAny(bytes: Uint8Array): AnyMessage {
  const reader = new BinaryReader(bytes);
  const any: AnyMessage = { typeUrl: "", value: new Uint8Array(0) };
  while (reader.pos < reader.len) {
    const [fieldNo, wireType] = reader.tag();
    if (fieldNo === 1) any.typeUrl = reader.string();
    else if (fieldNo === 2) any.value = reader.bytes();
    else reader.skip(wireType, fieldNo);
  }
  return any;
}

/** Decodes a serialized google.rpc.Status. */
export function decodeRpcStatus(bytes: Uint8Array): RpcStatus {
  const reader = new BinaryReader(bytes);
  const status: RpcStatus = { code: 0, message: "", details: [] };
  while (reader.pos < reader.len) {
    const [fieldNo, wireType] = reader.tag();
    if (fieldNo === 1) status.code = reader.int32();
    else if (fieldNo === 2) status.message = reader.string();
    else if (fieldNo === 3) status.details.push(decodeAny(reader.bytes()));
    else reader.skip(wireType, fieldNo);
  }
  return status;
}

const JSON_RPC_ERROR_TYPE_URL = `type.googleapis.com/${JsonRpcErrorSchema.typeName}`;

/** The google.rpc.Status a grpc-js error carries in its trailers (undefined when none). */
export function rpcStatusOf(err: ServiceError): RpcStatus | undefined {
  const [bin] = err.metadata.get("grpc-status-details-bin");
  if (bin === undefined) return undefined;
  if (typeof bin === "string") throw new Error("grpc-status-details-bin arrived as text");
  return decodeRpcStatus(bin);
}

/** The JsonRpcError detail of a grpc-js error; throws when the status carries none. */
export function jsonRpcErrorOfGrpc(err: ServiceError): JsonRpcError {
  const status = rpcStatusOf(err);
  if (status === undefined) throw new Error(`status ${err.code} "${err.details}" has no grpc-status-details-bin`);
  if (status.code !== err.code) throw new Error(`details say code ${status.code}, the status says ${err.code}`);
  const detail = status.details.find((d) => d.typeUrl === JSON_RPC_ERROR_TYPE_URL);
  if (detail === undefined) throw new Error(`no JsonRpcError among ${status.details.map((d) => d.typeUrl).join(", ")}`);
  return fromBinary(JsonRpcErrorSchema, detail.value);
}

/** The JsonRpcError detail of a connect-es error; throws when there is none (or several). */
export function jsonRpcErrorOfConnect(err: ConnectError): JsonRpcError {
  const details = err.findDetails(JsonRpcErrorSchema);
  if (details.length !== 1) throw new Error(`want one JsonRpcError detail, got ${details.length}`);
  return details[0] as JsonRpcError;
}

/** Resolves with the error a promise rejects with; fails when it resolves. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected the call to fail, but it succeeded");
}

/** The grpc-js ServiceError a call rejects with. */
export async function grpcErrorOf(promise: Promise<unknown>): Promise<ServiceError> {
  const err = await rejectionOf(promise);
  if (!(err instanceof Error) || typeof (err as Partial<ServiceError>).code !== "number") throw err;
  return err as ServiceError;
}

/** The ConnectError a call rejects with. */
export async function connectErrorOf(promise: Promise<unknown>): Promise<ConnectError> {
  const err = await rejectionOf(promise);
  if (!(err instanceof ConnectError)) throw err;
  return err;
}
