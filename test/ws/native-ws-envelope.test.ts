/**
 * The native WebSocket path answers the JSON-RPC envelope exactly as the
 * HTTP path does, refuses bad keys and networks before the upgrade, and
 * looks after its connections (size limit, keep-alive, binary frames read as text, draining).
 */
import { DEFAULT_LIMITS, DEFAULT_WEBSOCKET } from "../../src/config/config.js";
import http from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { encodeFunctionData } from "viem";
import WebSocket from "ws";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { artifact } from "../support/contracts.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { startProgrammableUpstream } from "../support/programmable-upstream.js";
import { seedProbeChain, type ProbeChain } from "../support/probe-chain.js";
import { openWsSession, type WsSession } from "../support/ws-session.js";

interface Reply {
  jsonrpc: string;
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string };
}

const MAX_BATCH = 10;
const MAX_MESSAGE = 64 * 1024;
const PING_MS = 150;

let anvil: AnvilNode;
let ng: TestNodegate;
let chain: ProbeChain;
let session: WsSession;

beforeAll(async () => {
  anvil = await startAnvil();
  chain = await seedProbeChain(anvil.url);
  ng = await startNodegate({
    upstreamUrl: anvil.url,
    config: {
      limits: { ...DEFAULT_LIMITS, maxBodyBytes: 1024 * 1024, maxBatchSize: MAX_BATCH, maxWsMessageBytes: MAX_MESSAGE },
      websocket: { ...DEFAULT_WEBSOCKET, pingIntervalMs: PING_MS },
    },
  });
  session = await openWsSession(ng.wsUrl);
});
afterAll(async () => {
  await session?.close();
  await ng?.close();
  await anvil?.stop();
});

const request = (id: string, method: string, params = "[]") => `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${params}}`;

