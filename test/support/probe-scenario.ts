/**
 * Puts the Probe contract on a fresh Anvil and writes the chain state the
 * end-to-end tests read back: storage in a plain slot and a mapping, events,
 * and one transaction of each common type, each mined in its own block.
 */
import {
  type Address,
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  type Hash,
  type Hex,
  http,
  keccak256,
  type PublicClient,
  toHex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { type Artifact, artifact } from "./contracts.js";

/** Anvil's first default account, funded at genesis (a published test key). */
export const ANVIL_FIRST_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

/** Storage slot of Probe.stored, as a 32-byte position. */
export const STORED_SLOT: Hex = toHex(0, { size: 32 });

/** Storage position of Probe.balances[owner]: keccak256(abi.encode(owner, uint256(1))). */
export function balanceSlot(owner: Address): Hex {
  return keccak256(encodeAbiParameters([{ type: "address" }, { type: "uint256" }], [owner, 1n]));
}

/** A mined transaction and the block that holds it. */
export interface Mined {
  hash: Hash;
  blockNumber: bigint;
  blockHash: Hash;
}

export interface ProbeScenario {
  probe: Artifact;
  /** The sending account (Anvil's first). */
  sender: Address;
  /** The deployed Probe. */
  address: Address;
  /** Value the constructor stored in slot 0. */
  initialValue: bigint;
  /** Contract creation, an EIP-1559 (type 0x2) transaction. */
  deploy: Mined;
  /** store(42, 0xbeef) as a legacy (type 0x0) transaction. */
  firstStore: Mined & { value: bigint; note: Hex };
  /** store(99, 40 bytes) as an EIP-1559 (type 0x2) transaction. */
  secondStore: Mined & { value: bigint; note: Hex };
  /** emitAnonymous(5) as an EIP-2930 (type 0x1) transaction with an access list. */
  anonymous: Mined & { value: bigint };
  /** A public client talking to Anvil directly. */
  anvil: PublicClient;
}

export async function deployProbeScenario(anvilUrl: string): Promise<ProbeScenario> {
  const probe = artifact("Probe");
  const account = privateKeyToAccount(ANVIL_FIRST_KEY);
  const wallet = createWalletClient({ account, chain: foundry, transport: http(anvilUrl) });
  const anvil = createPublicClient({ chain: foundry, transport: http(anvilUrl) }) as PublicClient;
  const mined = async (hash: Hash): Promise<Mined> => {
    const receipt = await anvil.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    if (receipt.status !== "success") throw new Error(`transaction ${hash} failed`);
    return { hash, blockNumber: receipt.blockNumber, blockHash: receipt.blockHash };
  };

  const initialValue = 7n;
  const deployHash = await wallet.deployContract({ abi: probe.abi, bytecode: probe.bytecode, args: [initialValue] });
  const deploy = await mined(deployHash);
  const receipt = await anvil.getTransactionReceipt({ hash: deployHash });
  const address = receipt.contractAddress as Address;

  const firstNote: Hex = "0xbeef";
  const firstStore = await mined(
    await wallet.writeContract({ address, abi: probe.abi, functionName: "store", args: [42n, firstNote], type: "legacy" }),
  );
  const secondNote: Hex = `0x${"ab".repeat(40)}`;
  const secondStore = await mined(
    await wallet.writeContract({ address, abi: probe.abi, functionName: "store", args: [99n, secondNote], type: "eip1559" }),
  );
  const anonymous = await mined(
    await wallet.writeContract({
      address,
      abi: probe.abi,
      functionName: "emitAnonymous",
      args: [5n],
      type: "eip2930",
      accessList: [{ address, storageKeys: [STORED_SLOT] }],
    }),
  );

  return {
    probe,
    sender: account.address,
    address,
    initialValue,
    deploy,
    firstStore: { ...firstStore, value: 42n, note: firstNote },
    secondStore: { ...secondStore, value: 99n, note: secondNote },
    anonymous: { ...anonymous, value: 5n },
    anvil,
  };
}
