/**
 * One HTTP/2 connection may hold at most maxSubscriptionsPerKey + 1,000
 * streams at once (2,000 by default): nodegate announces the bound in its
 * SETTINGS, and streams past it are refused (REFUSED_STREAM), while the
 * connection and every other client go on. Found from outside: Node
 * announces no bound, and one connection that opened streams and sent no
 * body grew the process 31 KB a stream and stalled other clients for
 * seconds. The bound leaves a key's whole subscription allowance room for
 * calls beside it (a bound of 1,000, the allowance, starved them).
 */
import http2 from "node:http2";
import { expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/config.js";
import { startNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const BOUND = 2000;

it("streams past 2,000 open on one connection are refused, and other connections are served", async () => {
  const upstream: ProgrammableUpstream = await startProgrammableUpstream(() => ({ result: "0x2a" }));
  // Health streams, which take no key, are counted by the process too (keyless-calls.ts): that bound is lifted here.
  const ng = await startNodegate({ upstreamUrl: upstream.url, config: { limits: { ...DEFAULT_LIMITS, maxKeylessCalls: 10_000, maxKeylessCallsPerAddress: 10_000 } } });
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
    // Another connection is served meanwhile. (Not this one: cancelling its 2,000 streams would trip the guard
    // against reset floods, which ends the connection.)
    const other = http2.connect(`http://${ng.address}`);
    other.on("error", () => {});
    try {
      const check = other.request({ ":method": "POST", ":path": "/grpc.health.v1.Health/Check", "content-type": "application/grpc", te: "trailers" });
      const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => check.once("trailers", resolve));
      check.on("data", () => {});
      check.end(Buffer.alloc(5));
      expect((await trailers)["grpc-status"]).toBe("0");
    } finally {
      other.destroy();
    }
  } finally {
    session.destroy();
    await ng.close();
    await upstream.close();
  }
});
