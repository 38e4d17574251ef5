/** A bare TCP "node" for tests of nodegate's HTTP/1.1 client: the test writes each reply byte for byte. */
import net from "node:net";

export interface RawNode {
  url: string;
  /** Connections accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

/** A TCP server on 127.0.0.1 that hands each connection (numbered from 0) to `serve`. */
export async function rawNode(serve: (socket: net.Socket, connection: number) => void): Promise<RawNode> {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const server = net.createServer((socket) => {
    const connection = connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    serve(socket, connection);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/`,
    get connections() {
      return connections;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Calls `handle` with each JSON-RPC request that arrives whole on `socket` (a head with content-length, then the body). */
export function onRequests(socket: net.Socket, handle: (request: { id: number; method: string }) => void): void {
  let buffered = "";
  socket.on("data", (data: Buffer) => {
    buffered += data.toString("latin1");
    for (;;) {
      const end = buffered.indexOf("\r\n\r\n");
      if (end < 0) return;
      const length = Number(/content-length: (\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
      if (buffered.length < end + 4 + length) return;
      const request = JSON.parse(buffered.slice(end + 4, end + 4 + length)) as { id: number; method: string };
      buffered = buffered.slice(end + 4 + length);
      handle(request);
    }
  });
}

/** A 200 reply carrying a JSON-RPC result for request `id`. */
export function resultReply(id: number, result: unknown): string {
  const body = JSON.stringify({ jsonrpc: "2.0", id, result });
  return `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
