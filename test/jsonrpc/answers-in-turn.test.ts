/**
 * HTTP/1.1 requests pipelined before bytes the server cannot read as a request, on a real node: their answers go
 * out, in order, before the error status and the close (RFC 9112 §9.3.2), and nothing after a request that asked to
 * close is read or answered (§9.6). Found from outside: Node's default wrote a bare 400 at once and destroyed the
 * connection, so a valid call before garbage, or before a request following one with `Connection: close`, got a 400
 * or nothing, and was logged as a client that left. Also a WebSocket upgrade pipelined behind a call, whose 101
 * went out before the call's answer, and CONNECT, which got zero bytes and a FIN.
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";

let anvil: AnvilNode;
let ng: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  ng = await startNodegate({ upstreamUrl: anvil.url });
}, 60_000);
afterAll(async () => {
  await ng?.close();
  await anvil?.stop();
});

function call(id: number, extraHeaders = ""): string {
  const body = `{"jsonrpc":"2.0","id":${id},"method":"eth_chainId","params":[]}`;
  return `POST /v3/${ng.key} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n${extraHeaders}\r\n${body}`;
}

/** Writes `bytes` in one write on a new connection; resolves with everything read until the server closes it (or 5 s). */
function exchange(bytes: string): Promise<{ text: string; closedByServer: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(ng.port, "127.0.0.1", () => socket.write(bytes));
    let text = "";
    const done = (closedByServer: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closedByServer });
    };
    const timer = setTimeout(() => done(false), 5000);
    socket.on("data", (chunk) => (text += chunk.toString("latin1")));
    socket.on("error", () => {});
    socket.on("end", () => done(true));
  });
}

/** The status lines and the ids of the JSON-RPC answers read, in order. */
function answers(text: string): string[] {
  return [...text.matchAll(/(HTTP\/1\.1 \d{3} [^\r]*)\r\n|\{"jsonrpc":"2\.0","id":(\d+)/g)].map((m) => (m[1] ?? m[2]) as string);
}

describe("HTTP/1.1 answers in the order of their requests", () => {
  it("a call, then garbage: the call's answer, then 400, then the close", async () => {
    const { text, closedByServer } = await exchange(`${call(1)}GARBAGE\r\n\r\n`);
    expect(answers(text)).toEqual(["HTTP/1.1 200 OK", "1", "HTTP/1.1 400 Bad Request"]);
    expect(closedByServer).toBe(true);
  });

  it("two calls, then a head Node refuses (an obs-fold header): both answers in order, then 400", async () => {
    const { text, closedByServer } = await exchange(`${call(1)}${call(2)}POST /v3/${ng.key} HTTP/1.1\r\nhost: x\r\nx-folded: a\r\n b\r\n\r\n`);
    expect(answers(text)).toEqual(["HTTP/1.1 200 OK", "1", "HTTP/1.1 200 OK", "2", "HTTP/1.1 400 Bad Request"]);
    expect(closedByServer).toBe(true);
  });

  it("1, 2 with Connection: close, 3: answers to 1 and 2, then the close; 3 is not read, and no error status follows", async () => {
    const { text, closedByServer } = await exchange(`${call(1)}${call(2, "connection: close\r\n")}${call(3)}`);
    expect(answers(text)).toEqual(["HTTP/1.1 200 OK", "1", "HTTP/1.1 200 OK", "2"]);
    expect(closedByServer).toBe(true);
  });

  it("1 with Connection: close, then 2: 1's answer, then the close", async () => {
    const { text, closedByServer } = await exchange(`${call(1, "connection: close\r\n")}${call(2)}`);
    expect(answers(text)).toEqual(["HTTP/1.1 200 OK", "1"]);
    expect(closedByServer).toBe(true);
  });

  it("the answered calls are logged with their status, not as clients that left", async () => {
    const before = ng.logs.length;
    await exchange(`${call(7)}GARBAGE\r\n\r\n`);
    await expect.poll(() => ng.logs.slice(before).filter((l) => l.door === "jsonrpc-http").map((l) => l.status)).toEqual([200]);
  });

  it("a request cut inside its own body still gets Node's 400 and the close", async () => {
    const { text, closedByServer } = await exchange(`POST /v3/${ng.key} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`);
    expect(answers(text)).toEqual(["HTTP/1.1 400 Bad Request"]);
    expect(closedByServer).toBe(true);
  });

  it("CONNECT gets the native door's 405, and the close", async () => {
    const { text, closedByServer } = await exchange("CONNECT 127.0.0.1:80 HTTP/1.1\r\nhost: 127.0.0.1:80\r\n\r\n");
    expect(text).toMatch(/^HTTP\/1\.1 405 /);
    expect(text.toLowerCase()).toContain("allow: post");
    expect(text).toContain('"error":{"code":-32600,"message":"invalid request: use POST"}');
    expect(closedByServer).toBe(true);
  });

  it("a WebSocket upgrade pipelined behind a call: the call's answer first, then the 101, and the WebSocket works", async () => {
    const upgrade = `GET /ws/v3/${ng.key} HTTP/1.1\r\nhost: x\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`;
    const text = await new Promise<string>((resolve) => {
      const socket = net.connect(ng.port, "127.0.0.1", () => socket.write(`${call(1)}${upgrade}`));
      let read = "";
      let asked = false;
      const done = () => {
        clearTimeout(timer);
        socket.destroy();
        resolve(read);
      };
      const timer = setTimeout(done, 5000);
      socket.on("error", () => {});
      socket.on("data", (chunk) => {
        read += chunk.toString("latin1");
        if (!asked && read.includes("HTTP/1.1 101 ")) {
          asked = true;
          // One masked text frame: {"jsonrpc":"2.0","id":2,"method":"eth_chainId"}.
          const payload = Buffer.from('{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}');
          const mask = Buffer.from([1, 2, 3, 4]);
          socket.write(Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, payload.map((b, i) => b ^ (mask[i % 4] as number))]));
        }
        if (read.includes('"id":2')) done();
      });
    });
    expect(text.indexOf("HTTP/1.1 200 ")).toBeGreaterThanOrEqual(0);
    expect(text.indexOf("HTTP/1.1 200 ")).toBeLessThan(text.indexOf("HTTP/1.1 101 "));
    expect(text).toContain('{"jsonrpc":"2.0","id":1,"result":"0x7a69"}');
    expect(text).toContain('{"jsonrpc":"2.0","id":2,"result":"0x7a69"}');
  });

  it("the server serves on", async () => {
    const { text } = await exchange(call(9, "connection: close\r\n"));
    expect(text).toContain('"result":"0x7a69"');
  });
});
