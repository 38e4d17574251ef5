/**
 * A fast JSON-RPC node stand-in for the benchmark (run as its own process):
 * answers from pre-serialised results, writing the caller's id around them,
 * optionally after a fixed service time. GET /stats reports how many calls of
 * each method it answered, so the benchmark can prove what reached it.
 *
 * Usage: node --import tsx bench/canned-upstream.ts [--service-ms N]
 * Prints {"port": N} on stdout once listening on 127.0.0.1.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { cannedResults, logs, receipt } from "./bodies.js";

const serviceMs = Number(process.argv[process.argv.indexOf("--service-ms") + 1] ?? 0) || 0;
const canned = cannedResults();
const results = new Map<string, Buffer>(Object.entries(canned).map(([name, text]) => [name, Buffer.from(`,"result":${text}}`)]));
results.set("logs100", Buffer.from(`,"result":${JSON.stringify(logs(100))}}`));
results.set("receipts", Buffer.from(`,"result":${JSON.stringify(Array.from({ length: 20 }, receipt))}}`));
results.set("null", Buffer.from(',"result":null}'));
const HEAD = Buffer.from('{"jsonrpc":"2.0","id":');
const counts: Record<string, number> = {};

/** Which canned result answers a call. */
function pick(method: string, params: unknown[]): Buffer {
  const first = params[0];
  const name = (() => {
    switch (method) {
      case "eth_getBalance":
        return "balance";
      case "eth_blockNumber":
        return "blockNumber";
      case "eth_chainId":
        return "chainId";
      case "eth_call":
        return "call";
      case "eth_getBlockByNumber":
        return first === "finalized" ? "finalized" : "block150";
      case "eth_getBlockByHash":
        return "block150";
      case "eth_getLogs":
        // A filter naming an address answers 100 logs; an open one answers 10,000.
        return typeof first === "object" && first !== null && "address" in first ? "logs100" : "logs10k";
      case "eth_getTransactionReceipt":
        return "receipt";
      case "eth_getBlockReceipts":
        return "receipts";
      default:
        return "null";
    }
  })();
  return results.get(name) as Buffer;
}

function answer(res: http.ServerResponse, id: string, result: Buffer): void {
  const idBytes = Buffer.from(id);
  res.writeHead(200, { "content-type": "application/json", "content-length": HEAD.length + idBytes.length + result.length });
  res.cork();
  res.write(HEAD);
  res.write(idBytes);
  res.end(result);
  process.nextTick(() => res.uncork());
}

interface Call {
  id?: unknown;
  method?: string;
  params?: unknown[];
}

/** The call's id text and its result, counted. */
function reply(call: Call): [string, Buffer] {
  const method = String(call.method);
  const params = Array.isArray(call.params) ? call.params : [];
  // Calls at a tag are counted apart ("eth_getBlockByNumber(finalized)"), so nodegate's finality checks are not mistaken for callers.
  const counted = typeof params[0] === "string" && /^[a-z]+$/.test(params[0]) ? `${method}(${params[0]})` : method;
  counts[counted] = (counts[counted] ?? 0) + 1;
  return [JSON.stringify(call.id ?? null), pick(method, params)];
}

const OPEN = Buffer.from("[");
const COMMA = Buffer.from(",");
const CLOSE = Buffer.from("]");

function answerBatch(res: http.ServerResponse, answers: [string, Buffer][]): void {
  const pieces: Buffer[] = [OPEN];
  answers.forEach(([id, result], i) => pieces.push(...(i === 0 ? [] : [COMMA]), HEAD, Buffer.from(id), result));
  pieces.push(CLOSE);
  const body = Buffer.concat(pieces);
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
  res.end(body);
}

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  if (req.method === "GET" && req.url === "/stats") {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(counts));
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    let request: Call | Call[];
    try {
      request = JSON.parse(Buffer.concat(chunks).toString("utf8")) as typeof request;
    } catch {
      res.writeHead(400).end();
      return;
    }
    // A batch (nodegate sends the calls that wait for a connection as one) is answered as a node does: an array.
    const send = Array.isArray(request) ? () => answerBatch(res, request.map(reply)) : () => answer(res, ...reply(request));
    if (serviceMs > 0) setTimeout(send, serviceMs);
    else send();
  });
});

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
