/**
 * A raw WebSocket client for envelope tests: sends exact text (or bytes) and
 * reads each message as the text the server wrote, in arrival order.
 */
import WebSocket from "ws";
import { recordSeen } from "./secret-scan.js";

export interface WsSession {
  socket: WebSocket;
  send(data: string | Buffer): void;
  /** The next message's text (waits for one). */
  next(): Promise<string>;
  /** The next message parsed as JSON. */
  nextJson<T = unknown>(): Promise<T>;
  /** Messages received and not yet read. */
  readonly queued: number;
  /** Resolves with the close code when the connection closes. */
  closed: Promise<number>;
  close(): Promise<void>;
}

export function openWsSession(url: string, options: WebSocket.ClientOptions = {}): Promise<WsSession> {
  const socket = new WebSocket(url, options);
  const queue: string[] = [];
  const waiters: ((text: string) => void)[] = [];
  socket.on("message", (data: Buffer) => {
    const text = data.toString("utf8");
    recordSeen("WebSocket message", text);
    const waiter = waiters.shift();
    if (waiter) waiter(text);
    else queue.push(text);
  });
  const closed = new Promise<number>((resolve) =>
    socket.on("close", (code, reason) => {
      recordSeen("WebSocket close reason", reason.toString());
      resolve(code);
    }),
  );
  socket.on("error", () => {}); // the close code is what tests look at
  const session: WsSession = {
    socket,
    send: (data) => socket.send(data, { binary: typeof data !== "string" }),
    next: () => {
      const text = queue.shift();
      if (text !== undefined) return Promise.resolve(text);
      return new Promise((resolve) => waiters.push(resolve));
    },
    nextJson: async <T>() => JSON.parse(await session.next()) as T,
    get queued() {
      return queue.length;
    },
    closed,
    close: async () => {
      if (socket.readyState !== WebSocket.CLOSED) socket.close();
      await closed;
    },
  };
  return new Promise((resolve, reject) => {
    socket.once("open", () => resolve(session));
    socket.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused with HTTP ${res.statusCode}`)));
    socket.once("error", reject);
  });
}
