/** Native-path calls as a legacy caller makes them: POST JSON, read status, headers and body. */

export interface RpcReply {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint: test convenience
  json: any;
}

export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<RpcReply> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export function rpc(method: string, params: unknown[] | Record<string, unknown> = [], id: number | string = 1) {
  return { jsonrpc: "2.0", id, method, params };
}

export function basic(secret: string, user = ""): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${user}:${secret}`).toString("base64")}` };
}
