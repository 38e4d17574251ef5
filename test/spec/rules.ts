/**
 * Every checkable rule of the node-access specification
 * (../shared/spec/000_3261a58697a5d6e0.txt), once. This registry is the single
 * source of truth: the spec tests take their names from it (specRule), and
 * docs/spec-conformance.md is generated from it (npm run spec:table). A test
 * checks that each quote is really in the spec, that every rule without an
 * open issue has exactly one test, and that the committed table is current.
 */

/** A front door a rule's test goes through. */
export type Door = "http" | "ws" | "typed";

/** Words of the spec: a heading (its start) and text found under it. */
export interface Quote {
  /** The start of the spec heading the text is under ("Block object", "Errors"). */
  section: string;
  /** Verbatim spec text; " … " separates fragments quoted apart. */
  text: string;
}

export interface SpecRule {
  /** Stable id, used in test names: "block.hash". */
  id: string;
  /** What the test checks, in a few words (the rest of the test's name). */
  title: string;
  /** Where the spec says it; the first quote is the rule's home. */
  quotes: readonly Quote[];
  /** The doors its test must exercise (checked when the test runs). Empty for none. */
  doors: readonly Door[];
  /**
   * What nodegate does where the spec leaves it open ("not shown"), is
   * ambiguous, or where nodegate deliberately differs (say so).
   */
  decision?: string;
  /** True when nodegate deliberately does something other than the spec's words. */
  deviation?: boolean;
  /** The open issue that will deliver the rule; such a rule has no test yet. */
  deliveredBy?: string;
}

const NATIVE_AND_TYPED: readonly Door[] = ["http", "typed"];
const ALL_DOORS: readonly Door[] = ["http", "ws", "typed"];
const NATIVE: readonly Door[] = ["http", "ws"];
const HTTP_ONLY: readonly Door[] = ["http"];

/** A table row of the spec as it is written: "| a | b | c |". */
function row(...cells: string[]): string {
  // An empty cell is written "| |" in the spec, not "|  |".
  return `| ${cells.join(" | ")} |`.replaceAll("|  |", "| |");
}

function q(section: string, text: string): Quote {
  return { section, text };
}

const SERVICE = "What the service does";
const BLOCK = "Block object";
const UNCLE = "Uncle block object";
const TX = "Transaction object";
const RECEIPT = "Transaction receipt object";
const LOG = "Log object";
const FILTER = "Log filter object";
const PROOF = "Account proof object";
const ROLLUP = "Rollup transaction object";
const STATES = "States and transitions";
const ENDPOINTS = "Endpoints";
const CALL = "Transaction call object";
const STORAGE = "Rules for eth_getStorageAt";
const LOGS_RULES = "Rules for eth_getLogs";
const AUTH = "Authentication";
const EVENTS = "Events";
const ERRORS = "Errors";
const LIMITS = "Limits";
const VERSIONING = "Versioning";

type Row = [field: string, type: string, notes: string];
type FieldRule = (cells: Row, title: string, extra?: Partial<SpecRule>) => SpecRule;

/** The rules of one resource table: one per field row, id "<prefix>.<field>". */
function tableOf(prefix: string, section: string, doors: readonly Door[]): FieldRule {
  return (cells, title, extra = {}) => ({ id: `${prefix}.${cells[0]}`, title, quotes: [q(section, row(...cells))], doors, ...extra });
}

const blockField = tableOf("block", BLOCK, NATIVE_AND_TYPED);
const txField = tableOf("tx", TX, NATIVE_AND_TYPED);
const receiptField = tableOf("receipt", RECEIPT, ALL_DOORS);
const logField = tableOf("log", LOG, NATIVE_AND_TYPED);
const proofField = tableOf("proof", PROOF, ALL_DOORS);

