/**
 * The reference a user might deploy instead of nodegate: node:http in front
 * of an undici keep-alive pool, streaming request and response through
 * without parsing either. Run as its own process.
 *
 * Usage: node bench/ref-proxy.ts <upstream-url>
 * Prints {"port": N} on stdout once listening on 127.0.0.1.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { pipeline } from "node:stream";
import { Pool } from "undici";

const upstream = new URL(process.argv[2] as string);
const pool = new Pool(upstream.origin, { connections: 64, keepAliveTimeout: 30_000 });
const path = `${upstream.pathname}${upstream.search}`;

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const headers: Record<string, string> = { "content-type": req.headers["content-type"] ?? "application/json" };
  if (req.headers["content-length"] !== undefined) headers["content-length"] = req.headers["content-length"];
  pool.request({ path, method: "POST", headers, body: req }).then(
    (up) => {
      const out: Record<string, string> = { "content-type": String(up.headers["content-type"] ?? "application/json") };
      if (up.headers["content-length"] !== undefined) out["content-length"] = String(up.headers["content-length"]);
      res.writeHead(up.statusCode, out);
      pipeline(up.body, res, () => {});
    },
    () => {
      res.writeHead(502).end();
    },
  );
});

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => void pool.close().then(() => process.exit(0)));
});
