/**
 * The single mapping between JSON-RPC error codes and gRPC status codes.
 * Upstream errors are mapped by code (then by message rules); a gRPC status
 * that carries no JsonRpcError detail maps back by its code. The README's
 * error table is this table.
 */
import { Code } from "@connectrpc/connect";

/** A chain family's own codes share numbers with the other's (1: Ethereum's nonce too low, Starknet's FAILED_TO_RECEIVE_TXN). */
export type CodeFamily = "eth" | "starknet";

export interface CodeMapping {
  jsonrpc: number;
  grpc: Code;
  meaning: string;
  /** Only on networks of this family; unset: every network. */
  family?: CodeFamily;
}

/** JSON-RPC code -> gRPC code, for errors a node answers with. */
export const JSONRPC_TO_GRPC: readonly CodeMapping[] = [
  { jsonrpc: -32700, grpc: Code.InvalidArgument, meaning: "parse error" },
  { jsonrpc: -32600, grpc: Code.InvalidArgument, meaning: "invalid request" },
  { jsonrpc: -32601, grpc: Code.Unimplemented, meaning: "method not found" },
  { jsonrpc: -32602, grpc: Code.InvalidArgument, meaning: "invalid params" },
  { jsonrpc: -32603, grpc: Code.Internal, meaning: "internal error" },
  { jsonrpc: -32000, grpc: Code.Internal, meaning: "server error (unless its message says more: below)" },
  { jsonrpc: -32001, grpc: Code.NotFound, meaning: "resource not found" },
  { jsonrpc: -32002, grpc: Code.Unavailable, meaning: "resource unavailable" },
  { jsonrpc: -32003, grpc: Code.FailedPrecondition, meaning: "transaction rejected" },
  { jsonrpc: -32004, grpc: Code.Unimplemented, meaning: "method not supported" },
  { jsonrpc: -32005, grpc: Code.ResourceExhausted, meaning: "limit exceeded" },
  { jsonrpc: -32006, grpc: Code.InvalidArgument, meaning: "JSON-RPC version not supported" },
  { jsonrpc: 3, grpc: Code.FailedPrecondition, meaning: "execution reverted (data: revert bytes)" },
  { jsonrpc: 4444, grpc: Code.NotFound, meaning: "pruned history unavailable" },
  // execution-apis' error groups (src/error-groups: execution 1-199, gas 800-999, txpool 1000-1199; transaction
  // validation -38010..-38025), as geth answers eth_sendRawTransaction with them. A transaction the node refuses for its
  // own state is FAILED_PRECONDITION (never UNAVAILABLE: a client retries that, and the write would never succeed);
  // one malformed whatever the state is INVALID_ARGUMENT.
  { jsonrpc: 1, grpc: Code.FailedPrecondition, meaning: "nonce too low (Ethereum networks)", family: "eth" },
  { jsonrpc: 2, grpc: Code.FailedPrecondition, meaning: "nonce too high (Ethereum networks)", family: "eth" },
  { jsonrpc: 4, grpc: Code.FailedPrecondition, meaning: "invalid opcode (Ethereum networks)", family: "eth" },
  { jsonrpc: 800, grpc: Code.InvalidArgument, meaning: "intrinsic gas too low / exceeds the gas limit" },
  { jsonrpc: 801, grpc: Code.FailedPrecondition, meaning: "transaction ran out of gas" },
  { jsonrpc: 802, grpc: Code.FailedPrecondition, meaning: "gas price below the node's minimum" },
  { jsonrpc: 803, grpc: Code.FailedPrecondition, meaning: "gas limit exceeds the block gas limit" },
  { jsonrpc: 804, grpc: Code.InvalidArgument, meaning: "max priority fee per gas higher than max fee per gas" },
  { jsonrpc: 805, grpc: Code.InvalidArgument, meaning: "gas uint64 overflow" },
  { jsonrpc: 806, grpc: Code.FailedPrecondition, meaning: "max fee per gas less than the block base fee" },
  { jsonrpc: 807, grpc: Code.InvalidArgument, meaning: "max priority fee per gas higher than 2^256-1" },
  { jsonrpc: 808, grpc: Code.InvalidArgument, meaning: "max fee per gas higher than 2^256-1" },
  { jsonrpc: 809, grpc: Code.FailedPrecondition, meaning: "insufficient funds for gas * price + value" },
  { jsonrpc: 1000, grpc: Code.AlreadyExists, meaning: "transaction already known" },
  { jsonrpc: 1001, grpc: Code.InvalidArgument, meaning: "invalid sender" },
  { jsonrpc: 1002, grpc: Code.FailedPrecondition, meaning: "replacement transaction underpriced" },
  { jsonrpc: -38010, grpc: Code.FailedPrecondition, meaning: "nonce too low (eth_simulateV1)" },
  { jsonrpc: -38011, grpc: Code.FailedPrecondition, meaning: "nonce too high (eth_simulateV1)" },
  { jsonrpc: -38012, grpc: Code.FailedPrecondition, meaning: "max fee per gas less than block base fee (eth_simulateV1)" },
  { jsonrpc: -38013, grpc: Code.InvalidArgument, meaning: "intrinsic gas too low (eth_simulateV1)" },
  { jsonrpc: -38014, grpc: Code.FailedPrecondition, meaning: "insufficient funds (eth_simulateV1)" },
  { jsonrpc: -38015, grpc: Code.FailedPrecondition, meaning: "block gas limit exceeded (eth_simulateV1)" },
  { jsonrpc: -38024, grpc: Code.FailedPrecondition, meaning: "sender is not an EOA (eth_simulateV1)" },
  { jsonrpc: -38025, grpc: Code.InvalidArgument, meaning: "max init code size exceeded (eth_simulateV1)" },
  { jsonrpc: 1, grpc: Code.Unavailable, meaning: "Starknet FAILED_TO_RECEIVE_TXN (Starknet networks)", family: "starknet" },
  { jsonrpc: 10, grpc: Code.FailedPrecondition, meaning: "Starknet NO_TRACE_AVAILABLE" },
  { jsonrpc: 20, grpc: Code.NotFound, meaning: "Starknet CONTRACT_NOT_FOUND" },
  { jsonrpc: 21, grpc: Code.NotFound, meaning: "Starknet ENTRYPOINT_NOT_FOUND" },
  // Older spec versions' codes, which juno, madara and pathfinder still send for bad input.
  { jsonrpc: 22, grpc: Code.InvalidArgument, meaning: "Starknet INVALID_CALL_DATA (older specs)", family: "starknet" },
  { jsonrpc: 23, grpc: Code.InvalidArgument, meaning: "Starknet INVALID_BLOCK_HASH (older specs)", family: "starknet" },
  { jsonrpc: 24, grpc: Code.NotFound, meaning: "Starknet BLOCK_NOT_FOUND" },
  { jsonrpc: 25, grpc: Code.InvalidArgument, meaning: "Starknet INVALID_TXN_HASH (older specs; juno)", family: "starknet" },
  { jsonrpc: 26, grpc: Code.InvalidArgument, meaning: "Starknet INVALID_BLOCK_HASH (older specs; juno)", family: "starknet" },
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
  { jsonrpc: 50, grpc: Code.InvalidArgument, meaning: "Starknet INVALID_CONTRACT_CLASS (older specs)", family: "starknet" },
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

const byFamily: Record<CodeFamily, Map<number, Code>> = {
  eth: new Map(JSONRPC_TO_GRPC.filter((m) => m.family !== "starknet").map((m) => [m.jsonrpc, m.grpc])),
  starknet: new Map(JSONRPC_TO_GRPC.filter((m) => m.family !== "eth").map((m) => [m.jsonrpc, m.grpc])),
};

/** The gRPC code for a JSON-RPC error code a node of `family` returned; Unknown when unmapped. */
export function grpcCodeForJsonRpc(code: number, family: CodeFamily = "eth"): Code {
  return byFamily[family].get(code) ?? Code.Unknown;
}

export interface ServerErrorRule {
  /** The node's code the rule reads the message of; unset: geth's generic -32000. */
  code?: number;
  /** How the node's message starts (compared in lower case). */
  prefixes: readonly string[];
  grpc: Code;
  meaning: string;
}

/**
 * geth (and so Infura and most providers) answers most failures with -32000
 * and says which in the message, often followed by details ("nonce too low:
 * address 0x…, tx: 5 state: 7"). Read by its code alone every one would be
 * INTERNAL, which tells a typed caller nothing it can act on: a missing block
 * or a refused transaction is no server fault. These rules, first match wins,
 * give the status the message means (geth's own texts: core/error.go,
 * core/txpool/errors.go, internal/ethapi). The JsonRpcError detail still
 * carries the node's code and message, and the native door is unchanged.
 */
export const SERVER_ERROR_RULES: readonly ServerErrorRule[] = [
  { prefixes: ["header not found", "unknown block", "block not found"], grpc: Code.NotFound, meaning: "the block is not known to the node" },
  { prefixes: ["missing trie node", "historical state "], grpc: Code.NotFound, meaning: "the state asked for is pruned" },
  { prefixes: ["filter not found"], grpc: Code.NotFound, meaning: "the filter is not known to the node" },
  { prefixes: ["already known", "known transaction"], grpc: Code.AlreadyExists, meaning: "the transaction is in the pool already" },
  // Anvil's words for the same, under EIP-1474's "transaction rejected" (found from outside, h84: FAILED_PRECONDITION
  // there, ALREADY_EXISTS on geth, so a typed caller could not tell a resend from a refusal by the node it met).
  { code: -32003, prefixes: ["transaction already imported"], grpc: Code.AlreadyExists, meaning: "the transaction is in the pool already (Anvil's words)" },
  {
    prefixes: [
      "invalid sender",
      "intrinsic gas too low",
      // Anvil's (revm's) words for a gas limit below the call's intrinsic cost, or below EIP-7623's floor.
      "intrinsic gas too high -- callgascostmorethangaslimit",
      "intrinsic gas too high -- gasfloormorethangaslimit",
      // geth's words for a gas limit below EIP-7623's floor (core.ErrFloorDataGas).
      "insufficient gas for floor data gas cost",
      "oversized data",
      "transaction type not supported",
      "max priority fee per gas higher than max fee per gas",
      "max priority fee per gas higher than 2^256-1",
      "max fee per gas higher than 2^256-1",
      "max initcode size exceeded",
      "gas uint64 overflow",
      "negative value",
      "rlp: ",
      "typed transaction too short",
      "invalid transaction v, r, s values",
      // geth's checks of a call's or transaction's arguments (internal/ethapi/transaction_args.go), before any state
      // is read: the same arguments fail again (found from outside, execution-apis' fork-inactive cases: INTERNAL).
      "maxfeepergas and maxpriorityfeepergas are not valid before london is active",
      "both gasprice and (maxfeepergas or maxpriorityfeepergas) specified",
      "maxfeepergas (",
      "gasprice must be non-zero after london fork",
      'both "data" and "input" are set',
    ],
    grpc: Code.InvalidArgument,
    meaning: "the transaction is malformed, whatever the state",
  },
  {
    prefixes: [
      "nonce too low",
      "nonce too high",
      "nonce has max value",
      "insufficient funds",
      "replacement transaction underpriced",
      "transaction underpriced",
      "max fee per gas less than block base fee",
      "exceeds block gas limit",
      // Anvil's and reth's words for it (any detail but the one above).
      "intrinsic gas too high",
      "gas required exceeds allowance",
      "account limit exceeded",
      "future transaction tries to replace pending",
      "sender not an eoa",
      "only replay-protected",
    ],
    grpc: Code.FailedPrecondition,
    meaning: "refused for the chain's or the pool's state",
  },
  { prefixes: ["txpool is full", "in-flight transaction limit reached"], grpc: Code.ResourceExhausted, meaning: "the node's pool is full: try later" },
  // The call's own failure, as a revert (code 3) is: no fault of the node's or nodegate's, and the same call fails
  // again (geth's core/vm/errors.go; an older node's revert without data).
  {
    prefixes: [
      "execution reverted",
      "out of gas",
      "contract creation code storage out of gas",
      "invalid opcode",
      "invalid jump destination",
      "stack underflow",
      "stack limit reached",
      "write protection",
      "return data out of bounds",
      "max call depth exceeded",
      "insufficient balance for transfer",
      "contract address collision",
      "max code size exceeded",
      "invalid code: must not begin with 0xef",
    ],
    grpc: Code.FailedPrecondition,
    meaning: "the call failed in the EVM",
  },
  // Anvil answers a call that halts (out of gas, say) with -32603 "EVM error <revm's halt reason>" (found from
  // outside: an eth_call out of gas was INTERNAL on the typed door, as if the node or nodegate had failed).
  {
    code: -32603,
    prefixes: [
      "evm error outofgas",
      "evm error memoryoog",
      "evm error memorylimitoog",
      "evm error precompileoog",
      "evm error invalidoperandoog",
      "evm error opcodenotfound",
      "evm error invalidfeopcode",
      "evm error invalidjump",
      "evm error stackunderflow",
      "evm error stackoverflow",
      "evm error calltoodeep",
      "evm error outoffunds",
      "evm error statechangeduringstaticcall",
      "evm error callnotallowedinsidestatic",
      "evm error outofoffset",
      "evm error createcollision",
      "evm error nonceoverflow",
      "evm error createcontractsizelimit",
      "evm error createcontractstartingwithef",
      "evm error createinitcodesizelimit",
      // A precompile refusing its input (a bad curve point, a wrong length), an opcode the chain's fork has not
      // activated (PUSH0 before Shanghai), and an SSTORE with no more than EIP-2200's 2,300 gas left: the call's own
      // failure too (found from outside: all three were INTERNAL).
      "evm error precompileerror",
      "evm error notactivated",
      "evm error reentrancysentryoog",
      // The rest of revm's halting InstructionResult names (EOF and payment ones); FatalExternalError is left out:
      // that is the node's own state failing, not the call.
      "evm error overflowpayment",
      "evm error createinitcodestartingef00",
      "evm error invalideofinitcode",
      "evm error invalidextdelegatecalltarget",
      "evm error invalidextcalltarget",
      "evm error eofopcodedisabledinlegacy",
      "evm error subroutinestackoverflow",
      "evm error eoffunctionstackoverflow",
      "evm error returncontractinnonreturningeof",
    ],
    grpc: Code.FailedPrecondition,
    meaning: "the call failed in the EVM (Anvil's words)",
  },
];

/**
 * What geth writes before the failure's own text when it cannot run a call: eth_call's "err: <failure> (supplied gas
 * N)" and eth_estimateGas's "failed with N gas: <failure>" (internal/ethapi, eth/gasestimator). Read past, so
 * "err: insufficient funds for gas * price + value: …" is read as "insufficient funds" is (found from outside, the
 * execution-apis fork-inactive cases: INTERNAL, as if the node had failed).
 */
const GETH_CALL_WRAPPER = /^(?:err: |failed with \d+ gas: )/;

/**
 * The gRPC code for an error a node answered: by its code, and for geth's
 * generic -32000 (and Anvil's -32603 EVM halts and -32003 resend) by its message (SERVER_ERROR_RULES).
 */
export function grpcCodeForNodeError(code: number, message: string, family: CodeFamily = "eth"): Code {
  if (code === -32000 || code === -32603 || code === -32003) {
    const lower = message.toLowerCase();
    const unwrapped = code === -32000 ? lower.replace(GETH_CALL_WRAPPER, "") : lower;
    for (const rule of SERVER_ERROR_RULES) if ((rule.code ?? -32000) === code && rule.prefixes.some((p) => unwrapped.startsWith(p))) return rule.grpc;
  }
  return grpcCodeForJsonRpc(code, family);
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
