/**
 * A client's HTTP/2 connection error: nghttp2 answers GOAWAY and reads nothing
 * more, so Node never sees the client close its side, and the streams still
 * open on the connection got no event (found from outside, h88: a health
 * Watch so held was there after 4 minutes and held a drain for its whole
 * drainMs; the socket sat in CLOSE-WAIT). nodegate pings a session with
 * streams open that has read nothing for a headers deadline, and ends one
 * that does not answer within another.
 */
import net from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/config.js";
import { h2Frame, hpackLiteral } from "../support/h2-frames.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const HEADERS_MS = 300;
let upstream: ProgrammableUpstream;
let ng: TestNodegate;

beforeAll(async () => {
  upstream = await startProgrammableUpstream(() => ({ result: "0x1" }));
  ng = await startNodegate({ upstreamUrl: upstream.url, config: { limits: { ...DEFAULT_LIMITS, headersTimeoutMs: HEADERS_MS } } });
});
afterAll(async () => {
  await ng?.close();
  await upstream?.close();
});

const openStreams = async (): Promise<number> => Number(/^nodegate_open_streams (\d+)$/m.exec(await (await fetch(`${ng.url}/metrics`)).text())?.[1]);

/**
 * A raw connection that opens a health Watch (it answers SERVING and stays open), then does `then` on the socket.
 * Resolves once the socket has closed, or after `waitMs`, with whether the server closed it and the frame types it sent.
 */
function watchThen(then: (socket: net.Socket) => void, waitMs: number): Promise<{ closed: boolean; frames: number[]; goawayCode?: number }> {
  const headers = Buffer.concat(
    [
      [":method", "POST"],
      [":scheme", "http"],
      [":path", "/grpc.health.v1.Health/Watch"],
      [":authority", "127.0.0.1"],
      ["content-type", "application/grpc"],
      ["te", "trailers"],
    ].map(([n, v]) => hpackLiteral(n as string, v as string)),
  );
  return new Promise((resolve) => {
    const socket = net.connect(ng.port, "127.0.0.1");
    const frames: number[] = [];
    let goawayCode: number | undefined;
    let buffered = Buffer.alloc(0);
    let acted = false;
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ closed: false, frames, ...(goawayCode === undefined ? {} : { goawayCode }) });
    }, waitMs);
    socket.on("connect", () => {
      socket.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), h2Frame(4, 0, 0), h2Frame(1, 4, 1, headers), h2Frame(0, 1, 1, Buffer.alloc(5))]));
    });
    socket.on("data", (data: Buffer) => {
      buffered = Buffer.concat([buffered, data]);
      while (buffered.length >= 9) {
        const length = buffered.readUIntBE(0, 3);
        if (buffered.length < 9 + length) break;
        const type = buffered[3] as number;
        const flags = buffered[4] as number;
        const payload = buffered.subarray(9, 9 + length);
        buffered = buffered.subarray(9 + length);
        frames.push(type);
        if (type === 4 && (flags & 1) === 0) socket.write(h2Frame(4, 1, 0)); // SETTINGS ack
        if (type === 7) goawayCode ??= payload.readUInt32BE(4);
        // The Watch's first message (DATA on stream 1): the stream is open and answered.
        if (type === 0 && !acted) {
          acted = true;
          then(socket);
        }
      }
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ closed: true, frames, ...(goawayCode === undefined ? {} : { goawayCode }) });
    });
  });
}

it("a client's connection error, then its close: the session is ended within two headers deadlines and its Watch stream with it", async () => {
  const before = await openStreams();
  // DATA on stream 0 (a connection error: nghttp2 answers GOAWAY PROTOCOL_ERROR), then the client closes its side.
  const run = await watchThen((socket) => {
    socket.write(h2Frame(0, 0, 0, Buffer.from("xx")));
    setTimeout(() => socket.end(), 50);
  }, 20 * HEADERS_MS);
  expect(run.goawayCode).toBe(1);
  expect(run.closed).toBe(true);
  for (let i = 0; i < 50 && (await openStreams()) > before; i++) await new Promise((r) => setTimeout(r, 50));
  expect(await openStreams()).toBe(before);
});

it("a quiet client that answers PINGs keeps its Watch open past many headers deadlines", async () => {
  // The raw client acknowledges nodegate's PINGs as every HTTP/2 client does, and sends nothing else.
  const run = await watchThen((socket) => {
    socket.on("data", (data: Buffer) => {
      // A PING (type 6) without ACK: answer with the same payload (a PING is 9 + 8 bytes; frames here are whole).
      for (let at = data.indexOf(Buffer.from([0, 0, 8, 6, 0])); at >= 0; at = data.indexOf(Buffer.from([0, 0, 8, 6, 0]), at + 1)) {
        socket.write(h2Frame(6, 1, 0, data.subarray(at + 9, at + 17)));
      }
    });
  }, 10 * HEADERS_MS);
  expect(run.closed).toBe(false);
  expect(run.frames).toContain(6);
  expect(run.frames).not.toContain(7);
});
