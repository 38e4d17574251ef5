/**
 * A JSON-RPC upstream on 127.0.0.1 whose answers a test decides: results,
 * node errors, raw bodies, HTTP statuses, delays, dropped connections, bodies
 * cut off part way, refused connections, or forwarding to a real node. It
 * records every request it receives, so tests can prove what nodegate sent
 * (or that it sent nothing).
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface UpstreamRequest {
  method: string;
  params: unknown;
  id: unknown;
  /** The raw body as received. */
  body: string;
  headers: http.IncomingHttpHeaders;
  path: string;
  /** True when the client closed the request before it was answered (it cancelled). */
  abandoned: boolean;
  /** The real node's answer, when the request was forwarded to one. */
  forwardedAnswer?: string;
  /** Set on each call of a JSON-RPC batch (one request per call is recorded, `body` its own text): how many calls the batch held. */
  batchOf?: number;
}

export type Answer =
  | { result: unknown }
  | { error: { code: number; message: string; data?: unknown } }
  /** A body sent as is, with a status (default 200) and extra headers. */
  | { raw: string; status?: number; headers?: Record<string, string> }
  /**
   * The first `bytes` bytes of `body`, then the connection ends: "reset"
   * announces the whole length (content-length) and destroys the socket;
   * "close" sends no length and closes cleanly, as an HTTP/1.0-style body
   * that ends with the connection.
   */
  | { cut: string; bytes: number; how: "reset" | "close" }
  /** Destroy the connection without answering. */
  | { destroy: true }
  /** Wait, then answer. */
  | { delayMs: number; then: Answer }
  /** Forward to a real node and relay its answer. */
  | { forward: string };

export type Handler = (request: UpstreamRequest) => Answer | Promise<Answer>;

export interface ProgrammableUpstream {
  url: string;
  port: number;
  requests: UpstreamRequest[];
  handler: Handler;
  /** Requests received for one method. */
  count(method: string): number;
  /** The request for `method` whose params are `params` (JSON text), once it has arrived (waits up to 5 s). */
  arrived(method: string, params: string): Promise<UpstreamRequest>;
  /** Connections open to it now. */
  readonly openConnections: number;
  /** Connections closed (by either side) since it started. */
  readonly closedConnections: number;
  /**
   * On: stops listening and drops every connection, so connecting fails with
   * ECONNREFUSED; off: listens on the same port again.
   */
  refuseConnections(refuse: boolean): Promise<void>;
  close(): Promise<void>;
}

async function forward(url: string, body: string): Promise<string> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
  return res.text();
}

