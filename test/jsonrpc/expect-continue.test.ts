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

/** Sends the head, then the body once told to continue (at once, without Expect); resolves with everything read until an answer, the server's close, or 2 s. */
function http1(contentLength: number, body: string, key = ng.key, head = "expect: 100-continue\r\n"): Promise<{ text: string; closedByServer: boolean; sentBody: boolean }> {
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
    socket.write(`POST /v3/${key} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${contentLength}\r\n${head}\r\n`);
    // Without Expect, what there is of the body follows the head at once.
    if (!head.includes("expect")) socket.write(body);
  });
}

/**
 * Writes `request` on a new connection; `onRead` sees all read so far (and may write more). Resolves with everything
 * read until `onRead` returns true, the server's close, or `waitMs`.
 */
function exchange(request: string, onRead: (read: string, socket: net.Socket) => boolean = () => false, waitMs = 2000): Promise<{ text: string; closedByServer: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(ng.port, "127.0.0.1");
    let text = "";
    const done = (closedByServer: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closedByServer });
    };
    const timer = setTimeout(() => done(false), waitMs);
    socket.on("data", (chunk) => {
      text += chunk.toString("latin1");
      if (onRead(text, socket)) done(false);
    });
    socket.on("end", () => done(true));
    socket.write(request);
  });
}

const answered = (read: string) => read.includes('"result"');

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

  it("HTTP/1.1, 'Expect: 100-Continue' (Java's HttpClient spells it so; the value is case-insensitive): 100 Continue, then the answer", async () => {
    // Found from outside: Node leaves any case of it to this door, which asked only for the lower-case spelling, so
    // such a client waited for a 100 that never came until the request deadline's 408.
    const reply = await http1(CALL.length, CALL, ng.key, "expect: 100-Continue\r\n");
    expect(reply.sentBody).toBe(true);
    expect(reply.text).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
  });

  it("HTTP/1.0 with Expect and its body: no 100 Continue (RFC 9110 10.1.1: ignored), just the answer", async () => {
    const { text } = await exchange(`POST /v3/${ng.key} HTTP/1.0\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${CALL.length}\r\nexpect: 100-continue\r\n\r\n${CALL}`);
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    expect(text).not.toContain(" 100 Continue");
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

  it("HTTP/1.1, an unknown key: 401 without a 100 Continue, and the connection closes", async () => {
    // Found from outside: Node's own 100 Continue went out before the refusal, asking for a body refused whatever it held.
    const reply = await http1(CALL.length, CALL, "not-a-key-of-this-gate");
    expect(reply.sentBody).toBe(false);
    expect(reply.text).toMatch(/^HTTP\/1\.1 401 /);
    expect(reply.text.toLowerCase()).toContain("connection: close");
    expect(reply.closedByServer).toBe(true);
  });

  it("HTTP/1.1, an absolute-form URL and a known key: one 100 Continue, then the answer", async () => {
    const { text: reply } = await exchange(
      `POST http://127.0.0.1:${ng.port}/v3/${ng.key} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${CALL.length}\r\nexpect: 100-continue\r\n\r\n`,
      (read, socket) => {
        if (read === "HTTP/1.1 100 Continue\r\n\r\n") socket.write(CALL);
        return answered(read);
      },
    );
    expect(reply).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
  });

  it("HTTP/2, 'expect: 100-Continue' (Java's HttpClient over h2 keeps the value's case): 100 Continue, then the answer, not 417", async () => {
    const session = http2.connect(ng.url);
    try {
      const stream = session.request({ ":method": "POST", ":path": `/v3/${ng.key}`, "content-type": "application/json", "content-length": String(CALL.length), expect: "100-Continue" });
      const continued = new Promise<void>((resolve) => stream.once("continue", resolve));
      const status = new Promise<number>((resolve) => stream.once("response", (headers) => resolve(Number(headers[":status"]))));
      expect(await Promise.race([continued.then(() => "continue"), status.then((code) => `final ${code}`)])).toBe("continue");
      stream.end(CALL);
      let body = "";
      stream.on("data", (chunk: Buffer) => (body += chunk.toString()));
      expect(await status).toBe(200);
      await new Promise((resolve) => stream.once("end", resolve));
      expect(body).toContain('"result":"0x7a69"');
    } finally {
      session.destroy();
    }
  });

  it("HTTP/2, an unknown key: 401 without a 100 Continue", async () => {
    const session = http2.connect(ng.url);
    try {
      const stream = session.request({ ":method": "POST", ":path": "/v3/not-a-key-of-this-gate", "content-type": "application/json", "content-length": String(CALL.length), expect: "100-continue" });
      let continued = false;
      stream.on("continue", () => (continued = true));
      const status = await new Promise<number>((resolve) => stream.once("response", (headers) => resolve(Number(headers[":status"]))));
      expect(status).toBe(401);
      expect(continued).toBe(false);
      stream.destroy();
    } finally {
      session.destroy();
    }
  });
});

describe("a native refusal before the body has come", () => {
  it("HTTP/1.1, an unknown key and a body still trickling in: the 401, then the connection closes (no later 408 on it)", async () => {
    // Found from outside: the connection read on the trickled body after the 401, and Node's own 408 followed it.
    const reply = await http1(CALL.length + 100, CALL.slice(0, 5), "not-a-key-of-this-gate", "");
    expect(reply.text).toMatch(/^HTTP\/1\.1 401 /);
    expect(reply.text.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    expect(reply.closedByServer).toBe(true);
  });

  it("HTTP/1.1, a wrong content type and a body still trickling in: the 415, then the connection closes (no later 408 on it)", async () => {
    const reply = await exchange(`POST /v3/${ng.key} HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\ncontent-length: ${CALL.length + 100}\r\n\r\n${CALL.slice(0, 5)}`);
    expect(reply.text).toMatch(/^HTTP\/1\.1 415 /);
    expect(reply.text.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    expect(reply.closedByServer).toBe(true);
  });

  it("HTTP/1.1, a wrong content type whose body came with its head: the 415, and the connection stays open for the next request", async () => {
    const { text } = await exchange(
      `POST /v3/${ng.key} HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\ncontent-length: ${CALL.length}\r\n\r\n${CALL}` +
        `POST /v3/${ng.key} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${CALL.length}\r\n\r\n${CALL}`,
      answered,
    );
    expect(text).toMatch(/^HTTP\/1\.1 415 [^]*HTTP\/1\.1 200 [^]*"result":"0x7a69"/);
  });

  it("HTTP/1.1, an unknown key whose body came with its head: each call is answered, and the connection stays open", async () => {
    // Still open half a second after the answer.
    const reply = await exchange(`POST /v3/not-a-key-of-this-gate HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${CALL.length}\r\n\r\n${CALL}`, () => false, 500);
    expect(reply.text).toMatch(/^HTTP\/1\.1 401 /);
    expect(reply.text).toContain('"id":1');
    expect(reply.closedByServer).toBe(false);
  });
});
