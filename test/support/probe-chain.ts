/**
 * Puts the Probe contract on a fresh Anvil and writes to it, talking to Anvil
 * directly (transactions are not nodegate's business): what the read
 * sessions then look up through nodegate.
 */
import { type Address, createPublicClient, createWalletClient, type Hash, type Hex, http, type TransactionReceipt } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { artifact } from "./contracts.js";

/** Anvil's first development account. */
export const ANVIL_KEY_0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

export interface ProbeChain {
  address: Address;
  sender: Address;
  /** The value store() wrote to slot 0 and to balances[sender]. */
  storedValue: bigint;
  /** The note store() logged. */
  note: Hex;
  storeTx: Hash;
  storeReceipt: TransactionReceipt;
}

export async function seedProbeChain(anvilUrl: string): Promise<ProbeChain> {
  const account = privateKeyToAccount(ANVIL_KEY_0);
  const wallet = createWalletClient({ account, chain: foundry, transport: http(anvilUrl) });
  const reader = createPublicClient({ chain: foundry, transport: http(anvilUrl) });
  const probe = artifact("Probe");
  const deployTx = await wallet.deployContract({ abi: probe.abi, bytecode: probe.bytecode, args: [7n] });
  const deployed = await reader.waitForTransactionReceipt({ hash: deployTx });
  const address = deployed.contractAddress as Address;
  const storedValue = 42n;
  const note: Hex = "0xbeef";
  const storeTx = await wallet.writeContract({ address, abi: probe.abi, functionName: "store", args: [storedValue, note] });
  const storeReceipt = await reader.waitForTransactionReceipt({ hash: storeTx });
  if (storeReceipt.status !== "success") throw new Error("store() failed on Anvil");
  return { address, sender: account.address, storedValue, note, storeTx, storeReceipt };
}
