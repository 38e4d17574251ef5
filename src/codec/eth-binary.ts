/**
 * Binary writers for the Ethereum types whose JSON shape is special (see
 * eth-types.ts): 256-bit quantities and a block's transactions (hashes or
 * full objects). The request-only specials (block parameter, filters) have
 * none: results never hold them.
 */
import { BlockTransactionsSchema } from "../../gen/nodegate/eth/v1/block_pb.js";
import { Uint256Schema } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { TransactionSchema } from "../../gen/nodegate/eth/v1/transaction_pb.js";
import { type BinarySpecialFactory, type BodyWriter, dataWriter, giveUp, messageValue, uint256Body, writeList, ws } from "./binary-transcoder.js";

const QUOTE = 0x22;
const OPEN_BRACKET = 0x5b;

/** BlockTransactions: an array of 32-byte hashes (field 1) or of transaction objects (field 2), as the first element says. */
const blockTransactions: BinarySpecialFactory = (compiler) => {
  const transaction = compiler.message(TransactionSchema);
  if (transaction === undefined) return undefined;
  const full = messageValue(() => transaction);
  const hash = dataWriter(32, 0);
  const body: BodyWriter = (src, pos, w) => {
    if (src[pos] !== OPEN_BRACKET) giveUp();
    const first = ws(src, pos + 1);
    return src[first] === QUOTE ? writeList(src, pos, w, 1, hash) : writeList(src, pos, w, 2, full);
  };
  return body;
};

export const ethBinarySpecials: ReadonlyMap<string, BinarySpecialFactory> = new Map<string, BinarySpecialFactory>([
  [Uint256Schema.typeName, () => uint256Body],
  [BlockTransactionsSchema.typeName, blockTransactions],
]);
