/**
 * A node that writes one answer twice on a kept-alive connection (found from
 * outside: a faulty node sent a second full reply after the first). The
 * stray reply reaches whichever call goes next on that connection: it must
 * never be taken for that call's answer, the connection must not be used
 * again (else each later call reads the one before's reply, and the circuit
 * opens for everyone), and the call that read it is asked once more on
 * another connection when it is idempotent.
 */
import type net from "node:net";
import { afterEach, expect, it } from "vitest";
import { GatewayError } from "../../src/errors/gateway-error.js";
import { HttpUpstream } from "../../src/upstream/http-upstream.js";
import { resultText } from "../../src/upstream/reply.js";
import { onRequests, type RawNode, rawNode as startRawNode, resultReply as reply } from "../support/raw-node.js";

/**
 * A node answering each request with its own id and its method as the result, 40 ms late (the first at once); when
 * the second request arrives it first writes a stray answer, with the id `strayId` makes of the first request's (on
 * the second request, so the stray comes while that call waits, however slow the machine).
 */
async function strayNode(strayId: (id: number) => number, strayBody?: string): Promise<RawNode> {
  let served = 0;
  let firstId = 0;
  return rawNode((socket) =>
    onRequests(socket, (request) => {
      served++;
      const stray = strayBody === undefined ? undefined : `HTTP/1.1 200 OK\r\ncontent-length: ${Buffer.byteLength(strayBody)}\r\n\r\n${strayBody}`;
      if (served === 1) {
        firstId = request.id;
        // With a stray body given, that is the first answer, and the stray reply its copy.
        socket.write(stray ?? reply(request.id, request.method));
        return;
      }
      if (served === 2) socket.write(stray ?? reply(strayId(firstId), "0xbad"));
      setTimeout(() => socket.destroyed || socket.write(reply(request.id, request.method)), 40);
    }),
  );
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A raw node that stops when the test ends. */
async function rawNode(serve: (socket: net.Socket) => void): Promise<RawNode> {
  const node = await startRawNode(serve);
  cleanups.push(() => node.close());
  return node;
}

async function setUp(strayId: (id: number) => number, strayBody?: string): Promise<{ node: RawNode; upstream: HttpUpstream }> {
  const node = await strayNode(strayId, strayBody);
  // One connection, so the call after the first goes on the connection the stray reply comes on.
  const upstream = new HttpUpstream({ url: node.url, label: "stray", connections: 1 });
  cleanups.push(() => upstream.close());
  return { node, upstream };
}

const call = (upstream: HttpUpstream, method: string, idempotent = true) =>
  upstream.call(method, "[]", { timeoutMs: 5000, idempotent }).then(
    (r) => resultText(r),
    (e: unknown) => (e instanceof GatewayError ? `error ${e.code}: ${e.message}` : `thrown ${String(e)}`),
  );

it.each([
  ["the same answer again (the first request's id)", (id: number) => id],
  ["an answer with the id one above the first request's", (id: number) => id + 1],
])("a stray reply (%s) is nobody's answer: the call that reads it is asked again elsewhere, and later calls are not shifted", async (_what, strayId) => {
  const { node, upstream } = await setUp(strayId);
  expect(await call(upstream, "first")).toBe('"first"');
  // Sent at once on the one connection; the stray reply arrives there before this call's own.
  const answers = [await call(upstream, "second"), await call(upstream, "third"), await call(upstream, "fourth")];
  expect(answers).toEqual(['"second"', '"third"', '"fourth"']);
  // The connection the stray came on was closed, and the others were not: one more, not one per call.
  expect(node.connections).toBe(2);
});

it("a call that is not idempotent and reads a stray reply fails as the node's bad answer, and the next call is not shifted", async () => {
  const { upstream } = await setUp((id) => id);
  expect(await call(upstream, "first")).toBe('"first"');
  expect(await call(upstream, "second", false)).toMatch(/^error -32052: upstream returned an invalid response: reply id \d+ does not match request id \d+$/);
  // At once, on the one connection there is: on one still in use, this call would read the second call's late reply.
  expect(await call(upstream, "third", false)).toBe('"third"');
});

const ID_NULL_ERROR = '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}';

it("a stray copy of an id-null error is nobody's answer either: the call that reads it next on the connection is asked again, and gets its own", async () => {
  // Found from outside: the id cannot tell a stray id-null error from this request's, so it was taken for the answer.
  const { node, upstream } = await setUp((id) => id, ID_NULL_ERROR);
  expect(await call(upstream, "first")).toBe("error -32700: Parse error");
  expect([await call(upstream, "second"), await call(upstream, "third")]).toEqual(['"second"', '"third"']);
  expect(node.connections).toBe(2);
});

it("a call not to be asked again that reads a stray id-null error gets it with a warning that its outcome is unknown, and the next call is not shifted", async () => {
  // Found from outside: an eth_sendRawTransaction the node took was told the previous call's error as its own.
  const { upstream } = await setUp((id) => id, ID_NULL_ERROR);
  expect(await call(upstream, "first")).toBe("error -32700: Parse error");
  expect(await call(upstream, "second", false)).toBe(
    "error -32700: Parse error (this error came with id null right after another on the same connection: it may be that one again, and whether second took effect is unknown)",
  );
  expect(await call(upstream, "third", false)).toBe('"third"');
});

it("a node's own id-null error still reaches the caller: asked again when it came right after another, it comes again", async () => {
  const node = await fixedNode(Buffer.from(`HTTP/1.1 200 OK\r\ncontent-length: ${ID_NULL_ERROR.length}\r\n\r\n${ID_NULL_ERROR}`));
  const upstream = new HttpUpstream({ url: node.url, label: "id-null", connections: 1 });
  cleanups.push(() => upstream.close());
  expect(await call(upstream, "first")).toBe("error -32700: Parse error");
  expect(await call(upstream, "second")).toBe("error -32700: Parse error");
  // On a reused connection too, with the warning that it may not be this call's: it is no call to send twice.
  expect(await call(upstream, "third", false)).toMatch(/^error -32700: Parse error \(this error came with id null right after another .* whether third took effect is unknown\)$/);
  // The first came on a fresh connection; the second on a reused one, so it was asked once more; the third is no
  // call to send twice.
  expect(node.requests).toBe(4);
});

it.each([
  ["a front's status page (503 HTML, framed) leaves its connection in step", "503 Service Temporarily Unavailable", "error -32050: upstream unavailable: HTTP 503"],
  ["a 200 that is no reply does not close the connection once it carries the next call (whose reply is checked by its id)", "200 OK", "error -32052: upstream returned an invalid response: not a JSON object"],
])("%s: the call queued behind it is answered on it", async (_what, status, readError) => {
  // Found from outside: the connection was closed after it had been handed to the next call, an
  // eth_sendRawTransaction the node then answered, and its caller was told "connection reset".
  const page = "<html><body>503 Service Temporarily Unavailable</body></html>";
  const requests: string[] = [];
  const node = await rawNode((socket) =>
    onRequests(socket, (request) => {
      requests.push(request.method);
      if (request.method === "eth_getBalance") {
        setTimeout(() => socket.write(`HTTP/1.1 ${status}\r\ncontent-type: text/html\r\ncontent-length: ${page.length}\r\n\r\n${page}`), 100);
      } else {
        const body = JSON.stringify({ jsonrpc: "2.0", id: request.id, result: "0xab" });
        socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
      }
    }),
  );
  const upstream = new HttpUpstream({ url: node.url, label: "front", connections: 1 });
  cleanups.push(() => upstream.close());
  const read = call(upstream, "eth_getBalance");
  const write = call(upstream, "eth_sendRawTransaction", false); // queued: the one connection is busy
  expect(await read).toBe(readError);
  expect(await write).toBe('"0xab"');
  expect(requests).toEqual(["eth_getBalance", "eth_sendRawTransaction"]);
  expect(node.connections).toBe(1);
});

/** A node answering every request with `reply` (a whole HTTP/1.1 response); counts requests and connections. */
async function fixedNode(reply: Buffer): Promise<Omit<RawNode, "close"> & { readonly requests: number }> {
  let requests = 0;
  const node = await rawNode((socket) =>
    socket.on("data", (data: Buffer) => {
      if (!data.includes("\r\n\r\n")) return;
      requests++;
      socket.write(reply);
    }),
  );
  return {
    url: node.url,
    get requests() {
      return requests;
    },
    get connections() {
      return node.connections;
    },
  };
}

it("a 200 reply that is no JSON-RPC reply is not asked again (a broken node answers so every time), and its connection is not reused", async () => {
  const body = "<html>maintenance</html>";
  const node = await fixedNode(Buffer.from(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n${body}`));
  const upstream = new HttpUpstream({ url: node.url, label: "garbage", connections: 1 });
  cleanups.push(() => upstream.close());
  expect(await call(upstream, "first")).toMatch(/^error -32052: upstream returned an invalid response/);
  expect(await call(upstream, "second")).toMatch(/^error -32052: upstream returned an invalid response/);
  expect(node.requests).toBe(2);
  expect(node.connections).toBe(2);
});

it("asks for no content coding: accept-encoding identity", async () => {
  const { startProgrammableUpstream } = await import("../support/programmable-upstream.js");
  const node = await startProgrammableUpstream(() => ({ result: "0x1" }));
  const upstream = new HttpUpstream({ url: node.url, label: "identity" });
  cleanups.push(() => node.close(), () => upstream.close());
  expect(await call(upstream, "eth_chainId")).toBe('"0x1"');
  expect(node.requests[0]?.headers["accept-encoding"]).toBe("identity");
});

it("a reply the node compressed, unasked, says so", async () => {
  const { gzipSync } = await import("node:zlib");
  const body = gzipSync('{"jsonrpc":"2.0","id":1,"result":"0x1"}');
  const node = await fixedNode(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: ${body.length}\r\n\r\n`), body]));
  const upstream = new HttpUpstream({ url: node.url, label: "gzip", connections: 1 });
  cleanups.push(() => upstream.close());
  expect(await call(upstream, "first")).toBe('error -32052: upstream returned an invalid response: the node sent its reply with content-encoding "gzip", which nodegate does not ask for or read');
});

