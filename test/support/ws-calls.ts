/**
 * JSON-RPC calls over one native WebSocket, many at once: each answer is
 * matched to its call by id (answers come back in any order), and an answer
 * whose id matches no call in flight is kept, so a test can see it.
 */
import WebSocket from "ws";
import { recordSeen } from "./secret-scan.js";

export interface WsCaller {
  /** Sends one request with a fresh numeric id; resolves with the parsed answer. */
  call(method: string, params: unknown): Promise<{ id: unknown; result?: unknown; error?: { code: number; message: string; data?: unknown } }>;
  /** Answers that matched no call in flight (wrong or repeated ids). */
  readonly strays: string[];
  /** Calls sent and not yet answered. */
  readonly pending: number;
  /** Resolves with the close code when the connection closes. */
  readonly closed: Promise<number>;
  close(): Promise<void>;
}

export async function openWsCaller(url: string, options: WebSocket.ClientOptions = {}): Promise<WsCaller> {
  const socket = new WebSocket(url, { perMessageDeflate: false, ...options });
  const waiting = new Map<number, { resolve: (v: never) => void; reject: (e: Error) => void }>();
  const strays: string[] = [];
  let nextId = 1;
  const closed = new Promise<number>((resolve) =>
    socket.on("close", (code) => {
      for (const w of waiting.values()) w.reject(new Error(`connection closed with ${code} before the answer`));
      waiting.clear();
      resolve(code);
    }),
  );
  socket.on("message", (data: Buffer) => {
    const text = data.toString("utf8");
    recordSeen("WebSocket message", text);
    let id: unknown;
    try {
      id = (JSON.parse(text) as { id?: unknown }).id;
    } catch {
      // Not JSON: no call can be matched to it, so every call in flight fails with it.
      strays.push(text);
      for (const w of waiting.values()) w.reject(new Error(`an answer that is not JSON: ${text.slice(0, 200)}`));
      waiting.clear();
      return;
    }
    const w = typeof id === "number" ? waiting.get(id) : undefined;
    if (w === undefined) {
      strays.push(text);
      return;
    }
    waiting.delete(id as number);
    w.resolve(JSON.parse(text) as never);
  });
  socket.on("error", () => {}); // the close code tells what happened
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused with HTTP ${res.statusCode}`)));
    socket.once("error", reject);
  });
  return {
    call(method, params) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve: resolve as (v: never) => void, reject });
        socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
      });
    },
    strays,
    get pending() {
      return waiting.size;
    },
    closed,
    close: async () => {
      if (socket.readyState !== WebSocket.CLOSED) socket.close();
      await closed;
    },
  };
}
