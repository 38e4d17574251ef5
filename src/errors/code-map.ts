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
  // Codes other nodes and providers give outside EIP-1474's table (found from outside, h87: each was UNKNOWN): Besu's
  // (RpcErrorType.java), Nethermind's (ErrorCodes.cs), and a provider's HTTP status written as the code.
  { jsonrpc: -32007, grpc: Code.PermissionDenied, meaning: "sender account not authorized to send transactions (Besu)" },
  { jsonrpc: -32008, grpc: Code.Unavailable, meaning: "initial sync is still in progress (Besu)" },
  { jsonrpc: -32009, grpc: Code.FailedPrecondition, meaning: "gas price below the node's minimum or the base fee (Besu)" },
  { jsonrpc: -32010, grpc: Code.FailedPrecondition, meaning: "transaction rejected (Nethermind; unless its message says more: below)" },
  { jsonrpc: -32015, grpc: Code.FailedPrecondition, meaning: "VM execution error (Nethermind)" },
  { jsonrpc: -32016, grpc: Code.DeadlineExceeded, meaning: "the request ran past the node's own time limit (Nethermind)" },
  { jsonrpc: -32017, grpc: Code.DeadlineExceeded, meaning: "the module ran past the node's own time limit (Nethermind)" },
  { jsonrpc: -32604, grpc: Code.Unimplemented, meaning: "method not enabled (Besu)" },
  { jsonrpc: -39001, grpc: Code.NotFound, meaning: "unknown block (Besu, Nethermind)" },
  { jsonrpc: 429, grpc: Code.ResourceExhausted, meaning: "rate limited (a provider's HTTP 429 as the code, as Alchemy answers over WebSocket)" },
  { jsonrpc: 402, grpc: Code.ResourceExhausted, meaning: "payment required: the plan's quota is spent (Infura)" },
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

/**
 * The codes under which nodes say in the message which failure it was: geth's (and so most providers') generic
 * -32000, EIP-1474's -32003 "transaction rejected" (reth, Anvil) and Nethermind's -32010 "transaction rejected".
 */
export const MESSAGE_CODES: readonly number[] = [-32000, -32003, -32010];