it.each([
  ["its answer", "answers"],
  ["its refusal, an error with id null", "refuses"],
])("a batch's reply written twice (%s) is no answer to the call sent by itself next on that connection", async (_what, mode) => {
  // Found from outside (h110): a waiting call sent by itself after another key's batch took the batch's refusal, or
  // an array, as its own answer. One connection: the batch and the call after it share it.
  const node = await rawNode((socket) => {
    // The copy comes on the same connection when the next request does (as strayNode's), before that request's reply.
    let copy: string | undefined;
    onRequests(socket, (request) => {
      const sent = request as unknown as { id: number; method: string } | { id: number; method: string }[];
      if (copy !== undefined) socket.write(copy);
      copy = undefined;
      if (Array.isArray(sent)) {
        const body = mode === "answers" ? JSON.stringify(sent.map((c) => ({ jsonrpc: "2.0", id: c.id, result: c.method }))) : '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch requests are not supported"}}';
        copy = `HTTP/1.1 200 OK\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
        socket.write(copy);
        return;
      }
      // The first call holds the connection a while, so that the others wait for it and go in the pool's line.
      setTimeout(() => socket.destroyed || socket.write(reply(sent.id, sent.method)), sent.method === "first" ? 40 : 20);
    });
  });
  const upstream = new HttpUpstream({ url: node.url, label: "twice", connections: 1 });
  cleanups.push(() => upstream.close());
  const callFor = (flow: string, method: string) =>
    upstream.call(method, "[]", { timeoutMs: 5000, idempotent: true, flow }).then(
      (r) => resultText(r),
      (e: unknown) => (e instanceof GatewayError ? `error ${e.code}: ${e.message}` : `thrown ${String(e)}`),
    );
  const first = callFor("a", "first");
  // Key a's two waiting calls go in one array; key b's, next in turn, by itself.
  const answers = [callFor("a", "a1"), callFor("a", "a2"), callFor("b", "b1")];
  expect(await first).toBe('"first"');
  expect(await Promise.all(answers)).toEqual(['"a1"', '"a2"', '"b1"']);
});
