/**
 * A large answer over the native WebSocket leaves as one message in several
 * frames, one per part it was read in, not joined into one more copy first:
 * the copy doubled what a large answer held (a batch of 200 MB answers peaked
 * at 2.5 GB over WebSocket, 1.5 GB over HTTP, found from outside). Clients
 * see one message either way.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import WebSocket from "ws";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";

const CODE = `0x${"ab".repeat(1_500_000)}`; // 3 MB of JSON text
let node: http.Server;
let ng: TestNodegate;

beforeAll(async () => {
  node = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      const request = JSON.parse(body) as { id: number; method: string };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(`{"jsonrpc":"2.0","id":${request.id},"result":${request.method === "eth_getCode" ? `"${CODE}"` : '"0x7a69"'}}`);
    });
  });
  await new Promise<void>((resolve) => node.listen(0, "127.0.0.1", resolve));
  ng = await startNodegate({ upstreamUrl: `http://127.0.0.1:${(node.address() as AddressInfo).port}` });
});
afterAll(async () => {
  await ng?.close();
  await new Promise<void>((resolve) => node?.close(() => resolve()));
});

/** Sends `text` and returns the next message, with the frames it came in (opcode, FIN), read off the socket. */
async function exchange(text: string): Promise<{ message: string; frames: { opcode: number; fin: boolean }[] }> {
  const ws = new WebSocket(ng.wsUrl, { perMessageDeflate: false });
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  const frames: { opcode: number; fin: boolean }[] = [];
  let pending = Buffer.alloc(0);
  let payloadLeft = 0;
  // Server frames are unmasked: 2 header bytes, then a 16- or 64-bit length when the 7-bit one is 126 or 127.
  (ws as unknown as { _socket: NodeJS.EventEmitter })._socket.on("data", (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      if (payloadLeft > 0) {
        const skip = Math.min(payloadLeft, pending.length);
        payloadLeft -= skip;
        pending = pending.subarray(skip);
        if (payloadLeft > 0) return;
      }
      if (pending.length < 2) return;
      const short = (pending[1] as number) & 0x7f;
      const headerLength = short === 126 ? 4 : short === 127 ? 10 : 2;
      if (pending.length < headerLength) return;
      const length = short === 126 ? pending.readUInt16BE(2) : short === 127 ? Number(pending.readBigUInt64BE(2)) : short;
      frames.push({ opcode: (pending[0] as number) & 0x0f, fin: ((pending[0] as number) & 0x80) !== 0 });
      pending = pending.subarray(headerLength);
      payloadLeft = length;
    }
  });
  const message = new Promise<string>((resolve) => ws.once("message", (data: Buffer) => resolve(data.toString())));
  ws.send(text);
  const result = { message: await message, frames };
  ws.close();
  return result;
}

it("a 3 MB answer arrives as one message, sent in frames of its parts", async () => {
  const { message, frames } = await exchange('{"jsonrpc":"2.0","id":7,"method":"eth_getCode","params":["0x1111111111111111111111111111111111111111","latest"]}');
  expect(message).toBe(`{"jsonrpc":"2.0","id":7,"result":"${CODE}"}`);
  expect(frames.length).toBeGreaterThan(1);
  expect(frames[0]).toEqual({ opcode: 1, fin: false });
  expect(frames.slice(1, -1).every((f) => f.opcode === 0 && !f.fin)).toBe(true);
  expect(frames.at(-1)).toEqual({ opcode: 0, fin: true });
});

it("a batch with a large answer too, and a small answer still goes as one frame", async () => {
  const batch = await exchange(
    '[{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]},{"jsonrpc":"2.0","id":2,"method":"eth_getCode","params":["0x1111111111111111111111111111111111111111","latest"]}]',
  );
  expect(JSON.parse(batch.message)).toEqual([
    { jsonrpc: "2.0", id: 1, result: "0x7a69" },
    { jsonrpc: "2.0", id: 2, result: CODE },
  ]);
  expect(batch.frames.length).toBeGreaterThan(1);
  const small = await exchange('{"jsonrpc":"2.0","id":3,"method":"eth_chainId","params":[]}');
  expect(small.message).toBe('{"jsonrpc":"2.0","id":3,"result":"0x7a69"}');
  expect(small.frames).toEqual([{ opcode: 1, fin: true }]);
});
