/**
 * What the soak asks and what each answer must be. Every call's answer can
 * be checked on its own: block n has number n and the hash Anvil gave it;
 * SHA-256 (precompile 0x02) of fresh random bytes is computed locally; each
 * test account holds its own balance; the chain id is Anvil's.
 */
import { createHash, randomBytes, randomInt } from "node:crypto";

export type Probe =
  | { kind: "block"; n: number }
  | { kind: "sha256"; data: Buffer }
  | { kind: "balance"; i: number }
  | { kind: "chainId" };

/** What the chain holds, read from Anvil directly before the soak. */
export interface Chain {
  /** hashes[n] is block n's hash. */
  hashes: string[];
  accounts: { address: string; wei: bigint }[];
}

export const SHA256_PRECOMPILE = `0x${"00".repeat(19)}02`;
export const CHAIN_ID = 31337n;

export function nextProbe(chain: Chain): Probe {
  const r = randomInt(10);
  if (r < 4) return { kind: "block", n: randomInt(chain.hashes.length) };
  if (r < 7) return { kind: "sha256", data: randomBytes(8 + randomInt(56)) };
  if (r < 9) return { kind: "balance", i: randomInt(chain.accounts.length) };
  return { kind: "chainId" };
}

const hex = (n: number | bigint) => `0x${n.toString(16)}`;

/** The JSON-RPC method and params of a probe. */
export function jsonRpcCall(probe: Probe, chain: Chain): { method: string; params: unknown[] } {
  switch (probe.kind) {
    case "block":
      return { method: "eth_getBlockByNumber", params: [hex(probe.n), false] };
    case "sha256":
      return { method: "eth_call", params: [{ to: SHA256_PRECOMPILE, data: `0x${probe.data.toString("hex")}` }, "latest"] };
    case "balance":
      return { method: "eth_getBalance", params: [(chain.accounts[probe.i] as { address: string }).address, "latest"] };
    case "chainId":
      return { method: "eth_chainId", params: [] };
  }
}

export function sha256Hex(data: Buffer): string {
  return `0x${createHash("sha256").update(data).digest("hex")}`;
}

/** Whether a native result is the right answer to the probe. */
export function nativeResultMatches(probe: Probe, result: unknown, chain: Chain): boolean {
  switch (probe.kind) {
    case "block": {
      const block = result as { number?: string; hash?: string } | null;
      return block?.number === hex(probe.n) && block.hash === chain.hashes[probe.n];
    }
    case "sha256":
      return result === sha256Hex(probe.data);
    case "balance":
      return result === hex((chain.accounts[probe.i] as { wei: bigint }).wei);
    case "chainId":
      return result === hex(CHAIN_ID);
  }
}
