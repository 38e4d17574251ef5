/**
 * Plain JSON-RPC over HTTP with fetch, for assertions on the exact text a
 * server wrote (ids, error objects, status codes) that a client library
 * would normalise away.
 */

export interface RawReply {
  status: number;
  /** The response body exactly as received. */
  text: string;
  /** The body parsed (undefined when it is not JSON). */
  json: unknown;
}

/** POSTs `body` (sent as is when a string, else JSON-encoded) to `url`. */
export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<RawReply> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

export interface JsonRpcReply {
  jsonrpc: string;
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/** One call; resolves with the whole reply object (result or error). */
export async function rpcReply(url: string, method: string, params: unknown[]): Promise<JsonRpcReply> {
  const reply = await postJson(url, { jsonrpc: "2.0", id: 1, method, params });
  if (reply.status !== 200) throw new Error(`${method}: HTTP ${reply.status}: ${reply.text}`);
  return reply.json as JsonRpcReply;
}

/** One call; resolves with the result, rejects when the node answered an error. */
export async function rpcResult(url: string, method: string, params: unknown[]): Promise<unknown> {
  const reply = await rpcReply(url, method, params);
  if (reply.error !== undefined) throw new Error(`${method}: ${reply.error.code} ${reply.error.message}`);
  return reply.result;
}

/**
 * The text of the top-level "result" member of a reply, byte for byte.
 * Works for the replies of nodes and nodegate, which write jsonrpc and id first.
 */
export function resultText(replyText: string): string {
  const marker = '"result":';
  const start = replyText.indexOf(marker);
  if (start < 0) throw new Error(`no result in ${replyText.slice(0, 200)}`);
  const end = replyText.lastIndexOf("}");
  return replyText.slice(start + marker.length, end).trim();
}
