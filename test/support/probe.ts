/** Deploys the Probe test contract to an Anvil node, straight to the node (not through nodegate). */
import { type Address, createPublicClient, createWalletClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { artifact } from "./contracts.js";

/** Anvil's first well-known development account. */
export const ANVIL_KEY_0: Hex = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

export async function deployProbe(nodeUrl: string, initial = 7n) {
  const account = privateKeyToAccount(ANVIL_KEY_0);
  const wallet = createWalletClient({ account, chain: foundry, transport: http(nodeUrl) });
  const client = createPublicClient({ chain: foundry, transport: http(nodeUrl) });
  const { abi, bytecode } = artifact("Probe");
  const hash = await wallet.deployContract({ abi, bytecode, args: [initial] });
  const receipt = await client.waitForTransactionReceipt({ hash });
  return { address: receipt.contractAddress as Address, abi, wallet, client, account, deployHash: hash };
}
