/**
 * A TCP front that lets `cap` connections through to a node and refuses the
 * others, as a provider capping connections per client does: by a reset, or
 * by its own HTTP 429 and a close (with a JSON-RPC body, as a provider's rate
 * limit answers, for "429json"). A closed connection counts as gone `lagMs`
 * after its close, as a front's count follows its own events.
 */
import net from "node:net";

export type FrontRefusal = "reset" | "429" | "429json";

export interface CappingFront {
  /** `http://127.0.0.1:<port>/` */
  url: string;
  /** Connections refused so far. */
  refused(): number;
  /** Refuse every connection from now on (true), or only those past the cap (false). */
  refuseAll(all: boolean): void;
  close(): Promise<void>;
}

const RATE_LIMITED = '{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"project ID request rate exceeded"}}';

export async function startCappingFront(target: string, cap: number, refusal: FrontRefusal = "reset", lagMs = 0): Promise<CappingFront> {
  const to = new URL(target);
  let open = 0;
  let refused = 0;
  let refusingAll = false;
  const sockets = new Set<net.Socket>();
  const front = net.createServer((socket) => {
    if (refusingAll || open >= cap) {
      refused++;
      if (refusal === "reset") socket.resetAndDestroy();
      else {
        socket.on("error", () => {});
        const page = refusal === "429json" ? `content-type: application/json\r\ncontent-length: ${RATE_LIMITED.length}\r\n\r\n${RATE_LIMITED}` : "content-length: 0\r\nconnection: close\r\n\r\n";
        socket.once("data", () => socket.end(`HTTP/1.1 429 Too Many Requests\r\n${page}`));
      }
      return;
    }
    open++;
    const back = net.connect(Number(to.port), to.hostname);
    sockets.add(socket).add(back);
    socket.pipe(back).pipe(socket);
    const done = () => {
      socket.destroy();
      back.destroy();
    };
    socket.once("close", () => {
      if (lagMs > 0) setTimeout(() => open--, lagMs);
      else open--;
      sockets.delete(socket);
      done();
    });
    back.once("close", () => {
      sockets.delete(back);
      done();
    });
    socket.on("error", () => {});
    back.on("error", () => {});
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(front.address() as net.AddressInfo).port}/`,
    refused: () => refused,
    refuseAll: (all) => {
      refusingAll = all;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => front.close(() => resolve()));
    },
  };
}
