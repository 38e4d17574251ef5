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
  /** While on, nothing is read from the client (its bytes wait in its own buffers), as a node that stops reading. */
  holdRequests(hold: boolean): void;
  /** Passes the target's bytes on at most this fast (bytes per second; undefined: as they come), as a slow link does. */
  throttleReplies(bytesPerSecond: number | undefined): void;
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
  /** Bytes from the target waiting for the throttle, and the timer passing them on. */
  queued: Buffer[];
  pump: NodeJS.Timeout | undefined;
}

/** How often a throttled connection passes on its next slice. */
const THROTTLE_TICK_MS = 20;

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let accepted = 0;
  let holding = false;
  let refusing = false;
  let rate: number | undefined;

  const pass = (pair: Pair): void => {
    if (pair.pump !== undefined) return;
    pair.pump = setInterval(() => {
      let budget = rate === undefined ? Number.POSITIVE_INFINITY : Math.ceil((rate * THROTTLE_TICK_MS) / 1000);
      while (budget > 0 && pair.queued.length > 0) {
        const chunk = pair.queued[0] as Buffer;
        const n = Math.min(budget, chunk.length);
        pair.client.write(chunk.subarray(0, n));
        if (n === chunk.length) pair.queued.shift();
        else pair.queued[0] = chunk.subarray(n);
        budget -= n;
      }
      if (pair.queued.length === 0) {
        clearInterval(pair.pump);
        pair.pump = undefined;
      }
    }, THROTTLE_TICK_MS);
  };

  const server = net.createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    accepted++;
    const target = net.connect(targetPort, "127.0.0.1");
    const pair: Pair = { client, target, queued: [], pump: undefined };
    pairs.add(pair);
    let first = true;
    // Forwarded by hand rather than piped, so pausing the target really holds its bytes.
    client.on("data", (d: Buffer) => target.write(d));
    target.on("data", (d: Buffer) => {
      if (rate !== undefined || pair.queued.length > 0) {
        pair.queued.push(d);
        pass(pair);
      } else {
        client.write(d);
      }
      if (first && holding) target.pause();
      first = false;
    });
    const drop = (): void => {
      clearInterval(pair.pump);
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
      clearInterval(pair.pump);
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
    holdRequests(hold) {
      for (const { client } of pairs) {
        if (hold) client.pause();
        else client.resume();
      }
    },
    holdReplies(hold) {
      holding = hold;
      for (const { target } of pairs) {
        if (hold) target.pause();
        else target.resume();
      }
    },
    throttleReplies(bytesPerSecond) {
      rate = bytesPerSecond;
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
