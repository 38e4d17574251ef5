/**
 * Makes chain events on a real Anvil for subscription tests, talking to
 * Anvil directly: mine empty blocks, emit Probe events in their own blocks,
 * reorganize the chain, and read back the canonical truth (blocks and logs)
 * to compare what subscribers received against.
 */
import { type Address, encodeFunctionData, type Hash, type Hex } from "viem";
import { deployProbe } from "./probe.js";

export interface RpcLog {
  address: Hex;
  blockNumber: Hex;
  blockHash: Hash;
  logIndex: Hex;
  transactionHash: Hash;
  removed?: boolean;
  topics: Hex[];
  data: Hex;
}

export interface ChainDriver {
  url: string;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  blockNumber(): Promise<number>;
  /** Mines `n` empty blocks. */
  mine(n: number): Promise<void>;
  /** A deployed Probe contract. */
  probe(): Promise<Probe>;
  /** The canonical hash of each block from..to, in order. */
  hashes(from: number, to: number): Promise<Hash[]>;
  /** eth_getLogs straight from Anvil (no limits there). */
  logs(filter: Record<string, unknown>): Promise<RpcLog[]>;
}

export interface Probe {
  address: Address;
  /** store(value, note): one Stored log, mined in its own block; resolves with that block's number. */
  store(value: bigint, note?: Hex): Promise<number>;
  /** storeMany(count): `count` Stored logs in one block. */
  storeMany(count: number): Promise<number>;
  /** The calldata of store(value, note), for transactions built by hand (anvil_reorg). */
  storeData(value: bigint, note?: Hex): Hex;
}

export function chainDriver(url: string): ChainDriver {
  let id = 1;
  const rpc = async <T>(method: string, params: unknown[] = []): Promise<T> => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: id++, method, params }),
    });
    const body = (await res.json()) as { result?: T; error?: { message: string } };
    if (body.error !== undefined) throw new Error(`${method}: ${body.error.message}`);
    return body.result as T;
  };
  return {
    url,
    rpc,
    blockNumber: async () => Number(BigInt(await rpc<string>("eth_blockNumber"))),
    mine: async (n) => {
      await rpc("anvil_mine", [`0x${n.toString(16)}`]);
    },
    async probe() {
      const p = await deployProbe(url);
      const mined = async (hash: Hash): Promise<number> => {
        const receipt = await p.client.waitForTransactionReceipt({ hash, pollingInterval: 10 });
        if (receipt.status !== "success") throw new Error(`transaction ${hash} failed`);
        return Number(receipt.blockNumber);
      };
      return {
        address: p.address,
        store: async (value, note = "0x") =>
          mined(await p.wallet.writeContract({ address: p.address, abi: p.abi, functionName: "store", args: [value, note] })),
        storeMany: async (count) =>
          mined(await p.wallet.writeContract({ address: p.address, abi: p.abi, functionName: "storeMany", args: [BigInt(count)], gas: 28_000_000n })),
        storeData: (value, note = "0x") => encodeFunctionData({ abi: p.abi, functionName: "store", args: [value, note] }),
      };
    },
    async hashes(from, to) {
      const blocks = await Promise.all(
        Array.from({ length: to - from + 1 }, (_, i) => rpc<{ hash: Hash }>("eth_getBlockByNumber", [`0x${(from + i).toString(16)}`, false])),
      );
      return blocks.map((b) => b.hash);
    },
    logs: (filter) => rpc<RpcLog[]>("eth_getLogs", [filter]),
  };
}