export async function startProgrammableUpstream(handler: Handler, path = "/"): Promise<ProgrammableUpstream> {
  const sockets = new Set<Socket>();
  let closed = 0;
  const timers = new Set<NodeJS.Timeout>();
  const state: ProgrammableUpstream = {
    url: "",
    port: 0,
    requests: [],
    handler,
    count: (method) => state.requests.filter((r) => r.method === method).length,
    arrived: async (method, params) => {
      const find = () => state.requests.find((r) => r.method === method && JSON.stringify(r.params) === params);
      for (let i = 0; i < 500 && find() === undefined; i++) await new Promise((r) => setTimeout(r, 10));
      const request = find();
      if (request === undefined) throw new Error(`the node never received ${method} ${params}`);
      return request;
    },
    get openConnections() {
      return sockets.size;
    },
    get closedConnections() {
      return closed;
    },
    refuseConnections: async (refuse) => {
      if (refuse === !server.listening) return;
      if (refuse) {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const s of sockets) s.destroy();
        await closed;
      } else {
        await new Promise<void>((resolve) => server.listen(state.port, "127.0.0.1", () => resolve()));
      }
    },
    close: async () => {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  /** Waits `ms`, on a timer `close` clears. */
  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        timers.delete(t);
        resolve();
      }, ms);
      timers.add(t);
    });
  const answer = async (req: http.IncomingMessage, res: http.ServerResponse, body: string, request: UpstreamRequest, a: Answer): Promise<void> => {
    if ("delayMs" in a) {
      await wait(a.delayMs);
      if (res.destroyed) return;
      return answer(req, res, body, request, a.then);
    }
    if ("destroy" in a) {
      req.socket.destroy();
      return;
    }
    if ("forward" in a) {
      const text = await forward(a.forward, body);
      request.forwardedAnswer = text;
      res.writeHead(200, { "content-type": "application/json" }).end(text);
      return;
    }
    if ("raw" in a) {
      res.writeHead(a.status ?? 200, { "content-type": "application/json", ...a.headers }).end(a.raw);
      return;
    }
    if ("cut" in a) {
      const part = Buffer.from(a.cut).subarray(0, a.bytes);
      if (a.how === "reset") {
        res.writeHead(200, { "content-type": "application/json", "content-length": String(Buffer.byteLength(a.cut)) });
        res.write(part, () => req.socket.destroy());
      } else {
        // Written on the socket by hand: Node's server would frame the body (content-length or chunked).
        req.socket.end(Buffer.concat([Buffer.from("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n"), part]));
      }
      return;
    }
    const id = JSON.stringify(request.id ?? null);
    const payload = "result" in a ? `"result":${JSON.stringify(a.result)}` : `"error":${JSON.stringify(a.error)}`;
    res.writeHead(200, { "content-type": "application/json" }).end(`{"jsonrpc":"2.0","id":${id},${payload}}`);
  };
  /**
   * A batch, as a node answers one: each call is asked of the handler, and the answers (delays waited out together)
   * go back as an array. An answer that is not one call's (a cut, a dropped connection, a status other than 200, a
   * forward to a real node) is given to the whole request.
   */
  const answerBatch = async (req: http.IncomingMessage, res: http.ServerResponse, body: string, calls: unknown[]): Promise<void> => {
    const requests = calls.map((call): UpstreamRequest => {
      const c = (typeof call === "object" && call !== null ? call : {}) as { method?: string; params?: unknown; id?: unknown };
      return { method: String(c.method), params: c.params, id: c.id, body: JSON.stringify(call), headers: req.headers, path: req.url ?? "/", abandoned: false, batchOf: calls.length };
    });
    res.on("close", () => {
      if (!res.writableFinished) for (const r of requests) r.abandoned = true;
    });
    state.requests.push(...requests);
    const settle = async (a: Answer): Promise<Answer> => {
      if (!("delayMs" in a)) return a;
      await wait(a.delayMs);
      return settle(a.then);
    };
    const answers = await Promise.all(requests.map(async (r) => settle(await state.handler(r))));
    if (res.destroyed) return;
    const whole = answers.find((a) => "destroy" in a || "cut" in a || "forward" in a || ("raw" in a && ((a.status ?? 200) !== 200 || a.headers !== undefined)));
    if (whole !== undefined) return answer(req, res, body, requests[0] as UpstreamRequest, whole);
    const texts = answers.map((a, i) => {
      if ("raw" in a) return a.raw;
      const id = JSON.stringify((requests[i] as UpstreamRequest).id ?? null);
      return `{"jsonrpc":"2.0","id":${id},${"result" in a ? `"result":${JSON.stringify(a.result)}` : `"error":${JSON.stringify((a as { error: unknown }).error)}`}}`;
    });
    res.writeHead(200, { "content-type": "application/json" }).end(`[${texts.join(",")}]`);
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let parsed: { method?: string; params?: unknown; id?: unknown } = {};
      try {
        parsed = JSON.parse(body) as typeof parsed;
      } catch {
        // recorded as is; the handler decides
      }
      if (Array.isArray(parsed) && parsed.length > 0) {
        answerBatch(req, res, body, parsed).catch(() => req.socket.destroy());
        return;
      }
      const request: UpstreamRequest = {
        method: String(parsed.method),
        params: parsed.params,
        id: parsed.id,
        body,
        headers: req.headers,
        path: req.url ?? "/",
        abandoned: false,
      };
      res.on("close", () => {
        if (!res.writableFinished) request.abandoned = true;
      });
      state.requests.push(request);
      Promise.resolve(state.handler(request))
        .then((a) => answer(req, res, body, request, a))
        .catch(() => req.socket.destroy());
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.once("close", () => closed++);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  state.port = (server.address() as AddressInfo).port;
  state.url = `http://127.0.0.1:${state.port}${path}`;
  return state;
}

/** Answers every eth_getLogs with `count` logs (6,000 make about 4 MiB of JSON); other methods are left to the caller. */
export function manyLogsAnswer(count = 6000): (request: UpstreamRequest) => Answer | undefined {
  const log = (i: number) =>
    `{"address":"0x${"12".repeat(20)}","topics":["0x${"ab".repeat(32)}","0x${i.toString(16).padStart(64, "0")}"],"data":"0x${"00".repeat(96)}","blockNumber":"0x9","transactionHash":"0x${"cd".repeat(32)}","transactionIndex":"0x0","blockHash":"0x${"ef".repeat(32)}","logIndex":"0x${i.toString(16)}","removed":false}`;
  const logs = `[${Array.from({ length: count }, (_, i) => log(i)).join(",")}]`;
  return (r) => (r.method === "eth_getLogs" ? { raw: `{"jsonrpc":"2.0","id":${JSON.stringify(r.id)},"result":${logs}}` } : undefined);
}
