/**
 * The single mapping between JSON-RPC error codes and gRPC status codes.
 * Upstream errors are mapped by code (then by message rules); a gRPC status
 * that carries no JsonRpcError detail maps back by its code. The README's
 * error table is this table.
 */
import { Code } from "@connectrpc/connect";

export interface CodeMapping {
  jsonrpc: number;
  grpc: Code;
  meaning: string;
}

/** JSON-RPC code -> gRPC code, for errors a node answers with. */
export const JSONRPC_TO_GRPC: readonly CodeMapping[] = [
  { jsonrpc: -32700, grpc: Code.InvalidArgument, meaning: "parse error" },
  { jsonrpc: -32600, grpc: Code.InvalidArgument, meaning: "invalid request" },
  { jsonrpc: -32601, grpc: Code.Unimplemented, meaning: "method not found" },
  { jsonrpc: -32602, grpc: Code.InvalidArgument, meaning: "invalid params" },
  { jsonrpc: -32603, grpc: Code.Internal, meaning: "internal error" },
  { jsonrpc: -32000, grpc: Code.Internal, meaning: "server error (geth: invalid input, header not found, ...)" },
  { jsonrpc: -32001, grpc: Code.NotFound, meaning: "resource not found" },
  { jsonrpc: -32002, grpc: Code.Unavailable, meaning: "resource unavailable" },
  { jsonrpc: -32003, grpc: Code.FailedPrecondition, meaning: "transaction rejected" },
  { jsonrpc: -32004, grpc: Code.Unimplemented, meaning: "method not supported" },
  { jsonrpc: -32005, grpc: Code.ResourceExhausted, meaning: "limit exceeded" },
  { jsonrpc: -32006, grpc: Code.InvalidArgument, meaning: "JSON-RPC version not supported" },
  { jsonrpc: 3, grpc: Code.FailedPrecondition, meaning: "execution reverted (data: revert bytes)" },
  { jsonrpc: 4444, grpc: Code.NotFound, meaning: "pruned history unavailable" },
  { jsonrpc: 1, grpc: Code.Unavailable, meaning: "Starknet FAILED_TO_RECEIVE_TXN" },
  { jsonrpc: 10, grpc: Code.FailedPrecondition, meaning: "Starknet NO_TRACE_AVAILABLE" },
  { jsonrpc: 20, grpc: Code.NotFound, meaning: "Starknet CONTRACT_NOT_FOUND" },
  { jsonrpc: 21, grpc: Code.NotFound, meaning: "Starknet ENTRYPOINT_NOT_FOUND" },
  { jsonrpc: 24, grpc: Code.NotFound, meaning: "Starknet BLOCK_NOT_FOUND" },
  { jsonrpc: 27, grpc: Code.InvalidArgument, meaning: "Starknet INVALID_TXN_INDEX" },
  { jsonrpc: 28, grpc: Code.NotFound, meaning: "Starknet CLASS_HASH_NOT_FOUND" },
  { jsonrpc: 29, grpc: Code.NotFound, meaning: "Starknet TXN_HASH_NOT_FOUND" },
  { jsonrpc: 31, grpc: Code.InvalidArgument, meaning: "Starknet PAGE_SIZE_TOO_BIG" },
  { jsonrpc: 32, grpc: Code.NotFound, meaning: "Starknet NO_BLOCKS" },
  { jsonrpc: 33, grpc: Code.InvalidArgument, meaning: "Starknet INVALID_CONTINUATION_TOKEN" },
  { jsonrpc: 34, grpc: Code.InvalidArgument, meaning: "Starknet TOO_MANY_KEYS_IN_FILTER" },
  { jsonrpc: 40, grpc: Code.FailedPrecondition, meaning: "Starknet CONTRACT_ERROR" },
  { jsonrpc: 41, grpc: Code.FailedPrecondition, meaning: "Starknet TRANSACTION_EXECUTION_ERROR" },
  { jsonrpc: 42, grpc: Code.Unimplemented, meaning: "Starknet STORAGE_PROOF_NOT_SUPPORTED" },
  // The write API's (for addInvokeTransaction and the like on pass-through) and the subscription API's.
  { jsonrpc: 51, grpc: Code.AlreadyExists, meaning: "Starknet CLASS_ALREADY_DECLARED" },
  { jsonrpc: 52, grpc: Code.FailedPrecondition, meaning: "Starknet INVALID_TRANSACTION_NONCE" },
  { jsonrpc: 53, grpc: Code.FailedPrecondition, meaning: "Starknet INSUFFICIENT_RESOURCES_FOR_VALIDATE" },
  { jsonrpc: 54, grpc: Code.FailedPrecondition, meaning: "Starknet INSUFFICIENT_ACCOUNT_BALANCE" },
  { jsonrpc: 55, grpc: Code.FailedPrecondition, meaning: "Starknet VALIDATION_FAILURE" },
  { jsonrpc: 56, grpc: Code.InvalidArgument, meaning: "Starknet COMPILATION_FAILED" },
  { jsonrpc: 57, grpc: Code.InvalidArgument, meaning: "Starknet CONTRACT_CLASS_SIZE_IS_TOO_LARGE" },
  { jsonrpc: 58, grpc: Code.InvalidArgument, meaning: "Starknet NON_ACCOUNT" },
  { jsonrpc: 59, grpc: Code.AlreadyExists, meaning: "Starknet DUPLICATE_TX" },
  { jsonrpc: 60, grpc: Code.InvalidArgument, meaning: "Starknet COMPILED_CLASS_HASH_MISMATCH" },
  { jsonrpc: 61, grpc: Code.InvalidArgument, meaning: "Starknet UNSUPPORTED_TX_VERSION" },
  { jsonrpc: 62, grpc: Code.InvalidArgument, meaning: "Starknet UNSUPPORTED_CONTRACT_CLASS_VERSION" },
  { jsonrpc: 63, grpc: Code.Internal, meaning: "Starknet UNEXPECTED_ERROR" },
  { jsonrpc: 64, grpc: Code.FailedPrecondition, meaning: "Starknet REPLACEMENT_TRANSACTION_UNDERPRICED" },
  { jsonrpc: 65, grpc: Code.FailedPrecondition, meaning: "Starknet FEE_BELOW_MINIMUM" },
  { jsonrpc: 66, grpc: Code.InvalidArgument, meaning: "Starknet INVALID_SUBSCRIPTION_ID" },
  { jsonrpc: 67, grpc: Code.InvalidArgument, meaning: "Starknet TOO_MANY_ADDRESSES_IN_FILTER" },
  { jsonrpc: 68, grpc: Code.InvalidArgument, meaning: "Starknet TOO_MANY_BLOCKS_BACK" },
];

const byJsonRpc = new Map(JSONRPC_TO_GRPC.map((m) => [m.jsonrpc, m.grpc]));

/** The gRPC code for a JSON-RPC error code a node returned; Unknown when unmapped. */
export function grpcCodeForJsonRpc(code: number): Code {
  return byJsonRpc.get(code) ?? Code.Unknown;
}

/**
 * gRPC code -> JSON-RPC code, for a status that carries no JsonRpcError
 * detail (every status nodegate produces carries one, so this is the
 * fallback for foreign statuses).
 */
export const GRPC_TO_JSONRPC: ReadonlyMap<Code, number> = new Map([
  [Code.InvalidArgument, -32602],
  [Code.Unimplemented, -32601],
  [Code.NotFound, -32001],
  [Code.FailedPrecondition, -32000],
  [Code.ResourceExhausted, -32005],
  [Code.Unavailable, -32002],
  [Code.Internal, -32603],
  [Code.Unknown, -32603],
]);

export function jsonRpcCodeForGrpc(code: Code): number {
  return GRPC_TO_JSONRPC.get(code) ?? -32603;
}
