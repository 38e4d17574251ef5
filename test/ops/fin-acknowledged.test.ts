/**
 * Which ended connections the kernel says the client has acknowledged (FIN-WAIT-2), for each way a
 * connection's address is spelt: IPv4, IPv6, and IPv4 mapped into an IPv6 listener.
 */
import { existsSync } from "node:fs";
import net from "node:net";
import { afterEach, expect, it } from "vitest";
import { finAcknowledged } from "../../src/http/fin-acknowledged.js";

const opened: (net.Socket | net.Server)[] = [];
afterEach(() => {
  for (const thing of opened.splice(0)) thing instanceof net.Server ? thing.close() : thing.destroy();
});

/** A server socket and its client, which stays open and reads nothing once the server ends its side. */
async function connectedPair(listenHost: string, connectHost: string): Promise<net.Socket> {
  const server = net.createServer();
  opened.push(server);
  const accepted = new Promise<net.Socket>((resolve) => server.once("connection", resolve));
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, listenHost, () => resolve((server.address() as net.AddressInfo).port));
  });
  const client = net.connect({ port, host: connectHost, allowHalfOpen: true });
  client.on("error", () => {});
  client.pause();
  opened.push(client);
  const socket = await accepted;
  opened.push(socket);
  socket.write("answer"); // something written, and acknowledged by the client's kernel though the client reads nothing
  return socket;
}

async function acknowledgedSoon(socket: net.Socket): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if ((await finAcknowledged([socket])).includes(socket)) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return false;
}

// The kernel's TCP tables are Linux's; elsewhere finAcknowledged reports nothing and closes wait for the client.
it.skipIf(!existsSync("/proc/net/tcp")).for([
  ["IPv4", "127.0.0.1", "127.0.0.1"],
  ["IPv4 mapped into an IPv6 listener", "::", "127.0.0.1"],
  ["IPv6", "::1", "::1"],
] as const)("%s: an open connection is not acknowledged; once ended, it is", async ([, listenHost, connectHost], context) => {
  const socket = await connectedPair(listenHost, connectHost).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "EADDRNOTAVAIL" || err.code === "EAFNOSUPPORT") context.skip(`this machine has no ${listenHost}`);
    throw err;
  });
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(await finAcknowledged([socket])).toEqual([]);
  socket.end();
  expect(await acknowledgedSoon(socket)).toBe(true);
});