export const SPEC_RULES: readonly SpecRule[] = [
  /* What the service does: purpose, transports, envelopes, encoding */
  {
    id: "service.read-only",
    title: "no method writes to the chain: eth_sendRawTransaction is refused and every typed RPC is side-effect free",
    quotes: [q(SERVICE, "None of the methods here writes to the chain."), q(STATES, "The service exposes no lifecycle operations.")],
    doors: NATIVE_AND_TYPED,
    decision:
      "eth_sendRawTransaction and eth_sendTransaction answer -32601 on both doors unless passThrough.allowWrites is set; every EthService RPC is declared NO_SIDE_EFFECTS.",
  },
  {
    id: "transport.http-post",
    title: "POST /v3/<KEY> with Content-Type: application/json is answered; another verb or content type is refused",
    quotes: [q(SERVICE, "POST {base_url}/v3/<API_KEY> | JSON-RPC request, header Content-Type: application/json")],
    doors: HTTP_ONLY,
    decision: "Another HTTP method gets 405 with Allow: POST; another content type gets 415; both with a JSON-RPC -32600 body.",
  },
  {
    id: "transport.websocket",
    title: "the same request text sent as a WebSocket message to /ws/v3/<KEY> gets the same answer as over HTTP",
    quotes: [q(SERVICE, row("WebSocket (wss)", "{ws_url}/ws/v3/<API_KEY>", "the same JSON-RPC request text sent as a message"))],
    doors: NATIVE,
  },
  {
    id: "transport.tls",
    title: "HTTPS and wss: TLS on the serving port",
    quotes: [q(SERVICE, row("HTTPS", "POST {base_url}/v3/<API_KEY>", "JSON-RPC request, header Content-Type: application/json"))],
    doors: ALL_DOORS,
    decision:
      "With tls.certFile and tls.keyFile configured, nodegate serves TLS on its own port: HTTPS and wss for the native path, gRPC over HTTP/2 chosen by ALPN. Without them it serves plain HTTP and ws (for a TLS-terminating proxy in front).",
  },
  {
    id: "envelope.jsonrpc",
    title: 'jsonrpc must be "2.0" (missing or other values: -32600), and every response carries "2.0"',
    quotes: [
      q(SERVICE, row("jsonrpc", "string", "yes", "the value is the text 2.0")),
      q(VERSIONING, "The JSON-RPC protocol version is the text 2.0 in the jsonrpc field."),
    ],
    doors: NATIVE,
  },
  {
    id: "envelope.method",
    title: "method is required (-32600 without it) and must be a method nodegate serves (-32601 otherwise)",
    quotes: [q(SERVICE, row("method", "string", "yes", "one of the methods in the Endpoints part"))],
    doors: NATIVE,
    decision: 'An unknown method gets -32601 "the method <name> does not exist/is not available" (geth\'s words) without a request to the node.',
  },
  {
    id: "envelope.params",
    title: "params are positional for eth_ methods (an object is -32602) and named for the rollup method",
    quotes: [
      q(SERVICE, row("params", "array, or object for the rollup method", "yes", "positional for the eth_ methods; named for the rollup method")),
      q(ENDPOINTS, "Parameters are positional in the order listed, except for the rollup method, which takes named params."),
    ],
    doors: NATIVE,
    decision:
      "An absent params member is read as [] (JSON-RPC 2.0 lets it be omitted), so a method with a required param answers -32602 naming it. The rollup method also takes positional params, as the Starknet spec allows.",
  },
  {
    id: "envelope.id",
    title: "the response carries the request id exactly as written; strings and null are accepted too; no id means no response",
    quotes: [q(SERVICE, row("id", "integer", "yes", "the response carries the same id"))],
    doors: NATIVE,
    decision:
      "Integers of any size are echoed digit for digit (beyond 2^53 too). Strings and null are accepted as JSON-RPC 2.0 allows (many clients send string ids). A request without id is a notification: no response (HTTP 204 when nothing is left to answer). Any other id (object, array, boolean) gets -32600 with id null.",
  },
  {
    id: "response.envelope",
    title: "a response has exactly jsonrpc, id and one of result or error",
    quotes: [q(SERVICE, "Response envelope: jsonrpc (string, 2.0), id (the request id), and exactly one of result (any JSON value, shape per method) or error (see Errors).")],
    doors: NATIVE,
  },
  {
    id: "response.nothing-found",
    title: "a method that finds nothing returns null (typed: the result field unset); eth_getLogs returns []",
    quotes: [q(SERVICE, "A method that finds nothing returns result = null (or an empty array for eth_getLogs).")],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "encoding.quantity",
    title: "quantities are 0x-prefixed hex in answers and requests; a decimal or unprefixed quantity param is -32602",
    quotes: [q(SERVICE, "Quantities (numbers) are hexadecimal strings prefixed with 0x (block number, gas, index, nonce, value, size, timestamp, difficulty).")],
    doors: NATIVE_AND_TYPED,
    decision: "Quantities with leading zero digits (0x01) are refused like nodes refuse them; typed callers send integers and get them written canonically.",
  },
  {
    id: "encoding.mixed-case",
    title: "mixed-case hex is accepted in requests; answers use the canonical lowercase form on both doors",
    quotes: [q(SERVICE, "Mixed-case hex is accepted in requests.")],
    doors: NATIVE_AND_TYPED,
    decision:
      "The native path forwards the caller's params as written (nodes read hex case-insensitively) and relays the node's answer, which nodes write in lowercase; the typed path always writes lowercase.",
  },
  {
    id: "encoding.data-lengths",
    title: "addresses are 20 bytes, hashes and topics 32: a param of another length is -32602 (typed: INVALID_ARGUMENT) naming it",
    quotes: [q(SERVICE, "Hashes and data are 0x-prefixed hexadecimal strings: address 20 bytes, block or transaction hash 32 bytes, topic 32 bytes, bloom filter 256 bytes, proof-of-work nonce 8 bytes.")],
    doors: NATIVE_AND_TYPED,
    decision: "Lengths in answers (bloom 256, nonce 8, ...) are checked by the field rows of each object.",
  },
  {
    id: "encoding.block-parameter",
    title: "a block parameter is a hex number or one of the five tags, on both doors; any other tag is -32602",
    quotes: [
      q(SERVICE, "Block parameter: a hexadecimal block number, or one of the tags latest, earliest, pending, safe, finalized."),
      q(STATES, "Block tags: latest, earliest, pending, safe, finalized."),
    ],
    doors: NATIVE_AND_TYPED,
    decision: "Where a method takes a block hash too (EIP-1898: eth_getBalance, eth_getCode, eth_getTransactionCount, eth_getStorageAt, eth_call, eth_estimateGas, eth_getProof, eth_getBlockReceipts) nodegate accepts it.",
  },
  {
    id: "encoding.block-parameter-required",
    title: "a required block parameter left out is -32602 naming it; typed callers that leave it unset get latest",
    quotes: [q(SERVICE, "Where a method says so, it is required.")],
    doors: NATIVE_AND_TYPED,
    decision:
      "Enforced for eth_getBlockByNumber, eth_getUncleByBlockNumberAndIndex, eth_getTransactionByBlockNumberAndIndex and eth_getBlockReceipts. eth_getBalance, eth_getCode, eth_getTransactionCount, eth_getStorageAt, eth_call, eth_estimateGas and eth_getProof accept it absent on the native path, because callers rely on geth defaulting it (execution-apis records that), and nodegate sends latest in its place, since not every node has the default (Anvil refuses eth_getBalance, eth_getCode, eth_getTransactionCount and eth_getStorageAt without it); except eth_estimateGas, whose default nodes disagree on (Anvil, Erigon and older geth estimate at pending; geth now at latest): left out, it stays out, so the caller gets its node's own. A typed request cannot leave a param out, so unset means latest.",
    deviation: true,
  },

  /* Block object */
  blockField(["difficulty", "hex quantity", "block difficulty"], "difficulty is a quantity, typed as Uint256"),
  blockField(["extraData", "hex data", "the extra-data field of the block"], "extraData is hex data, typed as bytes"),
  blockField(["gasLimit", "hex quantity", "maximum gas allowed in the block"], "gasLimit is a quantity, typed as uint64"),
  blockField(["gasUsed", "hex quantity", "total gas used by all transactions"], "gasUsed is a quantity equal to the sum of the receipts' gas"),
  blockField(["hash", "32-byte hash", "null for the pending block"], "hash is 32 bytes, null for the pending block"),
  blockField(["logsBloom", "256-byte hex", "null for the pending block"], "logsBloom is 256 bytes, null for the pending block"),
  blockField(["miner", "20-byte address", "beneficiary of the mining reward"], "miner is a 20-byte address"),
  blockField(["mixHash", "32-byte hash", "appears in responses; not described in the field list"], "mixHash is carried as a 32-byte hash", {
    decision: "Modelled as a typed field (mix_hash) since every node sends it.",
  }),
  blockField(["nonce", "8-byte hex", "null for the pending block"], "nonce is 8 bytes, null for the pending block"),
  blockField(["number", "hex quantity", "null for the pending block"], "number is a quantity, null for the pending block"),
  blockField(["parentHash", "32-byte hash", "parent block"], "parentHash is the previous block's hash"),
  blockField(["receiptsRoot", "32-byte hash", "root of the receipts trie"], "receiptsRoot is a 32-byte hash"),
  blockField(["sha3Uncles", "32-byte hash", "hash of the uncles data"], "sha3Uncles is a 32-byte hash (the empty-list hash without uncles)"),
  blockField(["size", "hex quantity", "block size in bytes"], "size is a quantity"),
  blockField(["stateRoot", "32-byte hash", "root of the final state trie"], "stateRoot is a 32-byte hash"),
  blockField(["timestamp", "hex quantity", "Unix timestamp of collation"], "timestamp is a quantity of Unix seconds"),
  blockField(["totalDifficulty", "hex quantity", "total chain difficulty up to this block"], "totalDifficulty is a quantity when the node sends it, absent when it does not", {
    decision: "Forwarded when the node sends it. Nodes after the merge (geth 1.14 and later) leave it out: the native answer has no key and the typed field is unset.",
  }),
  blockField(
    ["transactions", "array", "transaction objects when the details flag is true; 32-byte transaction hashes when false"],
    "transactions are objects with the details flag, 32-byte hashes without",
  ),
  blockField(["transactionsRoot", "32-byte hash", "root of the transaction trie"], "transactionsRoot is a 32-byte hash"),
  blockField(["uncles", "array", "uncle hashes"], "uncles is an array of 32-byte uncle hashes"),

  /* Uncle block object */
  {
    id: "uncle.fields",
    title: "an uncle has the block's fields and no transactions field",
    quotes: [q(UNCLE, "Same fields as the block object, except there is no transactions field (an uncle holds no individual transactions).")],
    doors: ALL_DOORS,
  },
  {
    id: "uncle.totalDifficulty-null",
    title: "an uncle's totalDifficulty may be null",
    quotes: [q(UNCLE, "totalDifficulty can be null.")],
    doors: ALL_DOORS,
  },
  {
    id: "uncle.pending-nulls",
    title: "an uncle's number, hash, nonce and logsBloom may be null",
    quotes: [q(UNCLE, "Null-when-pending rules apply to number, hash, nonce and logsBloom.")],
    doors: ALL_DOORS,
  },
  {
    id: "uncle.mixHash",
    title: "an uncle carries mixHash",
    quotes: [q(UNCLE, "Responses also carry mixHash.")],
    doors: ALL_DOORS,
  },

  /* Transaction object */
  txField(["accessList", "list of addresses and storage keys", "optional"], "accessList holds addresses and storage keys, and is absent from legacy transactions"),
  txField(["blockHash", "32-byte hash", "null when pending"], "blockHash is 32 bytes, null when pending"),
  txField(["blockNumber", "hex quantity", "null when pending"], "blockNumber is a quantity, null when pending"),
  txField(
    ["chainID", "hex quantity", "optional; described as returned only for EIP-1559 transactions; the sample response spells it chainId"],
    "chainId (spelled so) is a quantity on EIP-1559 transactions",
    { decision: "nodegate uses the spelling nodes send and the sample shows: chainId. Nodes also send it on EIP-2930 and EIP-155 legacy transactions; it is forwarded and typed whenever present." },
  ),
  txField(["from", "20-byte address", "sender"], "from is the sender's 20-byte address"),
  txField(["gas", "hex quantity", "gas provided by the sender"], "gas is the quantity the sender provided"),
  txField(["gasPrice", "hex quantity", "wei"], "gasPrice is a quantity of wei, typed as Uint256"),
  txField(["hash", "32-byte hash", "transaction hash"], "hash is the 32-byte transaction hash"),
  txField(["input", "hex data", "data sent with the transaction"], "input is the data sent"),
  txField(["maxPriorityFeePerGas", "hex quantity", "optional; wei per gas above the base fee"], "maxPriorityFeePerGas is present on EIP-1559 transactions only"),
  txField(["maxFeePerGas", "hex quantity", "optional; wei per gas, base fee plus priority fee"], "maxFeePerGas is present on EIP-1559 transactions only"),
  txField(["nonce", "hex quantity", "number of transactions by the sender before this one"], "nonce counts the sender's earlier transactions"),
  txField(["r", "32-byte hex", "ECDSA signature r"], "r is the signature r, at most 32 bytes, typed as Uint256", {
    decision: "Nodes write r and s as quantities (leading zeros dropped, so sometimes shorter than 32 bytes); nodegate follows the nodes.",
    deviation: true,
  }),
  txField(["s", "32-byte hex", "ECDSA signature s"], "s is the signature s, at most 32 bytes, typed as Uint256", {
    decision: "As for r: a quantity, as nodes write it.",
    deviation: true,
  }),
  txField(["to", "20-byte address", "null for a contract creation"], "to is the recipient, null for a contract creation"),
  txField(["transactionIndex", "hex quantity", "null when pending"], "transactionIndex is a quantity, null when pending"),
  txField(["type", "hex quantity", "transaction type"], "type is 0x0, 0x1 or 0x2 for the three transaction kinds"),
  txField(["v", "hex quantity", "ECDSA recovery id"], "v is a quantity: 27/28 or EIP-155 for legacy, the parity for typed transactions"),
  txField(["value", "hex quantity", "wei transferred"], "value is the wei transferred, typed as Uint256"),

  /* Transaction receipt object */
  receiptField(["blockHash", "32-byte hash", ""], "blockHash is the including block's 32-byte hash"),
  receiptField(["blockNumber", "hex quantity", ""], "blockNumber is the including block's number"),
  receiptField(["contractAddress", "20-byte address", "set for a contract creation, otherwise null"], "contractAddress is set for a creation, null otherwise"),
  receiptField(
    ["cumulativeGasUsed", "hex quantity", "total gas used in the block up to and including this transaction"],
    "cumulativeGasUsed adds up the gas of the block's transactions so far",
  ),
  receiptField(
    ["effectiveGasPrice", "hex quantity", "actual value per gas deducted from the sender; before EIP-1559 equals the gas price"],
    "effectiveGasPrice equals the gas price for a legacy transaction and base fee plus tip for EIP-1559",
  ),
  receiptField(["from", "20-byte address", "sender"], "from is the sender"),
  receiptField(["gasUsed", "hex quantity", "gas used by this transaction alone"], "gasUsed is this transaction's gas alone"),
  receiptField(["logs", "array of log objects", "logs generated by the transaction"], "logs are the transaction's log objects"),
  receiptField(["logsBloom", "256-byte hex", ""], "logsBloom is 256 bytes"),
  receiptField(
    ["root", "32-byte hash", "one of root or status is present: post-transaction state root (before the Byzantium fork)"],
    "a pre-Byzantium receipt carries a 32-byte root and no status",
  ),
  receiptField(
    ["status", "hex quantity", "one of root or status is present: 1 success, 0 failure (sample shows 0x1)"],
    "a receipt carries status 0x1 for success or 0x0 for failure, and no root",
  ),
  receiptField(["to", "20-byte address", "null for a contract creation"], "to is the recipient, null for a contract creation"),
  receiptField(["transactionHash", "32-byte hash", ""], "transactionHash is the transaction's hash"),
  receiptField(["transactionIndex", "hex quantity", "position in the block"], "transactionIndex is the position in the block"),
  receiptField(["type", "hex quantity", "transaction type"], "type is the transaction's type"),

  /* Log object */
  logField(["removed", "boolean", "true when removed by a chain reorganization, false for a valid log"], "removed is false for a valid log and true for a reorganized one", {
    quotes: [
      q(LOG, row("removed", "boolean", "true when removed by a chain reorganization, false for a valid log")),
      q(STATES, row("log removed by chain reorganization", "the log's removed field is true")),
    ],
  }),
  logField(["logIndex", "hex quantity", "position in the block; null when pending"], "logIndex is the position in the block, null when pending"),
  logField(["transactionIndex", "hex quantity", "null when pending"], "transactionIndex is a quantity, null when pending"),
  logField(["transactionHash", "32-byte hash", "null when pending"], "transactionHash is 32 bytes, null when pending"),
  logField(["blockHash", "32-byte hash", "null when pending"], "blockHash is 32 bytes, null when pending"),
  logField(["blockNumber", "hex quantity", "null when pending"], "blockNumber is a quantity, null when pending"),
  logField(["address", "20-byte address", "origin of the log"], "address is the emitting contract"),
  logField(["data", "hex data", "one or more 32-byte non-indexed arguments"], "data holds the non-indexed arguments as 32-byte words"),
  {
    id: "log.topics",
    title: "topics are 0 to 4 32-byte hashes, the first the event signature's hash unless the event is anonymous",
    quotes: [q(LOG, row("topics", "array of 0 to 4 32-byte hashes", "indexed arguments; the first topic is normally the hash of the event signature, except for events declared anonymous"))],
    doors: NATIVE_AND_TYPED,
  },

  /* Log filter object and the rules for eth_getLogs */
  {
    id: "filter.address",
    title: "address takes one address or a list, and only logs from them match",
    quotes: [q(FILTER, row("address", "20-byte address or list of addresses", "no", "none", "logs must originate from it"))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "filter.fromBlock",
    title: "fromBlock defaults to latest",
    quotes: [q(FILTER, row("fromBlock", "block parameter", "no", "latest", ""))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "filter.toBlock",
    title: "toBlock defaults to latest",
    quotes: [q(FILTER, row("toBlock", "block parameter", "no", "latest", ""))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "filter.topics",
    title: "topics are order-dependent; null is a wildcard and a list is an OR",
    quotes: [q(FILTER, row("topics", "array of 32-byte topics", "no", "none", "order-dependent"))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "filter.blockHash",
    title: "blockHash restricts to one block, the same as fromBlock and toBlock set to it",
    quotes: [q(FILTER, "restricts to one block, equivalent to setting fromBlock and toBlock to that block")],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "filter.blockHash-excludes-range",
    title: "blockHash with fromBlock or toBlock is -32602 (typed: INVALID_ARGUMENT) before anything goes upstream",
    quotes: [
      q(FILTER, "when present, fromBlock and toBlock are not allowed"),
      q(LOGS_RULES, "When blockHash is present, fromBlock and toBlock must not be present."),
    ],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "filter.blockhash-spelling",
    title: "the blockhash spelling is accepted and sent upstream as blockHash",
    quotes: [q(FILTER, "(the parameter list spells it blockhash in one place)")],
    doors: NATIVE_AND_TYPED,
    decision: "Both spellings are accepted on the native path and forwarded as blockHash (case-sensitive nodes would ignore blockhash); sending both is -32602. The typed field is block_hash.",
  },
  {
    id: "getLogs.narrow-range",
    title: "the too-many-results error suggests a narrower block range that then succeeds",
    quotes: [q(LOGS_RULES, "To avoid limit errors, narrow the block range with fromBlock and toBlock, and for common topics restrict to a single contract address.")],
    doors: NATIVE_AND_TYPED,
    decision: 'The -32005 error\'s data is {"limit", "from", "to"}: the range from the first log\'s block to the last block that stays under the limit, as the provider sends it.',
  },

  /* Account proof object */
  proofField(["address", "20-byte address", "appears in responses"], "address is the proved account"),
  proofField(["balance", "hex quantity", "wei"], "balance is the account's wei, as eth_getBalance gives it"),
  proofField(["codeHash", "32-byte hash", "hash of the account code"], "codeHash is the Keccak hash of the account's code"),
  proofField(["nonce", "hex quantity", "account nonce"], "nonce is the account's nonce"),
  proofField(["storageHash", "32-byte hash", "hash of the storage root; all storage proofs start at it"], "storageHash is the hash of every storage proof's first node"),
  proofField(
    ["accountProof", "array of RLP-serialized trie nodes", "starts with the state-root node, follows the path of the hash of the address"],
    "accountProof starts with the node whose hash is the block's stateRoot",
  ),
  proofField(["storageProof", "array of objects", "one per requested key"], "storageProof has one entry per requested key, in order"),
  {
    id: "proof.storage-entry",
    title: "a storage proof entry has the key, the value as hex and the proof nodes",
    quotes: [q(PROOF, "storageProof entry: key (requested storage key), value (storage value, hex), proof (array of RLP-serialized trie nodes starting with the storage-hash node, following the path of the hash of the key")],
    doors: ALL_DOORS,
  },
  {
    id: "proof.storage-proof-empty",
    title: "a storage proof may be an empty list",
    quotes: [q(PROOF, "can be empty")],
    doors: ALL_DOORS,
  },

  /* Rollup transaction object */
  {
    id: "rollup.invoke-fields",
    title: "an INVOKE result carries each listed field with its JSON type",
    quotes: [
      q(
        ROLLUP,
        "Fields seen in a result of type INVOKE: type (string), transaction_hash (hex string), max_fee (hex string), version (hex string), signature (array of hex strings), nonce (hex string), contract_address (hex string), entry_point_selector (hex string), calldata (array of hex strings).",
      ),
    ],
    doors: NATIVE_AND_TYPED,
    decision: "The listed fields are a union of INVOKE versions: v0 has contract_address and entry_point_selector, v1 has nonce. Both are checked.",
  },
  {
    id: "rollup.other-variants",
    title: "other transaction types arrive whole: forwarded as sent, typed as their own variant",
    quotes: [q(ROLLUP, "Fields of the rollup transaction object beyond those listed, and variants for other values of type: not shown.")],
    doors: NATIVE_AND_TYPED,
    decision: "Every TXN variant of Starknet spec 0.10 is typed (docs/starknet.md). A variant nodegate does not model is forwarded untouched on the native path; the typed path answers INTERNAL with -32053.",
  },

  /* States and transitions */
  {
    id: "state.pending-nulls",
    title: "a pending block, transaction or log has exactly the listed fields null, on both doors",
    quotes: [
      q(
        STATES,
        "block fields hash, logsBloom, nonce, number are null; transaction fields blockHash, blockNumber, transactionIndex are null; log fields logIndex, transactionIndex, transactionHash, blockHash, blockNumber are null",
      ),
    ],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "state.pending-receipt",
    title: "a pending transaction has no receipt: null (typed: unset)",
    quotes: [q(STATES, row("transaction is pending", "eth_getTransactionReceipt has no receipt to return"))],
    doors: ALL_DOORS,
  },
  {
    id: "state.pending-block-receipts",
    title: "eth_getBlockReceipts with pending returns the same data as latest",
    quotes: [q(STATES, row("eth_getBlockReceipts called with pending", "returns the same data as latest"))],
    doors: NATIVE_AND_TYPED,
    decision: "nodegate asks the node for latest when a caller says pending: nodes differ here (Anvil answers null, geth its pending block's receipts).",
  },
  {
    id: "state.transitions",
    title: "a transition (pending to mined) shows on the next call: nothing is cached",
    quotes: [q(STATES, "Transitions between these conditions: not shown.")],
    doors: NATIVE_AND_TYPED,
    decision:
      "nodegate keeps no non-final chain state between calls: a read at a tag or of a block not yet final is never stored, so a call sent after a change shows it. One exception, documented: identical calls made while one is under way (sent less than cache.coalesceWindowMs, 1 s, before) share its answer, so a call that joins one sent before the change gets the earlier view; set the window lower or cache.coalesce false where that matters.",
  },

  /* Endpoints */
  {
    id: "endpoints.post",
    title: "every listed method is answered over POST /v3/<KEY> and has a typed RPC",
    quotes: [q(ENDPOINTS, "Every method is invoked as a JSON-RPC request (method name in the method field) by POST to {base_url}/v3/<API_KEY>, with header Content-Type: application/json.")],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "endpoints.ws-marked",
    title: "the methods marked WS answer over /ws/v3/<KEY> exactly as over HTTP",
    quotes: [q(ENDPOINTS, "For the methods marked WS below, the same request text can be sent over the WebSocket address.")],
    doors: NATIVE,
  },
  {
    id: "endpoints.ws-unmarked",
    title: "the methods not marked WS answer over WebSocket too",
    quotes: [q(ENDPOINTS, "WebSocket availability for the methods not marked WS: not shown.")],
    doors: NATIVE,
    decision: "Every method nodegate serves over HTTP it also serves over WebSocket, with the same answer.",
  },
  {
    id: "endpoints.eth_getStorageAt",
    title: "eth_getStorageAt takes address, position and block in that order and returns a 32-byte value",
    quotes: [q(ENDPOINTS, row("eth_getStorageAt", "address (20-byte, required); storage position (hex, required); block parameter (required)", "hex value at the position (32-byte padded in the samples)"))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "endpoints.eth_getLogs",
    title: "eth_getLogs takes a filter object and returns an array of logs, [] when none match",
    quotes: [q(ENDPOINTS, row("eth_getLogs", "filter object (see Resources)", "array of log objects; empty array when none"))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "endpoints.eth_getBlockByHash",
    title: "eth_getBlockByHash takes hash and a required details flag; null when no block is found",
    quotes: [q(ENDPOINTS, row("eth_getBlockByHash", "hash (32-byte, required); transaction details flag (boolean, required: true gives full transaction objects, false gives hashes)", "block object, or null when no block is found"))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "endpoints.eth_getBlockByNumber",
    title: "eth_getBlockByNumber takes a block and a required details flag; null when there is no such block",
    quotes: [q(ENDPOINTS, row("eth_getBlockByNumber", "block parameter (required); show transaction details flag (boolean, required; same meaning)", "block object, or null"))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "endpoints.eth_getUncleByBlockNumberAndIndex",
    title: "eth_getUncleByBlockNumberAndIndex takes block and a quantity index; uncle or null; over WS too",
    quotes: [q(ENDPOINTS, row("eth_getUncleByBlockNumberAndIndex (WS)", "block parameter (required); uncle index position (hex quantity, required)", "uncle block object, or null"))],
    doors: ALL_DOORS,
  },
  {
    id: "endpoints.eth_getUncleByBlockHashAndIndex",
    title: "eth_getUncleByBlockHashAndIndex takes a block hash and a quantity index; uncle or null; over WS too",
    quotes: [q(ENDPOINTS, row("eth_getUncleByBlockHashAndIndex (WS)", "block hash (32-byte, required); uncle index position (hex quantity, required)", "uncle block object, or null"))],
    doors: ALL_DOORS,
  },
  {
    id: "endpoints.eth_getTransactionByBlockNumberAndIndex",
    title: "eth_getTransactionByBlockNumberAndIndex takes block and index; transaction or null",
    quotes: [q(ENDPOINTS, row("eth_getTransactionByBlockNumberAndIndex", "block parameter (required); transaction index position (hex quantity, required)", "transaction object, or null"))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "endpoints.rollup_getTransactionByBlockIdAndIndex",
    title: "the rollup method takes named block_id and a decimal integer index, both required",
    quotes: [q(ENDPOINTS, row("rollup_getTransactionByBlockIdAndIndex", "named params: block_id (object, required) and index (integer, required, decimal)", "rollup transaction object"))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "endpoints.eth_getTransactionReceipt",
    title: "eth_getTransactionReceipt takes a transaction hash; receipt or null; over WS too",
    quotes: [q(ENDPOINTS, row("eth_getTransactionReceipt (WS)", "transaction hash (32-byte, required)", "receipt object, or null when no receipt is found (none for pending transactions)"))],
    doors: ALL_DOORS,
  },
  {
    id: "endpoints.eth_getBlockReceipts",
    title: "eth_getBlockReceipts takes a hex or decimal number or any tag; an array of receipts, null without a block",
    quotes: [q(ENDPOINTS, row("eth_getBlockReceipts", "block number (required): hex or decimal integer, or a tag latest, earliest, pending, finalized, safe", "array of receipt objects (the description calls it a block object); null when there is no corresponding block"))],
    doors: NATIVE_AND_TYPED,
    decision: "A decimal number (JSON integer or digit string) is rewritten to hex before it goes to the node, since nodes take hex only. The result is the array (typed: BlockReceipts), not a block object. A block hash is accepted too.",
  },
  {
    id: "endpoints.eth_estimateGas",
    title: "eth_estimateGas takes a call object and a block and returns a quantity; over WS too",
    quotes: [q(ENDPOINTS, row("eth_estimateGas (WS)", "transaction call object (required); block number (listed as required: string block number or tag)", "hex quantity, the gas estimate"))],
    doors: ALL_DOORS,
    decision: "The block may be left out on the native path, and then is left to the node's own default, which nodes disagree on (nodegate adds only the gas bound; typed: unset means latest); see encoding.block-parameter-required.",
  },
  {
    id: "endpoints.eth_call",
    title: "eth_call returns the contract's return data, 0x when empty",
    quotes: [q(ENDPOINTS, row("eth_call", "transaction call object (fields below); block parameter (required)", "hex data returned by the executed contract (0x when empty)"))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "endpoints.eth_getProof",
    title: "eth_getProof takes address, storage keys and block; an account proof; over WS too",
    quotes: [q(ENDPOINTS, row("eth_getProof (WS)", "address (20-byte); storageKeys (array of 32-byte keys); blockParameter", "account proof object"))],
    doors: ALL_DOORS,
  },
  {
    id: "endpoints.rollup-method-name",
    title: "the rollup method is the Starknet network's starknet_getTransactionByBlockIdAndIndex",
    quotes: [q(ENDPOINTS, "The method name rollup_getTransactionByBlockIdAndIndex stands for the method of the same shape that belongs to the rollup network's own method family.")],
    doors: NATIVE_AND_TYPED,
    decision:
      'Served as starknet_getTransactionByBlockIdAndIndex on a Starknet network: /<network>/v3/<KEY> natively, StarknetService with x-nodegate-network typed. The placeholder name itself is not a method (-32601).',
  },
  {
    id: "endpoints.block_id",
    title: "block_id is exactly one of block_hash, a decimal block_number, or the tags latest and pending",
    quotes: [q(ENDPOINTS, "block_id (object) holds exactly one of: block_hash (string), block_number (integer, decimal), or is one of the strings latest or pending.")],
    doors: NATIVE_AND_TYPED,
    decision: "The newer Starknet tags (pre_confirmed, l1_accepted) are accepted as well.",
  },
  {
    id: "endpoints.batch",
    title: "a batch is answered member by member, in order",
    quotes: [q(ENDPOINTS, "Batch requests: not shown.")],
    doors: NATIVE,
    decision:
      "Batches are accepted on HTTP and WebSocket, up to 1000 members (more: each call gets -32600 under its own id, nothing runs; none: one -32600 with id null). Each member is answered on its own, in request order; notifications get no member; a batch of N counts as N + 1 requests against rate limits.",
  },
  {
    id: "endpoints.getBlockByHash-failover",
    title: "eth_getBlockByHash fails over to a partner during an outage for Growth and Custom keys only",
    quotes: [
      q(ENDPOINTS, "Rules for eth_getBlockByHash: the method can be forwarded to a partner provider during an outage for the Growth and Custom service plans."),
      q(AUTH, "Failover forwarding of requests to a partner provider is available only on the Growth and Custom service plans."),
    ],
    doors: NATIVE_AND_TYPED,
    decision: "Core keys get the outage error (-32050, HTTP 503). The methods and plans are configurable per network.",
  },

  /* Transaction call object and its rules */
  {
    id: "call.from",
    title: "from is optional for eth_estimateGas and, unlike the table says, for eth_call",
    quotes: [q(CALL, row("from", "20-byte address", "optional", "required", "sender"))],
    doors: NATIVE_AND_TYPED,
    decision: "eth_call accepts a call object without from: a contract read needs no account, and viem and ethers send none for one (the test reads through both). When given, it is the sender the node runs the call as.",
    deviation: true,
  },
  {
    id: "call.to",
    title: "to is optional: without it the call simulates a contract creation",
    quotes: [q(CALL, row("to", "20-byte address", "listed without a flag", "listed without a flag", "recipient"))],
    doors: NATIVE_AND_TYPED,
    decision: "to may be absent on both methods; the node then runs data as init code and eth_call returns the code it would deploy.",
  },
  {
    id: "call.gas",
    title: "gas is optional; a call that needs more gas than given fails",
    quotes: [q(CALL, row("gas", "hex quantity", "optional", "optional", "the call consumes zero gas, but some executions need the value; capped, see Limits"))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "call.gasPrice",
    title: "gasPrice is optional and reaches the node as gasPrice",
    quotes: [q(CALL, row("gasPrice", "hex quantity", "optional", "optional", "price per paid gas"))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "call.maxPriorityFeePerGas",
    title: "maxPriorityFeePerGas is optional and reaches the node",
    quotes: [q(CALL, row("maxPriorityFeePerGas", "hex quantity", "optional", "optional", "wei per gas above the base fee"))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "call.maxFeePerGas",
    title: "maxFeePerGas is optional and reaches the node",
    quotes: [q(CALL, row("maxFeePerGas", "hex quantity", "optional", "optional", "wei per gas, base fee plus priority fee"))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "call.value",
    title: "value is optional and is sent with the call",
    quotes: [q(CALL, row("value", "hex quantity", "optional", "optional", "value sent"))],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "call.data",
    title: "data carries the ABI-encoded call; input is accepted as the same field",
    quotes: [q(CALL, row("data", "hex data", "optional", "optional", "method signature hash and encoded parameters per the contract ABI specification"))],
    doors: NATIVE_AND_TYPED,
    decision: "input (the execution-apis name) is accepted as well and forwarded as sent; typed callers may set either field.",
  },
  {
    id: "call.estimate-adds-nothing",
    title: "eth_estimateGas adds no transaction: block number and nonce are unchanged",
    quotes: [q(CALL, "eth_estimateGas does not add the transaction to the chain; its estimate can be far above the gas the transaction really uses.")],
    doors: ALL_DOORS,
  },
  {
    id: "call.creates-no-transaction",
    title: "eth_call creates no transaction: state, block number and nonce are unchanged",
    quotes: [q(CALL, "eth_call executes a message call at once and creates no transaction on the chain.")],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "call.estimate-upper-bound",
    title: "eth_estimateGas without gas is bounded by the pending block's gas limit",
    quotes: [q(CALL, "When eth_estimateGas gets no gas limit, the node uses the pending block's gas limit as the upper bound, so the estimate can be too low for executions that need more than that limit.")],
    doors: ALL_DOORS,
    decision: "nodegate sends the pending block's gas limit as gas when the caller gives neither gas nor a fee (nor a block gas limit override, which the node bounds the estimate by), so every node applies the same bound.",
  },
  {
    id: "call.revert-code-3",
    title: "a REVERT is an error with code 3 on both methods",
    quotes: [q(CALL, "When the execution hits a REVERT, the response is an error with code 3 (see Errors).")],
    doors: ALL_DOORS,
  },

  /* Rules for eth_getStorageAt */
  {
    id: "storage.plain-slot",
    title: "a plain variable at slot n is read with position n as a quantity",
    quotes: [q(STORAGE, "A plain variable at slot n is read with the position n as a hex quantity.")],
    doors: NATIVE_AND_TYPED,
  },
  {
    id: "storage.mapping-slot",
    title: "a mapping element is read at keccak(pad32(key) ++ pad32(slot))",
    quotes: [q(STORAGE, "The position of a mapping element is the Keccak hash of the concatenation of the key left-padded with zeros to 32 bytes and the mapping's slot number left-padded with zeros to 32 bytes.")],
    doors: NATIVE_AND_TYPED,
  },

  /* Authentication */
  {
    id: "auth.key-in-path",
    title: "the API key is the last path segment of /v3/<KEY> and /ws/v3/<KEY>; typed callers send it as x-api-key",
    quotes: [q(AUTH, "Every request carries an API key as the last path segment: {base_url}/v3/<API_KEY> over HTTPS and {ws_url}/ws/v3/<API_KEY> over WebSocket.")],
    doors: ALL_DOORS,
    decision: "Keys are configured (NODEGATE_API_KEYS or the YAML file), standing in for the provider's dashboard. The typed door has no path segment, so the key travels in the x-api-key metadata header.",
  },
  {
    id: "auth.nothing-else",
    title: "the key alone is enough: no other header or credential is needed",
    quotes: [q(AUTH, "No other header or credential is used in the requests shown.")],
    doors: ALL_DOORS,
    decision: "A key may opt in to an HTTP Basic secret and allowlists (methods, contract addresses, origins, user agents); a key without them needs nothing else.",
  },
  {
    id: "auth.missing-or-invalid-key",
    title: "a missing key, an unknown key and a refused call get the provider's errors and statuses",
    quotes: [q(AUTH, "Behavior for a missing or invalid key, and key scopes or permissions: not shown.")],
    doors: ALL_DOORS,
    decision:
      'Missing: HTTP 401, -32600 "project id required in the url". Unknown: 401, -32600 "invalid project id". Outside the key\'s allowlists: 403, -32002 "rejected due to project ID settings". Typed: UNAUTHENTICATED and PERMISSION_DENIED with the same JsonRpcError. A WebSocket upgrade is refused with the same status and body.',
  },

  /* Events */
  {
    id: "events.subscriptions",
    title: "new blocks and logs are pushed on WebSocket (eth_subscribe) and typed streams; HTTP says where to subscribe",
    quotes: [q(EVENTS, "Push notifications and subscriptions: not shown.")],
    doors: ALL_DOORS,
    decision:
      'Offered (docs/subscriptions.md): eth_subscribe newHeads, logs (address and topics) and newPendingTransactions over WebSocket, eth_unsubscribe, standard eth_subscription notifications under nodegate\'s own ids; typed EthService.SubscribeNewHeads, SubscribeLogs and SubscribeNewPendingTransactions (with from_block to resume) and StreamLogs for ranges over the eth_getLogs limits. Gap-free across upstream reconnects, reorganizations re-send heads and take back logs with removed: true. Over HTTP eth_subscribe is -32601 "notifications not supported".',
  },
  {
    id: "events.logs-by-polling",
    title: "the logs eth_getLogs returns for a transaction are the logs in its receipt",
    quotes: [q(EVENTS, "Log records are read by calling eth_getLogs and are part of receipts; no other event delivery is described.")],
    doors: NATIVE_AND_TYPED,
  },

  /* Errors */
  {
    id: "errors.shape",
    title: "an error has an integer code, a string message, optional data, and the request's id",
    quotes: [q(ERRORS, "The error member of a response has: code (integer), message (string) and optionally data (hex string). The response id equals the request id.")],
    doors: ALL_DOORS,
    decision: "nodegate's own errors may carry data that is not hex (the -32005 range suggestion is an object); node errors are relayed as the node wrote them. Typed callers get the error as a JsonRpcError status detail.",
  },
  {
    id: "errors.revert",
    title: 'a revert is code 3, "execution reverted: <reason>" with the reason decoded, and the revert data as hex',
    quotes: [q(ERRORS, row("3", "execution reverted: <revert_reason>", "eth_call or eth_estimateGas executes a REVERT; the revert reason is decoded into the message as text", "hex of the ABI-encoded revert data"))],
    doors: ALL_DOORS,
    decision: "When a node sends only \"execution reverted\" with Error(string) or Panic(uint256) data, nodegate decodes the reason into the message. Typed callers also get a RevertError detail with the raw bytes and reason.",
  },
  {
    id: "errors.http-status",
    title: "HTTP statuses: 200 for JSON-RPC answers, 4xx/5xx only where the request or upstream failed as a whole",
    quotes: [q(ERRORS, "HTTP status codes: not shown.")],
    doors: NATIVE,
    decision:
      "200 for every JSON-RPC answer, node errors included; 204 when only notifications were sent; 401 missing or unknown key; 403 refused by the key's settings; 404 unknown path; 405 not POST; 413 body too large; 415 not JSON; 429 rate limit (with Retry-After); 502, 503, 504 when the node answered badly, could not be reached, or timed out (-32052, -32050, -32051). WebSocket refusals use the same statuses at upgrade.",
  },
  {
    id: "errors.other-codes",
    title: "malformed requests, unknown methods and bad params get the standard JSON-RPC codes, naming what is wrong",
    quotes: [q(ERRORS, "Other error codes and messages (malformed request, unknown method, bad parameters): not shown.")],
    doors: NATIVE_AND_TYPED,
    decision:
      "-32700 parse error; -32600 invalid request (saying which member); -32601 unknown method; -32602 invalid params naming the argument and field. Typed callers get INVALID_ARGUMENT or UNIMPLEMENTED with the same JsonRpcError. No such request reaches the node.",
  },

  /* Limits */
  {
    id: "limits.getLogs-params",
    title: "eth_getLogs takes at most 5,000 addresses and topics; more is -32005 before anything goes upstream",
    quotes: [q(LIMITS, row("Parameters in one request", "eth_getLogs", "at most 5,000")), q(LOGS_RULES, "Limits in the Limits part apply.")],
    doors: NATIVE_AND_TYPED,
    decision: "Parameters are counted as the filter's addresses plus its topic entries.",
  },
  {
    id: "limits.getLogs-results",
    title: 'eth_getLogs returns at most 10,000 logs; more is -32005 "query returned more than 10000 results"',
    quotes: [
      q(LIMITS, row("Results per query", "eth_getLogs", "at most 10,000; exceeded gives error -32005")),
      q(ERRORS, row("-32005", "query returned more than 10000 results", "eth_getLogs matches more than 10,000 results", "none")),
    ],
    doors: NATIVE_AND_TYPED,
    decision: 'The error carries data {"limit", "from", "to"} (a narrower range, see getLogs.narrow-range) where the spec\'s table says none: the provider really sends it, and callers that ignore data lose nothing.',
    deviation: true,
  },
  {
    id: "limits.getLogs-duration",
    title: 'eth_getLogs runs at most 10 seconds; longer is -32005 "query timeout exceeded" and the node request is cancelled',
    quotes: [
      q(LIMITS, row("Query duration", "eth_getLogs", "at most 10 seconds; exceeded gives error -32005")),
      q(ERRORS, row("-32005", "query timeout exceeded", "eth_getLogs query runs longer than 10 seconds", "none")),
    ],
    doors: NATIVE_AND_TYPED,
    decision: "The 10 s default is configurable (limits.getLogsTimeoutMs); the test shortens it so it runs fast.",
  },
  {
    id: "limits.gas-cap",
    title: "a gas param above 10x the latest block's gas limit is lowered to that cap",
    quotes: [q(LIMITS, row("gas parameter cap", "eth_call and eth_estimateGas", "10 times (1000%) the current block gas limit"))],
    doors: NATIVE_AND_TYPED,
    decision:
      "A larger gas is lowered to the cap before the call goes upstream (as nodes cap gas) rather than refused. The latest block's gas limit is read at most every 12 s, not per call, so for up to 12 s after a change of the gas limit the cap follows the limit before it.",
  },
  {
    id: "limits.not-shown",
    title: "rate limits per key (429 and -32005 with Retry-After) and request size limits (413)",
    quotes: [q(LIMITS, "Rate limits, request size limits and plan quotas: not shown.")],
    doors: ALL_DOORS,
    decision:
      'Per plan: core 100/s and 1,000,000/day, growth 1,000/s and 20,000,000/day, custom unlimited; per-key overrides. Exceeding: HTTP 429, -32005 "project ID request rate exceeded" (or the daily message), Retry-After; typed RESOURCE_EXHAUSTED with RetryInfo. A batch costing more than the whole limit gets the same error per call with the reason in data, HTTP 200 and no Retry-After (clients resend a 429). Bodies and WebSocket messages up to 5 MiB (413; WebSocket close 1009); batches up to 1000.',
  },

  /* Versioning */
  {
    id: "version.path",
    title: "the path carries v3; other versions are not served",
    quotes: [q(VERSIONING, "The address path carries the version segment v3 (/v3/<API_KEY> and /ws/v3/<API_KEY>).")],
    doors: NATIVE,
  },
  {
    id: "version.policy",
    title: "the typed API is versioned by proto package; the native path by its v3 segment",
    quotes: [q(VERSIONING, "Version policy, deprecation and compatibility rules: not shown.")],
    doors: NATIVE_AND_TYPED,
    decision: "Every typed service lives in a versioned proto package (nodegate.eth.v1, ...); a breaking change goes to a new package (v2) served next to the old one. The native path answers only under /v3.",
  },
];

const byId = new Map(SPEC_RULES.map((r) => [r.id, r]));

/** The rule with this id; throws for an unknown id so a typo fails at collection. */
export function ruleById(id: string): SpecRule {
  const rule = byId.get(id);
  if (rule === undefined) throw new Error(`no spec rule "${id}" in test/spec/rules.ts`);
  return rule;
}

/** The name a rule's test has: "[id] title". */
export function testNameOf(rule: SpecRule): string {
  return `[${rule.id}] ${rule.title}`;
}
