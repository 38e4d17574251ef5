/**
 * A JSON-RPC HTTP server on 127.0.0.1 that forwards every request to a real
 * node and counts what passed through, so a test can prove nodegate sent
 * nothing upstream (bad params, bad keys, unknown methods).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface CountingUpstream {
  /** URL to configure as nodegate's upstream. */
  url: string;
  /** Requests forwarded so far. */
  readonly count: number;
  /** The JSON-RPC methods forwarded, in order. */
  readonly methods: readonly string[];
  /** Calls in each request forwarded, in order: 0 for a single call (no array), else the batch's length. */
  readonly batchSizes: readonly number[];
  close(): Promise<void>;
}

function parsed(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}

function methodsOf(request: unknown): string[] {
  if (request === undefined) return ["(unparsable)"];
  const calls = Array.isArray(request) ? request : [request];
  return calls.map((c) => String((c as { method?: unknown }).method));
}

export interface CountingOptions {
  /** Each request is forwarded this long after it arrived, as by a node across a network. */
  delayMs?: number;
}

export async function startCountingUpstream(targetUrl: string, options: CountingOptions = {}): Promise<CountingUpstream> {
  const methods: string[] = [];
  const batchSizes: number[] = [];
  let count = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      count++;
      const request = parsed(body);
      methods.push(...methodsOf(request));
      batchSizes.push(Array.isArray(request) ? request.length : 0);
      const delayed = options.delayMs === undefined ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, options.delayMs));
      delayed
        .then(() => fetch(targetUrl, { method: "POST", headers: { "content-type": "application/json" }, body }))
        .then(async (upstream) => {
          const text = await upstream.text();
          res.writeHead(upstream.status, { "content-type": "application/json" });
          res.end(text);
        })
        .catch((err: unknown) => {
          res.writeHead(502, { "content-type": "text/plain" });
          res.end(String(err));
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get count() {
      return count;
    },
    get methods() {
      return methods;
    },
    get batchSizes() {
      return batchSizes;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
