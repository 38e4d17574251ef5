/**
 * A WebSocket relay on 127.0.0.1 between nodegate and a real node's
 * WebSocket: every message passes through unchanged, the requests nodegate
 * sends are recorded (so a test can count eth_subscribe calls), and the test
 * can sever every connection (a dropped upstream socket) or refuse new ones
 * (a node that stays unreachable for a while).
 */
import type { AddressInfo } from "node:net";
import WebSocket, { WebSocketServer } from "ws";

export interface RelayedRequest {
  method: string;
  params: unknown;
}

export interface WsRelay {
  url: string;
  /** Requests nodegate sent to the node, in order. */
  readonly requests: readonly RelayedRequest[];
  count(method: string): number;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Connections open now. */
  readonly open: number;
  /** Drops every open connection on both sides, without a close handshake. */
  sever(): void;
  /** While on, new connections are refused during the handshake (HTTP 503). */
  refuse(refuse: boolean): void;
  /** Answers the next `times` requests for `method` with a JSON-RPC internal error instead of passing them on. */
  failNext(method: string, times: number): void;
  /** Spoils the next `times` logs the node pushes (a logIndex unquoted: not JSON), as a faulty node sends them. */
  spoilNextLogs(times: number): void;
  /** Pushed logs spoiled so far. */
  readonly spoiled: number;
  /** Notifications the node pushed (eth_subscription), on every subscription. */
  readonly pushed: number;
  /** Whether the node has answered a logs subscription of nodegate's (its logs are pushed from then on). */
  readonly logsSubscribed: boolean;
  /** The logs the node pushed on nodegate's logs subscriptions, in order. */
  readonly pushedLogs: readonly Record<string, unknown>[];
  /**
   * While on, the heads the node pushes are held back (its logs still pass), as when a block's logs come well before
   * its head; turned off, the held heads go on in order.
   */
  holdHeads(hold: boolean): void;
  /** The same for the logs the node pushes (its heads still pass), as when a block's logs come after its head. */
  holdLogs(hold: boolean): void;
  /** Each log the node pushes goes on `ms` after it came, in order (0: at once), as from a node whose logs lag its heads. */
  delayLogs(ms: number): void;
  /** Pushes `log` on nodegate's latest logs subscription, as the node would (a geth-style removal, say). */
  pushLog(log: Record<string, unknown>): void;
  close(): Promise<void>;
}

function parseRequests(text: string): RelayedRequest[] {
  try {
    const parsed = JSON.parse(text) as unknown;
    const list = Array.isArray(parsed) ? parsed : [parsed];
    return list.map((r) => ({ method: String((r as { method?: unknown }).method), params: (r as { params?: unknown }).params }));
  } catch {
    return [{ method: "(unparsable)", params: undefined }];
  }
}