export interface ServerErrorRule {
  /** The node codes whose messages the rule reads; unset: MESSAGE_CODES. */
  codes?: readonly number[];
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
 * core/txpool/errors.go, internal/ethapi; reth's, Erigon's, Nethermind's and
 * Besu's where they differ). The JsonRpcError detail still carries the node's
 * code and message, and the native door is unchanged.
 */
export const SERVER_ERROR_RULES: readonly ServerErrorRule[] = [
  {
    prefixes: [
      "header not found",
      "unknown block",
      "block not found",
      // Besu's.
      "parent block not found",
    ],
    grpc: Code.NotFound,
    meaning: "the block is not known to the node",
  },
  {
    prefixes: [
      "missing trie node",
      "historical state ",
      // geth's state_accessor (and its forks'), Erigon's, Besu's (found from outside, h87: INTERNAL).
      "required historical state unavailable",
      "old data not available due to pruning",
      "world state unavailable",
    ],
    grpc: Code.NotFound,
    meaning: "the state asked for is pruned",
  },
  { prefixes: ["filter not found", "logs filter not found", "subscription not found"], grpc: Code.NotFound, meaning: "the filter is not known to the node" },
  // reth says so under -32602 (EthFilterError::FilterNotFound).
  { codes: [-32602], prefixes: ["filter not found"], grpc: Code.NotFound, meaning: "the filter is not known to the node (reth's code)" },
  {
    prefixes: [
      "already known",
      "known transaction",
      // Anvil's words for the same, under EIP-1474's "transaction rejected" (found from outside, h84: FAILED_PRECONDITION
      // there, ALREADY_EXISTS on geth, so a typed caller could not tell a resend from a refusal by the node it met).
      "transaction already imported",
      // Erigon's pool (DiscardReason DuplicateHash) and Nethermind's older AcceptTxResult name.
      "existing txn with same hash",
      "alreadyknown",
    ],
    grpc: Code.AlreadyExists,
    meaning: "the transaction is in the pool already",
  },
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
      // The chain id the transaction was signed for (Erigon's "invalid chain id, expected: 1 got: 5", reth's, Besu's).
      "invalid chain id",
      "wrong chainid",
      "chainid is required",
      "chainid not supported",
      // Besu's, Nethermind's, Erigon's words for the same malformations (found from outside, h87: INTERNAL).
      "max priority fee per gas exceeds max fee per gas",
      "failed to recover sender",
      "failedtoresolvesender",
      "transaction too large",
      "unsupported transaction type",
      "transaction cost overflow",
      "int256overflow",
      "intrinsicgas",
      "gasuintoverflow",
      "rlptoolong",
      "initcode too large",
      "fork supporting this transaction type is not activated yet",
      "eip-4844 & 7702 transactions cannot have the form of a create transaction",
      "eip-7702 transactions with an empty authorization list are invalid",
      "blob transactions must have at least one blob",
      "max number of blobs exceeded",
      "blob_versioned_hashes, blobs, commitments and proofs must have equal number",
      "kzgcommitment",
    ],
    grpc: Code.InvalidArgument,
    meaning: "the transaction is malformed, whatever the state",
  },
  // Nethermind's older pool answers, by AcceptTxResult name under -32010 ("Invalid, …"; "Invalid RLP.").
  { codes: [-32010], prefixes: ["invalid"], grpc: Code.InvalidArgument, meaning: "the transaction is malformed (Nethermind's words)" },
  // Besu's transaction refusals, each under its own code (RpcErrorType.java), which EIP-1474's table reads otherwise
  // (found from outside, h87: "Nonce too low" was NOT_FOUND, "Invalid signature" UNAVAILABLE, which clients retry).
  { codes: [-32002], prefixes: ["invalid signature"], grpc: Code.InvalidArgument, meaning: "the transaction's signature is invalid (Besu's code)" },
  { codes: [-32003], prefixes: ["intrinsic gas exceeds gas limit"], grpc: Code.InvalidArgument, meaning: "the gas limit is below the intrinsic cost (Besu's code)" },
  { codes: [-32001, -32006], prefixes: ["nonce too low", "nonce too high", "incorrect nonce"], grpc: Code.FailedPrecondition, meaning: "the nonce is not the account's next (Besu's codes)" },
  { codes: [-32004], prefixes: ["upfront cost exceeds account balance"], grpc: Code.FailedPrecondition, meaning: "insufficient funds (Besu's code)" },
  { codes: [-32005], prefixes: ["transaction gas limit exceeds block gas limit"], grpc: Code.FailedPrecondition, meaning: "the gas limit exceeds the block gas limit (Besu's code)" },
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
      // The node's fee cap (geth's RPCTxFeeCap as its forks and reth word it: "tx fee (1.50 ether) exceeds the
      // configured cap"; Besu's), and other nodes' words for a nonce, price or gas limit the state or the pool refuses
      // (found from outside, h87: INTERNAL).
      "tx fee (",
      "transaction fee cap exceeded",
      "gas limit reached",
      "exceeds max transaction gas limit",
      "nonce too far in future",
      "transaction nonce is too distant from current sender nonce",
      "an invalid transaction with a lower nonce exists",
      "pending transaction type conflict",
      "delegation nonce gap",
      "delegation authority has pending transaction",
      "address already reserved",
      "eip-7702 transaction with authority already reserved",
      "underpriced",
      "fee too low",
      "could not replace existing tx",
      "gas limit is too high",
      "can't replace blob-txn with a non-blob-txn",
      "spammer",
      // op-geth's refusal of a transaction its filter drops.
      "transaction filtered out",
    ],
    grpc: Code.FailedPrecondition,
    meaning: "refused for the chain's or the pool's state",
  },
  {
    prefixes: [
      "txpool is full",
      "in-flight transaction limit reached",
      // Erigon's sub-pools.
      "pending sub-pool is full",
      "basefee sub-pool is full",
      "queued sub-pool is full",
      "blobs limit in txpool is full",
    ],
    grpc: Code.ResourceExhausted,
    meaning: "the node's pool is full: try later",
  },
  // 1RPC's limits (docs.1rpc.io), under codes that otherwise mean other things.
  { prefixes: ["response size should not greater than"], grpc: Code.ResourceExhausted, meaning: "the answer is over the provider's size limit" },
  { codes: [-32001], prefixes: ["exceeded the quota usage"], grpc: Code.ResourceExhausted, meaning: "the provider's quota is spent" },
  // The node is there but cannot serve yet (Nethermind while syncing; an Arbitrum node whose sequencer is away).
  { prefixes: ["node is syncing", "sequencer temporarily not available"], grpc: Code.Unavailable, meaning: "the node cannot serve this now: try later" },
  // The node's own time limit for the call (geth's and reth's RPCEVMTimeout, Besu's TIMEOUT_ERROR).
  { prefixes: ["execution aborted (timeout = "], grpc: Code.DeadlineExceeded, meaning: "the call ran past the node's own time limit" },
  { codes: [-32603], prefixes: ["timeout expired"], grpc: Code.DeadlineExceeded, meaning: "the call ran past the node's own time limit (Besu's words)" },
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
    codes: [-32603],
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