/** Status and body of a refused upgrade (a plain HTTP answer instead of 101). */
function tryUpgrade(path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: "127.0.0.1",
      port: ng.port,
      path,
      headers: { connection: "Upgrade", upgrade: "websocket", "sec-websocket-version": "13", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==" },
    });
    req.on("upgrade", (_res, socket) => {
      socket.destroy();
      reject(new Error(`upgrade to ${path} was accepted`));
    });
    req.on("response", (res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function httpPost(path: string, body: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${ng.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body });
  return { status: res.status, body: await res.text() };
}

describe("native WebSocket: one request per message", () => {
  it("answers a call with the node's result", async () => {
    session.send(request("1", "eth_chainId"));
    expect(await session.nextJson<Reply>()).toEqual({ jsonrpc: "2.0", id: 1, result: "0x7a69" });
  });

  it("echoes ids exactly as written (big integers, strings with escapes, fractions, exponents)", async () => {
    const ids = ["123456789012345678901234567890", '"req-\\u00e9\\"q"', "1.50", "1e3", "-7", "0", '""'];
    for (const id of ids) {
      session.send(request(id, "eth_blockNumber"));
      const text = await session.next();
      expect(text.startsWith(`{"jsonrpc":"2.0","id":${id},"result":"0x`)).toBe(true);
    }
  });

  it("answers null id requests with id null", async () => {
    session.send(request("null", "eth_chainId"));
    expect(await session.nextJson<Reply>()).toEqual({ jsonrpc: "2.0", id: null, result: "0x7a69" });
  });

  it("answers the same value the node gives for a real read (storage written by store())", async () => {
    session.send(request('"s"', "eth_getStorageAt", `["${chain.address}","0x0","latest"]`));
    const reply = await session.nextJson<Reply>();
    expect(BigInt(reply.result as string)).toBe(chain.storedValue);
  });

  it("sends nothing back for a notification, valid or not", async () => {
    session.send('{"jsonrpc":"2.0","method":"eth_chainId","params":[]}');
    session.send('{"jsonrpc":"2.0","method":"eth_noSuchMethod","params":[]}');
    session.send('[{"jsonrpc":"2.0","method":"eth_chainId"},{"jsonrpc":"2.0","method":"eth_blockNumber"}]');
    // A batch waits for all its members, so once this answer is in, the notification beside it is done.
    session.send(`[${request("99", "eth_chainId")},{"jsonrpc":"2.0","method":"eth_chainId"}]`);
    expect(await session.nextJson<Reply[]>()).toEqual([{ jsonrpc: "2.0", id: 99, result: "0x7a69" }]);
    expect(session.queued).toBe(0);
  });
});

describe("native WebSocket: batches", () => {
  it("answers valid and invalid members in order, each with its own id, skipping notifications", async () => {
    const batch = [
      request("1", "eth_chainId"),
      '{"jsonrpc":"1.0","id":2,"method":"eth_chainId","params":[]}',
      "5",
      '{"jsonrpc":"2.0","id":3,"method":7}',
      '{"jsonrpc":"2.0","method":"eth_chainId","params":[]}',
      '{"jsonrpc":"2.0","id":"four","method":"eth_chainId","params":"x"}',
      request("5", "eth_noSuchMethod"),
      request("6", "eth_getBlockByNumber", '["latest","yes"]'),
      request("7", "eth_getStorageAt", `["${chain.address}","0x0","latest"]`),
    ];
    session.send(`[${batch.join(",")}]`);
    const replies = await session.nextJson<Reply[]>();
    expect(replies.map((r) => r.id)).toEqual([1, 2, null, 3, "four", 5, 6, 7]);
    expect(replies[0]?.result).toBe("0x7a69");
    expect(replies.slice(1, 5).map((r) => r.error?.code)).toEqual([-32600, -32600, -32600, -32600]);
    expect(replies[1]?.error?.message).toMatch(/jsonrpc must be "2.0"/);
    expect(replies[3]?.error?.message).toMatch(/method must be a string/);
    expect(replies[4]?.error?.message).toMatch(/params must be an array or an object/);
    expect(replies[5]?.error).toMatchObject({ code: -32601, message: expect.stringContaining("eth_noSuchMethod") });
    expect(replies[6]?.error).toMatchObject({ code: -32602, message: expect.stringMatching(/argument 1 \(.*\)/) });
    expect(BigInt(replies[7]?.result as string)).toBe(chain.storedValue);
  });

  it("answers an empty batch with -32600 and id null", async () => {
    session.send("[]");
    expect(await session.nextJson<Reply>()).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it("answers a batch over the configured maximum with a -32600 for each call, under its own id", async () => {
    const members = Array.from({ length: MAX_BATCH + 1 }, (_, i) => request(String(i), "eth_chainId"));
    session.send(`[${members.join(",")}]`);
    const replies = await session.nextJson<Reply[]>();
    expect(replies.map((r) => r.id)).toEqual([...Array(MAX_BATCH + 1).keys()]);
    for (const reply of replies) {
      expect(reply.error?.code).toBe(-32600);
      expect(reply.error?.message).toContain(`maximum of ${MAX_BATCH}`);
    }
  });

  it("accepts a batch at the maximum", async () => {
    const members = Array.from({ length: MAX_BATCH }, (_, i) => request(String(i), "eth_chainId"));
    session.send(`[${members.join(",")}]`);
    const replies = await session.nextJson<Reply[]>();
    expect(replies.map((r) => r.id)).toEqual([...Array(MAX_BATCH).keys()]);
  });
});

describe("native WebSocket: envelope errors", () => {
  it("-32700 for unparsable text, with id null", async () => {
    session.send('{"jsonrpc":"2.0","id":1,"method":');
    expect(await session.nextJson<Reply>()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
  });

  it("-32600 for a request that is not an object, a bad id type, a wrong version, a non-string method, scalar params", async () => {
    const cases: [string, unknown][] = [
      ['"just a string"', null],
      ['{"jsonrpc":"2.0","id":{"a":1},"method":"eth_chainId"}', null],
      ['{"jsonrpc":"2.1","id":1,"method":"eth_chainId"}', 1],
      ['{"id":1,"method":"eth_chainId"}', 1],
      ['{"jsonrpc":"2.0","id":1}', 1],
      ['{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":3}', 1],
    ];
    for (const [text, id] of cases) {
      session.send(text);
      expect(await session.nextJson<Reply>()).toMatchObject({ id, error: { code: -32600 } });
    }
  });

  it("-32601 for an unknown method", async () => {
    session.send(request('"m"', "eth_noSuchMethod", '["newHeads"]'));
    const reply = await session.nextJson<Reply>();
    expect(reply).toMatchObject({ id: "m", error: { code: -32601 } });
    expect(reply.error?.message).toContain("eth_noSuchMethod");
  });

  it("-32602 naming the parameter", async () => {
    session.send(request("8", "eth_getStorageAt", '["0x1234","0x0","latest"]'));
    const reply = await session.nextJson<Reply>();
    expect(reply).toMatchObject({ id: 8, error: { code: -32602 } });
    expect(reply.error?.message).toMatch(/argument 0 \(address\)/);
  });

  it("gives the same answer text as the HTTP path for the same request", async () => {
    const texts = ["[]", '{"jsonrpc":"2.0","id":1,"method":', request("3", "eth_getStorageAt", '["0x1234","0x0","latest"]'), request("4", "eth_chainId")];
    for (const text of texts) {
      session.send(text);
      expect(await session.next()).toBe((await httpPost(`/v3/${ng.key}`, text)).body);
    }
  });

  it("reads a binary message as JSON text, as geth and Anvil do, and answers it in a text frame", async () => {
    const binaryFrames: boolean[] = [];
    session.socket.on("message", (_data, isBinary) => binaryFrames.push(isBinary));
    session.send(Buffer.from(request("1", "eth_chainId")));
    expect(await session.nextJson<Reply>()).toMatchObject({ id: 1, result: "0x7a69" });
    session.send(request("2", "eth_chainId"));
    expect(await session.nextJson<Reply>()).toMatchObject({ id: 2, result: "0x7a69" });
    expect(binaryFrames).toEqual([false, false]);
  });
});

describe("bytes that are not UTF-8", () => {
  // JSON text is UTF-8 (RFC 8259 §8.1); a stray byte was read as U+FFFD, so the call went to the node changed and
  // the id came back as the caller never wrote it (found from outside). Anvil refuses such a body too.
  const notUtf8 = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":"a'), Buffer.from([0xc3, 0x28]), Buffer.from('","method":"eth_chainId","params":[]}')]);

  it("-32700 with id null in a binary WebSocket message (a text frame that is not UTF-8 is closed 1007 by the WebSocket layer)", async () => {
    session.send(notUtf8);
    expect(await session.nextJson<Reply>()).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } });
    session.send(request("5", "eth_chainId"));
    expect(await session.nextJson<Reply>()).toMatchObject({ id: 5, result: "0x7a69" });
  });

  it("-32700 with id null over HTTP (status 200), as for any unparsable text", async () => {
    const res = await fetch(`${ng.url}/v3/${ng.key}`, { method: "POST", headers: { "content-type": "application/json" }, body: notUtf8 });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } });
  });

  it("UTF-8 text beyond ASCII is read as before", async () => {
    session.send(request('"é€😀"', "eth_chainId"));
    expect(await session.nextJson<Reply>()).toEqual({ jsonrpc: "2.0", id: "é€😀", result: "0x7a69" });
  });
});

