/**
 * A JSON-RPC HTTP server on 127.0.0.1 that answers from recorded node
 * replies, for what Anvil cannot produce (uncles, pre-merge blocks). Replies
 * are written the way geth writes them: compact, jsonrpc and id first.
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";

/** One recorded call: the params a node was asked and the result it gave. */
export interface Recording {
  method: string;
  params: unknown[];
  result: unknown;
}

/** A fixture file: where the data comes from, and the recordings. */
export interface FixtureFile {
  source: string;
  recordings: Recording[];
}

export interface FixtureUpstream {
  url: string;
  /** Requests answered so far (recorded or not). */
  readonly count: number;
  close(): Promise<void>;
}

/** Reads a fixture file from test/fixtures. */
export function loadFixture(name: string): FixtureFile {
  return JSON.parse(readFileSync(join(import.meta.dirname, "../fixtures", name), "utf8")) as FixtureFile;
}

/** Nodes read hex case-insensitively, so recordings match whatever case a caller used. */
function canonical(value: unknown): unknown {
  if (typeof value === "string") return /^0x[0-9a-fA-F]*$/.test(value) ? value.toLowerCase() : value;
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, canonical(v)]));
  }
  return value;
}

function keyOf(method: string, params: unknown): string {
  return `${method} ${JSON.stringify(canonical(params ?? []))}`;
}

function reply(id: unknown, member: string): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id ?? null)},${member}}`;
}

export async function startFixtureUpstream(recordings: readonly Recording[]): Promise<FixtureUpstream> {
  const byKey = new Map(recordings.map((r) => [keyOf(r.method, r.params), r.result]));
  const knownMethods = new Set(recordings.map((r) => r.method));
  let count = 0;
  const answer = (body: string): string => {
    let request: { id?: unknown; method?: unknown; params?: unknown };
    try {
      request = JSON.parse(body) as typeof request;
    } catch {
      return reply(null, '"error":{"code":-32700,"message":"parse error"}');
    }
    const method = String(request.method);
    const key = keyOf(method, request.params);
    if (byKey.has(key)) return reply(request.id, `"result":${JSON.stringify(byKey.get(key))}`);
    // Unknown requests get geth's method-not-found error; a recorded method
    // asked with unrecorded params says so, rather than inventing an answer.
    const message = knownMethods.has(method)
      ? `no recording for ${key}`
      : `the method ${method} does not exist/is not available`;
    return reply(request.id, `"error":{"code":-32601,"message":${JSON.stringify(message)}}`);
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      count++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(answer(Buffer.concat(chunks).toString("utf8")));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get count() {
      return count;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
