/**
 * Realistic JSON-RPC results for the canned upstream, generated once from a
 * seeded PRNG so every run answers the same bytes: a mainnet-like block with
 * 150 full transactions (legacy type 0x0 and EIP-1559 type 0x2, every field a
 * provider writes), 10,000 logs shaped like eth_getLogs answers (about
 * 6.5 MiB), receipts, and small answers. Keys are in the order geth writes them.
 */

/** Deterministic 32-bit PRNG (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const random = prng(0x6e6f6465);

function data(bytes: number): string {
  let s = "0x";
  for (let i = 0; i < bytes; i++) s += Math.floor(random() * 256).toString(16).padStart(2, "0");
  return s;
}

function quantity(n: number | bigint): string {
  return `0x${n.toString(16)}`;
}

/** A 256-bit signature value: a QUANTITY, so no leading zero digits. */
function word(): string {
  return quantity(BigInt(data(32)));
}

function between(lo: number, hi: number): number {
  return lo + Math.floor(random() * (hi - lo + 1));
}

/** A word-aligned calldata or log payload: zero-padded words, as ABI encoding writes them. */
function abiWords(words: number): string {
  let s = "0x";
  for (let i = 0; i < words; i++) {
    const significant = between(1, 32);
    s += "00".repeat(32 - significant) + data(significant).slice(2);
  }
  return s;
}

export const BLOCK_NUMBER = 21_000_000;
export const BLOCK_HASH = data(32);
const TIMESTAMP = 1_730_000_000;

function transaction(index: number): Record<string, unknown> {
  const legacy = index % 4 === 0;
  const kind = random();
  // Transfers (no input), token calls (4 + 2 words), and heavier contract calls (router swaps, mints).
  const input = kind < 0.2 ? "0x" : kind < 0.7 ? `0xa9059cbb${abiWords(2).slice(2)}` : `0x${data(4).slice(2)}${abiWords(between(6, 32)).slice(2)}`;
  const gasPrice = quantity(between(8, 60) * 1_000_000_000 + between(0, 999_999_999));
  const common = {
    blockHash: BLOCK_HASH,
    blockNumber: quantity(BLOCK_NUMBER),
    from: data(20),
    gas: quantity(between(21_000, 900_000)),
    gasPrice,
  };
  const tail = {
    hash: data(32),
    input,
    nonce: quantity(between(0, 200_000)),
    to: data(20),
    transactionIndex: quantity(index),
    value: random() < 0.6 ? "0x0" : quantity(BigInt(between(1, 2 ** 31)) * 1_000_000_000n),
  };
  if (legacy) {
    return {
      ...common,
      ...tail,
      type: "0x0",
      chainId: "0x1",
      v: random() < 0.5 ? "0x25" : "0x26",
      r: word(),
      s: word(),
    };
  }
  const accessList =
    random() < 0.15 ? [{ address: data(20), storageKeys: Array.from({ length: between(1, 4) }, () => data(32)) }] : [];
  return {
    ...common,
    maxFeePerGas: quantity(between(20, 120) * 1_000_000_000),
    maxPriorityFeePerGas: quantity(between(1, 3) * 1_000_000_000),
    ...tail,
    type: "0x2",
    accessList,
    chainId: "0x1",
    v: random() < 0.5 ? "0x0" : "0x1",
    r: word(),
    s: word(),
    yParity: random() < 0.5 ? "0x0" : "0x1",
  };
}

export function block(transactions: number): Record<string, unknown> {
  const txs = Array.from({ length: transactions }, (_, i) => transaction(i));
  return {
    baseFeePerGas: quantity(between(5, 40) * 1_000_000_000),
    blobGasUsed: "0x40000",
    difficulty: "0x0",
    excessBlobGas: "0x0",
    extraData: data(12),
    gasLimit: "0x1c9c380",
    gasUsed: quantity(between(10_000_000, 29_000_000)),
    hash: BLOCK_HASH,
    logsBloom: data(256),
    miner: data(20),
    mixHash: data(32),
    nonce: "0x0000000000000000",
    number: quantity(BLOCK_NUMBER),
    parentBeaconBlockRoot: data(32),
    parentHash: data(32),
    receiptsRoot: data(32),
    sha3Uncles: "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347",
    size: quantity(between(60_000, 180_000)),
    stateRoot: data(32),
    timestamp: quantity(TIMESTAMP),
    transactions: txs,
    transactionsRoot: data(32),
    uncles: [],
    withdrawals: Array.from({ length: 16 }, (_, i) => ({
      index: quantity(60_000_000 + i),
      validatorIndex: quantity(between(1, 1_200_000)),
      address: data(20),
      amount: quantity(between(10_000_000, 20_000_000)),
    })),
    withdrawalsRoot: data(32),
  };
}

/** Logs as eth_getLogs answers them; `count` logs spread over blocks of 200 logs. */
export function logs(count: number): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const tokens = Array.from({ length: 40 }, () => data(20));
  const events = Array.from({ length: 12 }, () => data(32));
  let blockHash = data(32);
  let txHash = data(32);
  for (let i = 0; i < count; i++) {
    if (i % 200 === 0) blockHash = data(32);
    if (i % 3 === 0) txHash = data(32);
    const topics = [events[between(0, events.length - 1)] as string];
    for (let t = between(0, 2); t > 0; t--) topics.push(abiWords(1));
    out.push({
      address: tokens[between(0, tokens.length - 1)],
      topics,
      data: abiWords(between(1, 6)),
      blockNumber: quantity(BLOCK_NUMBER - 50 + Math.floor(i / 200)),
      transactionHash: txHash,
      transactionIndex: quantity(between(0, 200)),
      blockHash,
      logIndex: quantity(i % 200),
      removed: false,
    });
  }
  return out;
}

export function receipt(): Record<string, unknown> {
  return {
    blockHash: BLOCK_HASH,
    blockNumber: quantity(BLOCK_NUMBER),
    contractAddress: null,
    cumulativeGasUsed: quantity(between(1_000_000, 20_000_000)),
    effectiveGasPrice: quantity(between(8, 60) * 1_000_000_000),
    from: data(20),
    gasUsed: quantity(between(21_000, 300_000)),
    logs: logs(3),
    logsBloom: data(256),
    status: "0x1",
    to: data(20),
    transactionHash: data(32),
    transactionIndex: "0x5",
    type: "0x2",
  };
}

/** The results the canned upstream serves, as JSON text, by name. */
export interface CannedResults {
  balance: string;
  blockNumber: string;
  chainId: string;
  call: string;
  block150: string;
  logs10k: string;
  receipt: string;
  /** The block the canned node calls finalized (eth_getBlockByNumber("finalized")). */
  finalized: string;
}

/** The balance the canned upstream answers to every eth_getBalance, wei. */
export const CANNED_BALANCE = 123_456_789_000_000_000n;

export function cannedResults(): CannedResults {
  return {
    balance: JSON.stringify(quantity(CANNED_BALANCE)),
    blockNumber: JSON.stringify(quantity(BLOCK_NUMBER + 100)),
    chainId: '"0x1"',
    call: JSON.stringify(abiWords(1)),
    block150: JSON.stringify(block(150)),
    logs10k: JSON.stringify(logs(10_000)),
    receipt: JSON.stringify(receipt()),
    finalized: JSON.stringify({ ...block(0), number: quantity(BLOCK_NUMBER + 36) }),
  };
}
