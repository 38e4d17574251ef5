/**
 * Health and reflection take no key, so no key's limits count them: the process does (limits.maxKeylessCalls, and
 * limits.maxKeylessCallsPerAddress from one client address). Found from outside (h97): keyless Health/Watch and
 * headers-only Health/Check streams, about 60 KB each, grew the process by a gigabyte over a few connections. Past
 * either bound a call is refused RESOURCE_EXHAUSTED at its headers; each is given back when its response closes.
 */
import http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/config.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

let upstream: ProgrammableUpstream;
let ng: TestNodegate;

beforeAll(async () => {
  upstream = await startProgrammableUpstream(() => ({ result: "0x2a" }));
  ng = await startNodegate({ upstreamUrl: upstream.url, config: { limits: { ...DEFAULT_LIMITS, maxKeylessCalls: 6, maxKeylessCallsPerAddress: 4 } } });
});
afterAll(async () => {
  await ng?.close();
  await upstream?.close();
});

const WATCH = "/grpc.health.v1.Health/Watch";
const CHECK = "/grpc.health.v1.Health/Check";
const REFLECTION = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
const emptyMessage = Buffer.alloc(5);

/** An HTTP/2 connection from `localAddress` (any 127.0.0.0/8 address reaches the loopback listener). */
async function connectFrom(localAddress: string): Promise<http2.ClientHttp2Session> {
  const session = http2.connect(`http://${ng.address}`, { localAddress } as http2.SecureClientSessionOptions);
  session.on("error", () => {});
  await new Promise((resolve) => session.once("remoteSettings", resolve));
  return session;
}

/** Opens a keyless stream that sends its headers and part of a message, never the rest. */
function startedOnly(session: http2.ClientHttp2Session, path: string): http2.ClientHttp2Stream {
  const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" });
  stream.on("error", () => {});
  stream.write(emptyMessage.subarray(0, 2));
  return stream;
}

/** Opens a keyless stream with its (empty) request; resolves with its head once nodegate has answered it (a refusal is a trailers-only head). */
function open(session: http2.ClientHttp2Session, path: string): Promise<{ stream: http2.ClientHttp2Stream; head: http2.IncomingHttpHeaders }> {
  const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" });
  stream.on("error", () => {});
  stream.on("data", () => {});
  stream.end(emptyMessage);
  return new Promise((resolve) => stream.once("response", (head) => resolve({ stream, head })));
}

it("past limits.maxKeylessCallsPerAddress from one address, and limits.maxKeylessCalls in all, a keyless call is refused at its headers; keyed calls go on; each is given back when it closes", async () => {
  const first = await connectFrom("127.0.0.1");
  const second = await connectFrom("127.0.0.2");
  const third = await connectFrom("127.0.0.3");
  try {
    // Four from one address: two Watches (answered SERVING, and held open), a Check whose body never ends, a reflection stream.
    const watches = await Promise.all([open(first, WATCH), open(first, WATCH)]);
    for (const { head } of watches) expect(head["grpc-status"]).toBeUndefined(); // answered with a head, still open
    // These two say nothing until their requests come, which they never do.
    const silent = [startedOnly(first, REFLECTION), startedOnly(first, CHECK)];
    await expect.poll(async () => (await open(first, CHECK)).head["grpc-status"]).toBe(String(grpc.status.RESOURCE_EXHAUSTED));

    const refusedHere = await open(first, WATCH);
    expect(refusedHere.head["grpc-status"]).toBe(String(grpc.status.RESOURCE_EXHAUSTED));
    expect(decodeURIComponent(String(refusedHere.head["grpc-message"]))).toBe(
      "too many health and reflection calls at once: 4 are open from this client's address (limits.maxKeylessCalls, limits.maxKeylessCallsPerAddress)",
    );

    // Two more from another address fill the process's six.
    await Promise.all([open(second, WATCH), open(second, WATCH)]);
    const refusedAll = await open(third, WATCH);
    expect(decodeURIComponent(String(refusedAll.head["grpc-message"]))).toBe(
      "too many health and reflection calls at once: 6 are open (limits.maxKeylessCalls, limits.maxKeylessCallsPerAddress)",
    );
    // gRPC-Web and the Connect protocol over HTTP/1.1 are counted alike.
    const web = await fetch(`${ng.url}${CHECK}`, { method: "POST", headers: { "content-type": "application/grpc-web+proto" }, body: emptyMessage });
    expect([web.status, web.headers.get("grpc-status")]).toEqual([200, null]);
    expect(Buffer.from(await web.arrayBuffer()).toString("latin1")).toMatch(new RegExp(`grpc-status: ?${grpc.status.RESOURCE_EXHAUSTED}\r\n`));
    const connect = await fetch(`${ng.url}${CHECK}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect([connect.status, ((await connect.json()) as { code: string }).code]).toEqual([429, "resource_exhausted"]);

    // Keyed calls are another account.
    expect((await post(ng.rpcUrl, rpc("eth_chainId", [], 1))).json.result).toBe("0x2a");

    // Given back as they close: the first address's streams end, and a Check from it is answered.
    for (const { stream } of watches) stream.close();
    for (const stream of silent) stream.close();
    await expect.poll(async () => (await open(third, CHECK)).head["grpc-status"], { timeout: 5000 }).toBeUndefined();
    const checked = await open(first, CHECK);
    expect(checked.head[":status"]).toBe(200);
  } finally {
    first.destroy();
    second.destroy();
    third.destroy();
  }
});
