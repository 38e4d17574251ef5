/**
 * Asks the kernel which of nodegate's ended connections the client has acknowledged to the last byte.
 *
 * A connection nodegate has ended sits in FIN-WAIT-2 once the client's TCP has acknowledged its FIN, and so
 * every byte before it: nothing is left in the send queue for a reset to drop, so it can be closed without
 * waiting for the client to close its side. Some clients never do until they next wake (an idle grpcio
 * channel held a graceful close 4-5 s). Linux reports TCP states in /proc/net/tcp{,6}; elsewhere nothing is
 * reported, and the caller waits for the client as before.
 */
import { readFile } from "node:fs/promises";
import type { Socket } from "node:net";

const FIN_WAIT_2 = "05";
const TABLES = ["/proc/net/tcp", "/proc/net/tcp6"];

/** One spelling per address: IPv4 dotted, IPv6 (an IPv4-mapped one too) as the URL parser writes it. */
function canonicalAddress(address: string): string {
  if (!address.includes(":")) return address;
  try {
    return new URL(`http://[${address}]/`).hostname;
  } catch {
    return address;
  }
}

/** Decodes a /proc/net/tcp address: 32-bit words in host byte order (little-endian here), in hex. */
function decodeProcAddress(hex: string): string {
  const bytes = Buffer.from(hex, "hex");
  for (let i = 0; i < bytes.length; i += 4) bytes.subarray(i, i + 4).reverse();
  if (bytes.length === 4) return bytes.join(".");
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i).toString(16));
  return canonicalAddress(groups.join(":"));
}

function connectionKey(localPort: number, remoteAddress: string, remotePort: number): string {
  return `${localPort}|${remoteAddress}|${remotePort}`;
}

/** Keys of the connections in FIN-WAIT-2 in the kernel's tables; empty where the tables cannot be read. */
async function finWait2Connections(): Promise<Set<string>> {
  const keys = new Set<string>();
  const tables = await Promise.all(TABLES.map((path) => readFile(path, "latin1").catch(() => "")));
  for (const table of tables) {
    for (const line of table.split("\n")) {
      const fields = line.trim().split(/\s+/);
      if (fields[3] !== FIN_WAIT_2) continue;
      const [localHex, localPortHex] = fields[1]!.split(":");
      const [remoteHex, remotePortHex] = fields[2]!.split(":");
      if (localHex === undefined || remoteHex === undefined) continue;
      keys.add(connectionKey(parseInt(localPortHex!, 16), decodeProcAddress(remoteHex), parseInt(remotePortHex!, 16)));
    }
  }
  return keys;
}

/** Those of `sockets` (ended by nodegate, still open) whose client has acknowledged everything sent, FIN included. */
export async function finAcknowledged(sockets: Iterable<Socket>): Promise<Socket[]> {
  const acknowledged = await finWait2Connections();
  if (acknowledged.size === 0) return [];
  const found: Socket[] = [];
  for (const socket of sockets) {
    const { localPort, remoteAddress, remotePort } = socket;
    if (localPort === undefined || remoteAddress === undefined || remotePort === undefined) continue;
    if (acknowledged.has(connectionKey(localPort, canonicalAddress(remoteAddress), remotePort))) found.push(socket);
  }
  return found;
}
