/**
 * The decoded size of an HTTP/2 request's header list is bounded, and announced (SETTINGS_MAX_HEADER_LIST_SIZE).
 * Found from outside: Node announces no such limit by default, and HPACK lets a 1-byte field name a 4 KB header
 * already in the dynamic table, so a 2 KB request decoded to 7.6 MB of headers; 170 KB/s of them from one client,
 * with no valid key, kept a core busy and held other callers' answers up to 3 s.
 */
import http2 from "node:http2";
import net from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { post, rpc } from "../support/http.js";
import { h2Frame, hpackInteger, hpackLiteral, hpackText } from "../support/h2-frames.js";

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

const MAX_HEADER_LIST_SIZE = 64 * 1024;

/** A field whose name is the static table's entry `index`, not added to the dynamic table. */
const literalNamed = (index: number, value: string) => Buffer.concat([hpackInteger(index, 4, 0x00), hpackText(value)]);


/** What the server did with one stream: answered it (a HEADERS frame), reset it (RST_STREAM's code), or ended the connection (GOAWAY). */
async function sendHeaderBlock(block: Buffer): Promise<{ answered: boolean; resetCode?: number; goaway: boolean }> {
  const socket = net.connect(ng.port, "127.0.0.1");
  await new Promise((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  const outcome = { answered: false, resetCode: undefined as number | undefined, goaway: false };
  let pending = Buffer.alloc(0);
  const done = new Promise<void>((resolve) => {
    socket.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 9) {
        const length = pending.readUIntBE(0, 3);
        if (pending.length < 9 + length) break;
        const type = pending[3];
        const stream = pending.readUInt32BE(5) & 0x7fffffff;
        if (type === 1 && stream === 1) outcome.answered = true;
        if (type === 3 && stream === 1) outcome.resetCode = pending.readUInt32BE(9);
        if (type === 7) outcome.goaway = true;
        pending = pending.subarray(9 + length);
        if (outcome.answered || outcome.resetCode !== undefined || outcome.goaway) resolve();
      }
    });
    socket.on("close", () => resolve());
  });
  socket.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), h2Frame(4, 0, 0, Buffer.alloc(0)), h2Frame(4, 1, 0, Buffer.alloc(0))]));
  socket.write(h2Frame(1, 0x4 | 0x1, 1, block)); // END_HEADERS | END_STREAM
  await done;
  socket.destroy();
  return outcome;
}

/** A gRPC call's head (POST, http, :path, :authority, content-type, te), no key. */
function callHead(): Buffer {
  return Buffer.concat([
    Buffer.from([0x83, 0x86]), // :method POST, :scheme http (static table)
    literalNamed(4, "/nodegate.eth.v1.EthService/BlockNumber"),
    literalNamed(1, `127.0.0.1:${ng.port}`),
    hpackLiteral("content-type", "application/grpc", false),
    hpackLiteral("te", "trailers", false),
  ]);
}

it("announces a bound on a request's header list", async () => {
  const session = http2.connect(ng.url);
  try {
    await new Promise((resolve) => session.once("remoteSettings", resolve));
    expect(session.remoteSettings.maxHeaderListSize).toBe(MAX_HEADER_LIST_SIZE);
  } finally {
    session.close();
  }
});

it("a small request naming a large header again and again is refused before its headers are taken, and nothing else waits on it", async () => {
  // One 4000-byte header added to the table, then named by 1,900 one-byte references: 7.6 MB once decoded.
  const bomb = Buffer.concat([callHead(), hpackLiteral("x-bomb", "z".repeat(4000), true), Buffer.alloc(1900, 0xbe)]);
  expect(bomb.length).toBeLessThan(6_500);
  const outcome = await sendHeaderBlock(bomb);
  expect(outcome.answered).toBe(false);
  expect(outcome.resetCode === http2.constants.NGHTTP2_ENHANCE_YOUR_CALM || outcome.goaway).toBe(true);

  // A head within the bound is taken (answered: here UNAUTHENTICATED, no key), and the native door goes on serving.
  const within = await sendHeaderBlock(Buffer.concat([callHead(), hpackLiteral("x-fine", "z".repeat(4000), true), Buffer.alloc(10, 0xbe)]));
  expect(within.answered).toBe(true);
  expect((await post(ng.rpcUrl, rpc("eth_chainId"))).json.result).toBe("0x7a69");
});