/** The rules that read each code's messages, in order. */
const RULES_BY_CODE = new Map<number, ServerErrorRule[]>();
for (const rule of SERVER_ERROR_RULES) {
  for (const code of rule.codes ?? MESSAGE_CODES) {
    const list = RULES_BY_CODE.get(code) ?? [];
    list.push(rule);
    RULES_BY_CODE.set(code, list);
  }
}

/**
 * What a node writes before the failure's own text, read past under -32000: geth's when it cannot run a call
 * (eth_call's "err: <failure> (supplied gas N)", eth_estimateGas's "failed with N gas: <failure>"; internal/ethapi,
 * eth/gasestimator), and Erigon's pool result name before a refused transaction's reason ("FEE_TOO_LOW: underpriced";
 * rpc/jsonrpc/send_transaction.go). So "err: insufficient funds for gas * price + value: …" is read as "insufficient
 * funds" is (found from outside: the execution-apis fork-inactive cases, and every Erigon refusal (h87), were INTERNAL).
 */
const NODE_WRAPPER = /^(?:err: |failed with \d+ gas: |(already_exists|fee_too_low|stale|invalid|internal_error): )/;

/** The status Erigon's pool result name means when no rule reads the reason after it. */
const ERIGON_RESULTS: Readonly<Record<string, Code>> = {
  already_exists: Code.AlreadyExists,
  fee_too_low: Code.FailedPrecondition,
  stale: Code.FailedPrecondition,
  invalid: Code.InvalidArgument,
};

/**
 * The gRPC code for an error a node answered: by its message where a rule reads its code's messages
 * (SERVER_ERROR_RULES), else by its code.
 */
export function grpcCodeForNodeError(code: number, message: string, family: CodeFamily = "eth"): Code {
  const rules = RULES_BY_CODE.get(code);
  if (rules !== undefined) {
    let text = message.toLowerCase();
    let erigonResult: string | undefined;
    if (code === -32000) {
      const wrapper = NODE_WRAPPER.exec(text);
      if (wrapper !== null) {
        text = text.slice(wrapper[0].length);
        erigonResult = wrapper[1];
      }
    }
    for (const rule of rules) if (rule.prefixes.some((p) => text.startsWith(p))) return rule.grpc;
    const byResult = erigonResult === undefined ? undefined : ERIGON_RESULTS[erigonResult];
    if (byResult !== undefined) return byResult;
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
