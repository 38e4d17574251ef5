/**
 * A native-path WebSocket client for subscription tests: it sends requests,
 * pairs answers by id, and sorts eth_subscription notifications by
 * subscription id, keeping every message's arrival order.
 */
import WebSocket from "ws";

export interface JsonRpcAnswer {
  id: number;
  result?: unknown;
  error?: { code: number; message: string };
}

export interface Notification {
  subscription: string;
  // biome-ignore lint: test convenience
  result: any;
}

export interface NativeSubscriber {
  readonly socket: WebSocket;
  /** Every message in arrival order, parsed. */
  readonly messages: unknown[];
  request(method: string, params?: unknown[]): Promise<JsonRpcAnswer>;
  /** eth_subscribe; resolves with the subscription id, throws on an error answer. */
  subscribe(...params: unknown[]): Promise<string>;
  /** The results notified for a subscription so far. */
  // biome-ignore lint: test convenience
  results(id: string): any[];
  /** Waits until `count` notifications arrived for the subscription. */
  // biome-ignore lint: test convenience
  waitFor(id: string, count: number, timeoutMs?: number): Promise<any[]>;
  /** Resolves when the connection closes, with its code and reason. */
  readonly closed: Promise<{ code: number; reason: string }>;
  close(): Promise<void>;
}

export async function openNativeSubscriber(url: string): Promise<NativeSubscriber> {
  const socket = new WebSocket(url, { perMessageDeflate: false });
  const messages: unknown[] = [];
  const answers = new Map<number, (a: JsonRpcAnswer) => void>();
  const notifications = new Map<string, unknown[]>();
  const waiters = new Set<() => void>();
  let nextId = 1;
  socket.on("message", (data: Buffer) => {
    const message = JSON.parse(data.toString("utf8")) as { id?: number; method?: string; params?: Notification };
    messages.push(message);
    if (message.method === "eth_subscription" && message.params !== undefined) {
      const list = notifications.get(message.params.subscription) ?? [];
      list.push(message.params.result);
      notifications.set(message.params.subscription, list);
    } else if (typeof message.id === "number") {
      answers.get(message.id)?.(message as JsonRpcAnswer);
      answers.delete(message.id);
    }
    for (const wake of waiters) wake();
  });
  socket.on("error", () => {});
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on("close", (code, reason) => {
      resolve({ code, reason: reason.toString("utf8") });
      for (const wake of waiters) wake();
    }),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  const request = (method: string, params: unknown[] = []): Promise<JsonRpcAnswer> => {
    const id = nextId++;
    return new Promise((resolve) => {
      answers.set(id, resolve);
      socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  };
  return {
    socket,
    messages,
    request,
    async subscribe(...params) {
      const answer = await request("eth_subscribe", params);
      if (answer.error !== undefined) throw new Error(`eth_subscribe failed: ${answer.error.code} ${answer.error.message}`);
      return answer.result as string;
    },
    results: (id) => notifications.get(id) ?? [],
    async waitFor(id, count, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while ((notifications.get(id)?.length ?? 0) < count) {
        if (socket.readyState === WebSocket.CLOSED) throw new Error(`connection closed after ${notifications.get(id)?.length ?? 0} of ${count} notifications`);
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`${notifications.get(id)?.length ?? 0} of ${count} notifications within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, left);
          function done(): void {
            clearTimeout(timer);
            waiters.delete(done);
            resolve();
          }
          waiters.add(done);
        });
      }
      return (notifications.get(id) ?? []).slice(0, count);
    },
    closed,
    close: async () => {
      if (socket.readyState !== WebSocket.CLOSED) socket.close();
      await closed;
    },
  };
}
