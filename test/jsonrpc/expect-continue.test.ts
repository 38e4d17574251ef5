/**
 * `Expect: 100-continue`: a body declared larger than the limit is refused before the client sends it (no
 * 100 Continue; HTTP/1.1 closes after the refusal), and one within it is asked for and answered. Found from
 * outside: a client declaring 100 MB was told to go on, sent it all, and was then refused.
 */
import http2 from "node:http2";
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

const CALL = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';

/** Sends the head, then the body once told to continue; resolves with everything read until an answer, the server's close, or 2 s. */
function http1(contentLength: number, body: string): Promise<{ text: string; closedByServer: boolean; sentBody: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(ng.port, "127.0.0.1");
    let text = "";
    let sentBody = false;
    const done = (closedByServer: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closedByServer, sentBody });
    };
    const timer = setTimeout(() => done(false), 2000);
    socket.on("data", (chunk) => {
      text += chunk.toString("latin1");
      if (!sentBody && text.startsWith("HTTP/1.1 100 ")) {
        sentBody = true;
        socket.write(body);
      }
      if (text.includes('"result"')) done(false); // answered; the connection is kept alive
    });
    socket.on("end", () => done(true));
    socket.write(`POST /v3/${ng.key} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${contentLength}\r\nexpect: 100-continue\r\n\r\n`);
  });
}

describe("Expect: 100-continue on the native door", () => {
  it("HTTP/1.1, a body over the limit: 413 at once, no 100 Continue, and the connection closes", async () => {
    const reply = await http1(100 * 1024 * 1024, "");
    expect(reply.sentBody).toBe(false);
    expect(reply.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(reply.text.toLowerCase()).toContain("connection: close");
    expect(reply.text).toContain(`request body exceeds ${ng.gateway.limits.maxBodyBytes} bytes`);
    expect(reply.closedByServer).toBe(true);
  });

  it("HTTP/1.1, a body within the limit: 100 Continue, then the answer", async () => {
    const reply = await http1(CALL.length, CALL);
    expect(reply.sentBody).toBe(true);
    expect(reply.text).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    expect(reply.text).toContain('"result":"0x7a69"');
  });

  it("HTTP/2, a body over the limit: 413 without a 100 Continue", async () => {
    const session = http2.connect(ng.url);
    try {
      const stream = session.request({ ":method": "POST", ":path": `/v3/${ng.key}`, "content-type": "application/json", "content-length": String(100 * 1024 * 1024), expect: "100-continue" });
      let continued = false;
      stream.on("continue", () => (continued = true));
      const status = await new Promise<number>((resolve) => stream.once("response", (headers) => resolve(Number(headers[":status"]))));
      expect(status).toBe(413);
      expect(continued).toBe(false);
      stream.destroy();
    } finally {
      session.destroy();
    }
  });
});