describe("native WebSocket: concurrency", () => {
  it("answers a fast request sent after a slow one first; each carries its own id", async () => {
    // Under the gas cap (10x the block gas limit), so the call completes rather than being cut short.
    const data = encodeFunctionData({ abi: artifact("Probe").abi, functionName: "burn", args: [100_000n] });
    session.send(request('"slow"', "eth_call", JSON.stringify([{ to: chain.address, data, gas: "0x11e1a300" }, "latest"])));
    session.send(request('"fast"', "eth_chainId"));
    const first = await session.nextJson<Reply>();
    const second = await session.nextJson<Reply>();
    expect(first).toEqual({ jsonrpc: "2.0", id: "fast", result: "0x7a69" });
    expect(second.id).toBe("slow");
    expect(second.result).toMatch(/^0x[0-9a-f]{64}$/);
  });
});

describe("native WebSocket: connection handling", () => {
  it("closes with 1009 when a message exceeds the limit, and keeps serving other connections", async () => {
    const big = await openWsSession(ng.wsUrl);
    big.send(request("1", "eth_call", JSON.stringify([{ data: `0x${"00".repeat(MAX_MESSAGE)}` }, "latest"])));
    expect(await big.closed).toBe(1009);
    session.send(request("2", "eth_chainId"));
    expect(await session.nextJson<Reply>()).toMatchObject({ id: 2, result: "0x7a69" });
  });

  it("refuses the upgrade with the HTTP path's 401 for an unknown key and for no key", async () => {
    const unknown = await tryUpgrade("/ws/v3/not-a-key");
    expect(unknown.status).toBe(401);
    // An upgrade carries no request, so its body is the one HTTP gives a request without an id.
    const noId = JSON.stringify({ jsonrpc: "2.0", method: "eth_chainId", params: [] });
    expect(unknown).toEqual(await httpPost("/v3/not-a-key", noId));
    expect(JSON.parse(unknown.body)).toMatchObject({ error: { message: "invalid project id" } });

    const missing = await tryUpgrade("/ws/v3/");
    expect(missing.status).toBe(401);
    expect(JSON.parse(missing.body)).toMatchObject({ error: { message: "project id required in the url" } });
  });

  it("refuses the upgrade with 404 for an unknown network, and for a path that is not a WebSocket address", async () => {
    const network = await tryUpgrade(`/nonet/ws/v3/${ng.key}`);
    expect(network.status).toBe(404);
    expect(network).toEqual(await httpPost(`/nonet/v3/${ng.key}`, JSON.stringify({ jsonrpc: "2.0", method: "eth_chainId", params: [] })));
    // The HTTP path, the likeliest wrong URL, says where WebSocket connections go.
    expect(await tryUpgrade(`/v3/${ng.key}`)).toMatchObject({ status: 404, body: "not found: WebSocket connections go to /ws/v3/<KEY>\n" });
    expect(await tryUpgrade(`/ethereum/v3/${ng.key}`)).toMatchObject({ status: 404, body: "not found: WebSocket connections go to /ethereum/ws/v3/<KEY>\n" });
    expect(await tryUpgrade("/elsewhere")).toMatchObject({ status: 404, body: "not found\n" });
    // Not for a network nodegate does not serve (its WebSocket path would be refused too), whatever its length.
    expect(await tryUpgrade(`/${"n".repeat(6000)}/v3/${ng.key}`)).toMatchObject({ status: 404, body: "not found\n" });
  });

  it("serves a named network's WebSocket address", async () => {
    const named = await openWsSession(`ws://127.0.0.1:${ng.port}/ethereum/ws/v3/${ng.key}`);
    named.send(request("1", "eth_chainId"));
    expect(await named.nextJson<Reply>()).toMatchObject({ id: 1, result: "0x7a69" });
    await named.close();
  });

  it("answers a plain HTTP request to the WebSocket address with 426", async () => {
    const res = await fetch(`${ng.url}/ws/v3/${ng.key}`);
    expect(res.status).toBe(426);
    expect(res.headers.get("upgrade")).toBe("websocket");
  });

  it("still serves a non-WebSocket upgrade request (curl --http2's h2c) as plain HTTP/1.1", async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(ng.port, "127.0.0.1", () => {
        socket.write(
          "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n",
        );
      });
      let text = "";
      socket.on("data", (d: Buffer) => {
        text += d.toString();
        if (text.includes("ok\n")) {
          socket.destroy();
          resolve(text);
        }
      });
      socket.on("error", reject);
    });
    expect(answer.startsWith("HTTP/1.1 200")).toBe(true);
  });

  it("pings clients, keeps those that answer, and closes one that stops answering", async () => {
    const live = await openWsSession(ng.wsUrl);
    let pings = 0;
    live.socket.on("ping", () => pings++);
    const silent = await openWsSession(ng.wsUrl, { autoPong: false });
    // The silent client is closed by the server's keep-alive; the live one has seen pings meanwhile.
    expect(await silent.closed).toBe(1006);
    expect(pings).toBeGreaterThanOrEqual(1);
    expect(live.socket.readyState).toBe(WebSocket.OPEN);
    live.send(request("1", "eth_chainId"));
    expect(await live.nextJson<Reply>()).toMatchObject({ id: 1, result: "0x7a69" });
    await live.close();
  });

  it("a subscriber that answers no ping is closed though its events fill the socket buffers, not only once they are full", async () => {
    // Found from outside: the events the kernel took counted as the client reading, and a subscriber that read nothing
    // and answered no ping (or a peer that vanished) stayed open for minutes.
    const silent = await openWsSession(ng.wsUrl, { autoPong: false });
    silent.send(request("1", "eth_subscribe", '["newHeads"]'));
    expect(await silent.nextJson<Reply>()).toMatchObject({ id: 1 });
    let closed: number | undefined;
    void silent.closed.then((code) => {
      closed = code;
    });
    for (let i = 0; i < 100 && closed === undefined; i++) {
      await fetch(anvil.url, { method: "POST", headers: { "content-type": "application/json" }, body: request("1", "evm_mine") });
      await new Promise((r) => setTimeout(r, 30));
    }
    expect(closed).toBe(1006);
  });

  it("a client that keeps sending while nodegate drains is closed about a second in, not at the drain deadline (5 s); later calls hear why", async () => {
    // Found from outside: with a call always in flight the client was served until drainMs, and what it sent last went unanswered.
    // One call the node holds keeps the client open past the drain's reading time (1 s), whatever the machine's pace,
    // so what it sends from then on is surely told to go elsewhere.
    let letGo = (): void => {};
    const gate = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    const upstream = await startProgrammableUpstream(async (r) => {
      if (r.method === "eth_blockNumber") await gate;
      return { forward: anvil.url };
    });
    const other = await startNodegate({ upstreamUrl: upstream.url });
    const client = await openWsSession(other.wsUrl);
    const replies: Reply[] = [];
    client.socket.on("message", (data) => replies.push(JSON.parse(String(data)) as Reply));
    client.send(request("1000000", "eth_blockNumber"));
    await vi.waitFor(() => expect(upstream.count("eth_blockNumber")).toBe(1));
    let id = 0;
    const chatter = setInterval(() => {
      if (client.socket.readyState === WebSocket.OPEN) client.send(request(String(++id), "eth_chainId"));
    }, 20);
    try {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const started = performance.now();
      const stopped = other.server.close(5000);
      await vi.waitFor(() => expect(replies.some((r) => r.error?.code === -32056)).toBe(true), { timeout: 4000 });
      letGo();
      const code = await client.closed;
      const closedAfterMs = performance.now() - started;
      await stopped;
      expect(code).toBe(1012);
      // Closed once the held call was answered, though the client kept sending.
      expect(closedAfterMs).toBeLessThan(4000);
      expect(replies.find((r) => r.id === 1000000)?.result).toMatch(/^0x[0-9a-f]+$/);
      expect(replies.some((r) => r.result === "0x7a69")).toBe(true);
    } finally {
      clearInterval(chatter);
      letGo();
      await upstream.close();
    }
  });

  it("a draining client's message that waits unread while nodegate is busy is answered, not taken for quiet", async () => {
    // Timers run before sockets are read: after a busy stretch longer than the drain's quiet time (50 ms), a message
    // already sent looked like quiet, and the client was closed with its call unanswered (seen under a loaded suite).
    const other = await startNodegate({ upstreamUrl: anvil.url });
    const client = await openWsSession(other.wsUrl);
    const stopped = other.server.close(5000);
    // Sent, then this process (client and nodegate) is busy past the quiet time, from the loop's check phase: the
    // timers come next (the drain's quiet check is due by then), and only after them is the socket read.
    await new Promise<void>((resolve) =>
      setImmediate(() => {
        client.send(request("7", "eth_chainId"));
        const until = performance.now() + 150;
        while (performance.now() < until) {
          // busy
        }
        resolve();
      }),
    );
    const first = await Promise.race([client.nextJson<Reply>(), client.closed.then((code) => ({ closedUnanswered: code }))]);
    expect(first).toMatchObject({ id: 7, result: "0x7a69" });
    expect(await client.closed).toBe(1012);
    await stopped;
  });

  it("closes its clients when nodegate shuts down", async () => {
    const other = await startNodegate({ upstreamUrl: anvil.url });
    const client = await openWsSession(other.wsUrl);
    client.send(request("1", "eth_chainId"));
    await client.next();
    await other.close();
    expect([1012, 1006]).toContain(await client.closed);
  });
});
