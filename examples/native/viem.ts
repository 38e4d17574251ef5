/**
 * The native JSON-RPC path with viem, as an existing dapp or backend uses a
 * provider: only the URL changes (HTTP at /v3/<KEY>, WebSocket at /ws/v3/<KEY>).
 *
 * Against `npm start` (it prints the URLs and a development key):
 *   NODEGATE_URL=http://127.0.0.1:8080 NODEGATE_KEY=<key> npx tsx examples/native/viem.ts
 */
import { type Address, createPublicClient, http, webSocket } from "viem";

const url = process.env.NODEGATE_URL ?? "http://127.0.0.1:8080";
const key = process.env.NODEGATE_KEY;
const account = (process.env.NODEGATE_ADDRESS ?? "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266") as Address;

async function main(): Promise<void> {
  if (!key) throw new Error("set NODEGATE_KEY to an API key (the one in NODEGATE_API_KEYS, or the development key npm start prints when none is set)");
  const client = createPublicClient({ transport: http(`${url}/v3/${key}`) });
  console.log(`chain id: ${await client.getChainId()}`);
  const block = await client.getBlock({ blockTag: "latest" });
  console.log(`latest block: ${block.number} (hash ${block.hash}, ${block.transactions.length} transactions)`);
  console.log(`balance of ${account}: ${await client.getBalance({ address: account })} wei`);

  const overWs = createPublicClient({ transport: webSocket(`${url.replace(/^http/, "ws")}/ws/v3/${key}`) });
  console.log(`block number over WebSocket: ${await overWs.getBlockNumber()}`);
  await overWs.transport.getRpcClient().then((rpc) => rpc.close());
}

main().catch((err: unknown) => {
  // viem's errors carry nodegate's JSON-RPC error message in `details`.
  console.error(`nodegate call failed: ${(err as { details?: string }).details ?? (err as Error).message}`);
  process.exit(1);
});
