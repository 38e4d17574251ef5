/**
 * A request over the size limit on a lane Connect serves (here grpc.health)
 * is refused RESOURCE_EXHAUSTED, and its HTTP/2 stream then goes away on the
 * server too. Found from outside: Connect stops reading such a body, and
 * Node destroys a closed stream only once its body has been read, so the
 * stream stayed open in the server; a client closing its channel (GOAWAY,
 * then FIN) left the session waiting for it and reading nothing more: a
 * socket in CLOSE-WAIT per call, and a stop held to the drain deadline.
 */
import http2 from "node:http2";
import { expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/config.js";
import { startNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const LIMIT = 20_000;

it("a refused oversize body leaves no stream behind: the client's GOAWAY closes the session and the drain is not held", async () => {
  const upstream: ProgrammableUpstream = await startProgrammableUpstream(() => ({ result: "0x2a" }));
  const ng = await startNodegate({ upstreamUrl: upstream.url, config: { limits: { ...DEFAULT_LIMITS, maxBodyBytes: LIMIT } } });
  try {
    const session = http2.connect(`http://${ng.address}`);
    session.on("error", () => {});
    const body = Buffer.alloc(10 * LIMIT + 5);
    body.writeUInt32BE(body.length - 5, 1);
    const call = session.request({ ":method": "POST", ":path": "/grpc.health.v1.Health/Check", "content-type": "application/grpc", te: "trailers" });
    const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => call.once("trailers", resolve));
    call.on("data", () => {});
    call.on("error", () => {});
    call.end(body);
    expect((await trailers)["grpc-status"]).toBe("8");
    await new Promise((resolve) => call.once("close", resolve));

    // The client closes its channel as grpc-js does: GOAWAY, then its side of the connection.
    const socketClosed = new Promise<void>((resolve) => session.socket.once("close", () => resolve()));
    session.close();
    const by5s = <T>(p: Promise<T>) => Promise.race([p, new Promise((r) => setTimeout(() => r("still open after 5 s"), 5000))]);
    expect(await by5s(socketClosed.then(() => "closed"))).toBe("closed");
    const drained = ng.server.close(60_000).then(() => "closed");
    expect(await by5s(drained)).toBe("closed");
  } finally {
    await ng.close();
    await upstream.close();
  }
});
