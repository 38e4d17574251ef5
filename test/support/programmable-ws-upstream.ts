/**
 * A JSON-RPC node on a WebSocket at 127.0.0.1 whose answers and pushes a test
 * decides: a handler answers each call (it may hold an answer back by
 * returning a promise), eth_subscribe and eth_unsubscribe are kept by the
 * node itself, and `push` sends a notification to every subscription of a
 * kind, in the order the test calls it, as a real node pushes. For what Anvil
 * cannot be made to do on cue: push a reorganization's removals before its
 * new heads, or answer a read from a branch it has just left.
 */
import type { AddressInfo } from "node:net";
import type WebSocket from "ws";
import { WebSocketServer } from "ws";

export interface WsNodeRequest {
  method: string;
  params: unknown[];
}

/** `resultText`: the result as written, for what JSON.stringify cannot write (a number past 2^53). */
export type WsNodeAnswer = { result: unknown } | { resultText: string } | { error: { code: number; message: string } };

export type WsNodeHandler = (request: WsNodeRequest) => WsNodeAnswer | Promise<WsNodeAnswer>;

export interface ProgrammableWsUpstream {
  url: string;
  /** Calls received, eth_subscribe and eth_unsubscribe included, in order. */
  readonly requests: readonly WsNodeRequest[];
  count(method: string): number;
  /** Open subscriptions of `kind` ("newHeads", "logs", ...). */
  subscriptions(kind: string): number;
  /** Sends `result` to every open subscription of `kind`. */
  push(kind: string, result: unknown): void;
  /** Sends the result written as `resultText` to every open subscription of `kind`. */
  pushText(kind: string, resultText: string): void;
  close(): Promise<void>;
}

export async function startProgrammableWsUpstream(handler: WsNodeHandler): Promise<ProgrammableWsUpstream> {
  const requests: WsNodeRequest[] = [];
  const subscriptions = new Map<string, { kind: string; socket: WebSocket }>();
  let nextSubscription = 1;
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0, perMessageDeflate: false });

  const answer = async (socket: WebSocket, call: { id?: unknown; method?: unknown; params?: unknown }): Promise<string> => {
    const request: WsNodeRequest = { method: String(call.method), params: Array.isArray(call.params) ? call.params : [] };
    requests.push(request);
    let reply: WsNodeAnswer;
    if (request.method === "eth_subscribe") {
      const id = `0x${(nextSubscription++).toString(16).padStart(32, "0")}`;
      subscriptions.set(id, { kind: String(request.params[0]), socket });
      reply = { result: id };
    } else if (request.method === "eth_unsubscribe") {
      reply = { result: subscriptions.delete(String(request.params[0])) };
    } else {
      reply = await handler(request);
    }
    const payload =
      "resultText" in reply ? `"result":${reply.resultText}` : "result" in reply ? `"result":${JSON.stringify(reply.result)}` : `"error":${JSON.stringify(reply.error)}`;
    return `{"jsonrpc":"2.0","id":${JSON.stringify(call.id ?? null)},${payload}}`;
  };

  server.on("connection", (socket) => {
    socket.on("message", (data: Buffer) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(data.toString("utf8"));
      } catch {
        socket.send('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}');
        return;
      }
      const send = (text: string) => {
        if (socket.readyState === socket.OPEN) socket.send(text);
      };
      if (Array.isArray(parsed)) void Promise.all(parsed.map((call) => answer(socket, call as never))).then((texts) => send(`[${texts.join(",")}]`));
      else void answer(socket, parsed as never).then(send);
    });
    socket.on("close", () => {
      for (const [id, s] of subscriptions) if (s.socket === socket) subscriptions.delete(id);
    });
  });
  const pushText = (kind: string, resultText: string): void => {
    for (const [id, s] of subscriptions) {
      if (s.kind !== kind || s.socket.readyState !== s.socket.OPEN) continue;
      s.socket.send(`{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"${id}","result":${resultText}}}`);
    }
  };
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    count: (method) => requests.filter((r) => r.method === method).length,
    subscriptions: (kind) => [...subscriptions.values()].filter((s) => s.kind === kind).length,
    push: (kind, result) => pushText(kind, JSON.stringify(result)),
    pushText,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  };
}
