/** Talks to a node directly, past nodegate: how a test drives Anvil (mining, automine, sending). */

/** One JSON-RPC call to the node; resolves with the result (undefined for an error). */
export async function nodeRpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return ((await res.json()) as { result?: unknown }).result;
}
