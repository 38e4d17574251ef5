/**
 * The native path hands back the node's result byte for byte, however the
 * node's reply arrived: small answers leave joined in one write, large ones
 * as the chunks they came in. Here the node writes its reply in two pieces
 * split inside a multi-byte UTF-8 character, with a pause between them so
 * they arrive apart; the answer must still carry every byte of the result.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";

/** Result text per requested size: mostly ASCII, with 2-, 3- and 4-byte characters throughout. */
function resultOf(bytes: number): string {
  const unit = "abcé€😀";
  return unit.repeat(Math.ceil(bytes / Buffer.byteLength(unit)));
}

let upstream: Server;
let nodegate: TestNodegate;
/** The upstream's result for the next call: its size, and trailing whitespace after the reply (counted in the reply, not the answer). */
let next = { resultBytes: 100, trailing: 0 };

beforeAll(async () => {
  upstream = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const { id } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { id: number };
      const reply = Buffer.from(`{"jsonrpc":"2.0","id":${id},"result":${JSON.stringify(resultOf(next.resultBytes))}}${" ".repeat(next.trailing)}`);
      // Split inside the first 4-byte character past the middle, so no piece ends on a character boundary.
      const emoji = reply.indexOf(Buffer.from("😀"), reply.length >> 1);
      const cut = emoji + 2;
      res.writeHead(200, { "content-type": "application/json", "content-length": reply.length });
      res.write(reply.subarray(0, cut));
      setTimeout(() => res.end(reply.subarray(cut)), 30);
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  nodegate = await startNodegate({ upstreamUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` });
});

afterAll(async () => {
  await nodegate?.close();
  await new Promise((resolve) => upstream?.close(resolve));
});

describe("native answers keep the node's bytes", () => {
  it.each([
    { resultBytes: 200, trailing: 0, what: "a small reply" },
    { resultBytes: 15_000, trailing: 2_000, what: "a chunked reply whose answer is under 16 KiB (joined)" },
    { resultBytes: 40_000, trailing: 0, what: "a 40 KiB reply (joined)" },
    { resultBytes: 300_000, trailing: 0, what: "a 300 KiB reply (written as its chunks)" },
  ])("$what", async ({ resultBytes, trailing }) => {
    next = { resultBytes, trailing };
    const res = await fetch(nodegate.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: "caller-1", method: "eth_chainId", params: [] }),
    });
    const body = Buffer.from(await res.arrayBuffer());
    expect(res.status).toBe(200);
    expect(Number(res.headers.get("content-length"))).toBe(body.length);
    const expected = Buffer.from(`{"jsonrpc":"2.0","id":"caller-1","result":${JSON.stringify(resultOf(resultBytes))}}`);
    expect(body.equals(expected)).toBe(true);
  });
});
