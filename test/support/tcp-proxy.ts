/**
 * A TCP proxy on 127.0.0.1 between nodegate and its node, which a test can
 * sever (as a network drop), make hold the node's bytes (as a stalled reply),
 * or make refuse new connections (as a node that is down).
 */
import net, { type AddressInfo, type Socket } from "node:net";

export interface TcpProxy {
  readonly port: number;
  /** Connections accepted and forwarded so far. */
  readonly accepted: number;
  /** Forwarded connections open now. */
  readonly open: number;
  /**
   * While on, bytes from the target are not passed on (they wait in the
   * proxy); turning it off releases them. A connection opened while holding
   * gets its first chunk through (the WebSocket handshake answer), so a
   * client can reconnect and send before its replies are held.
   */
  holdReplies(hold: boolean): void;
  /** Destroys every open connection on both sides; bytes held for them are dropped. */
  sever(): void;
  /** While on, new connections are closed as soon as they are accepted. */
  refuse(refuse: boolean): void;
  /** Stops listening and destroys every connection. */
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  target: Socket;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let accepted = 0;
  let holding = false;
  let refusing = false;

  const server = net.createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    accepted++;
    const target = net.connect(targetPort, "127.0.0.1");
    const pair = { client, target };
    pairs.add(pair);
    let first = true;
    // Forwarded by hand rather than piped, so pausing the target really holds its bytes.
    client.on("data", (d: Buffer) => target.write(d));
    target.on("data", (d: Buffer) => {
      client.write(d);
      if (first && holding) target.pause();
      first = false;
    });
    const drop = (): void => {
      pairs.delete(pair);
      client.destroy();
      target.destroy();
    };
    client.on("close", drop);
    target.on("close", drop);
    client.on("error", drop);
    target.on("error", drop);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;

  const sever = (): void => {
    for (const pair of [...pairs]) {
      pairs.delete(pair);
      pair.client.destroy();
      pair.target.destroy();
    }
  };

  return {
    port,
    get accepted() {
      return accepted;
    },
    get open() {
      return pairs.size;
    },
    holdReplies(hold) {
      holding = hold;
      for (const { target } of pairs) {
        if (hold) target.pause();
        else target.resume();
      }
    },
    sever,
    refuse(refuse) {
      refusing = refuse;
    },
    close: () =>
      new Promise<void>((resolve) => {
        sever();
        server.close(() => resolve());
      }),
  };
}
