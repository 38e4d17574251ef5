/**
 * One HTTP/2 connection may hold at most 1,000 streams at once: nodegate
 * announces the bound in its SETTINGS, and streams past it are refused
 * (REFUSED_STREAM), while the connection and every other client go on.
 * Found from outside: Node announces no bound, and one connection that
 * opened streams and sent no body grew the process 31 KB a stream and
 * stalled other clients for seconds.
 */
import http2 from "node:http2";
import { expect, it } from "vitest";
import { startNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const BOUND = 1000;

it("streams past 1,000 open on one connection are refused, and the connection still serves", async () => {
  const upstream: ProgrammableUpstream = await startProgrammableUpstream(() => ({ result: "0x2a" }));
  const ng = await startNodegate({ upstreamUrl: upstream.url });
  // A client that does not wait for the server's SETTINGS, as one flooding would not.
  const session = http2.connect(`http://${ng.address}`, { peerMaxConcurrentStreams: 1e9 });
  session.on("error", () => {});
  try {
    const settings = new Promise((resolve) => session.once("remoteSettings", resolve));
    const streams = Array.from({ length: BOUND + 50 }, () => {
      const stream = session.request(
        { ":method": "POST", ":path": "/grpc.health.v1.Health/Check", "content-type": "application/grpc", te: "trailers" },
        { endStream: false },
      );
      stream.on("error", () => {});
      return stream;
    });
    const refused = await Promise.all(
      streams.slice(BOUND).map((s) => new Promise<number | undefined>((resolve) => s.once("close", () => resolve(s.rstCode)))),
    );
    expect(refused.every((code) => code === http2.constants.NGHTTP2_REFUSED_STREAM)).toBe(true);
    await settings;
    expect(session.remoteSettings.maxConcurrentStreams).toBe(BOUND);
    for (const stream of streams.slice(0, BOUND)) stream.close(http2.constants.NGHTTP2_CANCEL);
    await Promise.all(streams.slice(0, BOUND).map((s) => (s.closed ? undefined : new Promise((resolve) => s.once("close", resolve)))));
    // The same connection serves the next call.
    const check = session.request({ ":method": "POST", ":path": "/grpc.health.v1.Health/Check", "content-type": "application/grpc", te: "trailers" });
    const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => check.once("trailers", resolve));
    check.on("data", () => {});
    check.end(Buffer.alloc(5));
    expect((await trailers)["grpc-status"]).toBe("0");
  } finally {
    session.destroy();
    await ng.close();
    await upstream.close();
  }
});