export async function startWsRelay(targetUrl: string): Promise<WsRelay> {
  const requests: RelayedRequest[] = [];
  const pairs = new Set<{ client: WebSocket; node: WebSocket }>();
  let accepted = 0;
  let refusing = false;
  const failing = new Map<string, number>();
  let toSpoil = 0;
  let holdingHeads = false;
  const heldHeads: { client: WebSocket; text: string }[] = [];
  const isHeadPush = (text: string): boolean => text.includes('"eth_subscription"') && text.includes('"parentHash"');
  let holdingLogs = false;
  const heldLogs: { client: WebSocket; text: string }[] = [];
  const isLogPush = (text: string): boolean => text.includes('"eth_subscription"') && text.includes('"logIndex"');
  let logDelayMs = 0;
  let spoiled = 0;
  const pushedLogs: Record<string, unknown>[] = [];
  let pushed = 0;
  /** Request ids of eth_subscribe("logs") calls, and the subscription ids the node gave them (with their connection). */
  const logsRequests = new Set<unknown>();
  let logsSubscription: { id: string; client: WebSocket } | undefined;
  const watchLogs = (client: WebSocket, text: string): void => {
    if (!text.includes('"logs"') && !text.includes('"eth_subscription"') && logsRequests.size === 0) return;
    let message: { id?: unknown; method?: unknown; params?: unknown; result?: unknown };
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      return;
    }
    if (message.method === "eth_subscribe") {
      if (Array.isArray(message.params) && message.params[0] === "logs") logsRequests.add(message.id);
    } else if (message.method === "eth_subscription") {
      pushed++;
      const params = message.params as { subscription?: unknown; result?: unknown } | undefined;
      if (logsSubscription !== undefined && params?.subscription === logsSubscription.id) pushedLogs.push(params.result as Record<string, unknown>);
    } else if (message.id !== undefined && logsRequests.delete(message.id) && typeof message.result === "string") {
      logsSubscription = { id: message.result, client };
    }
  };
  const spoil = (text: string): string => {
    if (toSpoil === 0 || !text.includes('"eth_subscription"')) return text;
    const spoilt = text.replace(/"logIndex":"(0x[0-9a-f]+)"/, '"logIndex":$1');
    if (spoilt === text) return text;
    toSpoil--;
    spoiled++;
    return spoilt;
  };
  /** The error answer for a request to fail, or undefined to pass it on. */
  const failure = (text: string): string | undefined => {
    let request: { id?: unknown; method?: unknown };
    try {
      request = JSON.parse(text) as { id?: unknown; method?: unknown };
    } catch {
      return undefined;
    }
    const left = typeof request.method === "string" ? (failing.get(request.method) ?? 0) : 0;
    if (left === 0) return undefined;
    failing.set(request.method as string, left - 1);
    return JSON.stringify({ jsonrpc: "2.0", id: request.id, error: { code: -32603, message: "relay: failed on purpose" } });
  };
  const server = new WebSocketServer({
    host: "127.0.0.1",
    port: 0,
    perMessageDeflate: false,
    verifyClient: (_info, done) => done(!refusing, 503),
  });
  server.on("connection", (client) => {
    accepted++;
    const node = new WebSocket(targetUrl, { perMessageDeflate: false });
    const pair = { client, node };
    pairs.add(pair);
    const waiting: string[] = [];
    client.on("message", (data: Buffer) => {
      const text = data.toString("utf8");
      requests.push(...parseRequests(text));
      watchLogs(client, text);
      const failed = failure(text);
      if (failed !== undefined) {
        client.send(failed);
        return;
      }
      if (node.readyState === WebSocket.OPEN) node.send(text);
      else waiting.push(text);
    });
    node.on("open", () => {
      for (const text of waiting.splice(0)) node.send(text);
    });
    node.on("message", (data: Buffer) => {
      const text = data.toString("utf8");
      watchLogs(client, text);
      if (holdingHeads && isHeadPush(text)) heldHeads.push({ client, text });
      else if (holdingLogs && isLogPush(text)) heldLogs.push({ client, text });
      else if (logDelayMs > 0 && isLogPush(text))
        setTimeout(() => {
          if (client.readyState === WebSocket.OPEN) client.send(spoil(text));
        }, logDelayMs);
      else if (client.readyState === WebSocket.OPEN) client.send(spoil(text));
    });
    const drop = (): void => {
      pairs.delete(pair);
      client.terminate();
      node.terminate();
    };
    client.on("close", drop);
    node.on("close", drop);
    client.on("error", drop);
    node.on("error", drop);
  });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const { port } = server.address() as AddressInfo;
  const sever = (): void => {
    for (const pair of [...pairs]) {
      pairs.delete(pair);
      pair.client.terminate();
      pair.node.terminate();
    }
  };
  return {
    url: `ws://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    count: (method) => requests.filter((r) => r.method === method).length,
    get accepted() {
      return accepted;
    },
    get open() {
      return pairs.size;
    },
    sever,
    refuse(refuse) {
      refusing = refuse;
    },
    failNext(method, times) {
      failing.set(method, times);
    },
    holdHeads(hold) {
      holdingHeads = hold;
      if (hold) return;
      for (const { client, text } of heldHeads.splice(0)) if (client.readyState === WebSocket.OPEN) client.send(text);
    },
    holdLogs(hold) {
      holdingLogs = hold;
      if (hold) return;
      for (const { client, text } of heldLogs.splice(0)) if (client.readyState === WebSocket.OPEN) client.send(text);
    },
    delayLogs(ms) {
      logDelayMs = ms;
    },
    spoilNextLogs(times) {
      toSpoil = times;
    },
    get spoiled() {
      return spoiled;
    },
    get pushed() {
      return pushed;
    },
    get logsSubscribed() {
      return logsSubscription !== undefined;
    },
    get pushedLogs() {
      return pushedLogs;
    },
    pushLog(log) {
      const to = logsSubscription;
      if (to === undefined || to.client.readyState !== WebSocket.OPEN) throw new Error("no logs subscription to push on");
      to.client.send(JSON.stringify({ jsonrpc: "2.0", method: "eth_subscription", params: { subscription: to.id, result: log } }));
    },
    close: () =>
      new Promise<void>((resolve) => {
        sever();
        server.close(() => resolve());
      }),
  };
}
