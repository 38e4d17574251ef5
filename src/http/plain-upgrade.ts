/**
 * Once the HTTP/1.1 server listens for 'upgrade' (for WebSocket), Node hands
 * it every request with an Upgrade header, including `Upgrade: h2c` from
 * `curl --http2`, which used to be served as plain HTTP/1.1. This puts such a
 * request back on the socket without the upgrade headers and lets the server
 * read it again, so it is served as before.
 */
import type { IncomingMessage, Server } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";

const UPGRADE_HEADERS = new Set(["upgrade", "http2-settings"]);

export function serveUpgradeAsPlainRequest(server: Server, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  const lines = [`${req.method ?? "GET"} ${req.url ?? "/"} HTTP/${req.httpVersion}`];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    let value = raw[i + 1] as string;
    const lower = name.toLowerCase();
    if (UPGRADE_HEADERS.has(lower)) continue;
    if (lower === "connection") {
      value = value
        .split(",")
        .map((t) => t.trim())
        .filter((t) => t !== "" && !UPGRADE_HEADERS.has(t.toLowerCase()))
        .join(", ");
      if (value === "") continue;
    }
    lines.push(`${name}: ${value}`);
  }
  socket.unshift(Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), head]));
  server.emit("connection", socket as Socket);
  socket.resume();
}
