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
  close(): Promise<void>;
}

function methodsOf(body: string): string[] {
  try {
    const parsed = JSON.parse(body) as unknown;
    const calls = Array.isArray(parsed) ? parsed : [parsed];
    return calls.map((c) => String((c as { method?: unknown }).method));
  } catch {
    return ["(unparsable)"];
  }
}

export async function startCountingUpstream(targetUrl: string): Promise<CountingUpstream> {
  const methods: string[] = [];
  let count = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      count++;
      methods.push(...methodsOf(body));
      fetch(targetUrl, { method: "POST", headers: { "content-type": "application/json" }, body })
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
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
