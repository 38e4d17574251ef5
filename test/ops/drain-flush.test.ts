/**
 * A graceful close lets answers already written reach the client. A large
 * gRPC answer goes to a client that reads more slowly than nodegate writes
 * (a TCP relay that forwards a chunk, then waits), so when nodegate is done
 * with the call, the tail of the answer still sits in its kernel's send
 * queue; the client then sends a frame, as grpcio and grpc-go do while
 * reading (BDP pings, window updates). Found from outside with grpcio on
 * SIGTERM: the close destroyed every socket once no call was in flight, the
 * kernel answered the client's next frame with a reset, and the client lost
 * the answer's tail.
 *
 * The client is Node's HTTP/2 client (the transport under grpc-js), told when
 * to grow its connection window; Node refuses to ping once it has a GOAWAY.
 */
import { existsSync } from "node:fs";
import http2 from "node:http2";
import net from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService, GetLogsRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

// 8,000 logs of 1 KiB data: about 17 MiB of JSON and 9 MiB of protobuf, more than loopback's socket buffers hold.
const LOG_COUNT = 8000;
const log = (i: number) =>
  `{"address":"0x${"12".repeat(20)}","topics":["0x${i.toString(16).padStart(64, "0")}"],"data":"0x${"5a".repeat(1024)}","blockNumber":"0x9","transactionHash":"0x${"cd".repeat(32)}","transactionIndex":"0x0","blockHash":"0x${"ef".repeat(32)}","logIndex":"0x${i.toString(16)}","removed":false}`;
const LOGS = `[${Array.from({ length: LOG_COUNT }, (_, i) => log(i)).join(",")}]`;

let upstream: ProgrammableUpstream;
let ng: TestNodegate;
let relay: net.Server | undefined;
const relayed = new Set<net.Socket>();

/** Forwards the client's bytes at once and nodegate's a chunk every 2 ms, so nodegate's side stays full. */
function startSlowRelay(port: number): Promise<number> {
  const server = net.createServer((client) => {
    const toNodegate = net.connect(port, "127.0.0.1");
    relayed.add(client).add(toNodegate);
    client.pipe(toNodegate);
    toNodegate.on("data", (chunk) => {
      client.write(chunk);
      toNodegate.pause();
      setTimeout(() => toNodegate.resume(), 2);
    });
    toNodegate.on("end", () => client.end());
    client.on("error", () => toNodegate.destroy());
    toNodegate.on("error", () => client.destroy());
  });
  relay = server;
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port)));
}

beforeAll(async () => {
  upstream = await startProgrammableUpstream((r) => (r.method === "eth_getLogs" ? { raw: `{"jsonrpc":"2.0","id":${JSON.stringify(r.id)},"result":${LOGS}}` } : { result: "0x1" }));
  ng = await startNodegate({ upstreamUrl: upstream.url });
});
afterAll(async () => {
  for (const socket of relayed) socket.destroy();
  relay?.close();
  await upstream?.close();
});

it("an answer still queued when the last call ends reaches a slow client whole, though the client sends a frame after that", async () => {
  const session = http2.connect(`http://127.0.0.1:${await startSlowRelay(ng.port)}`, { settings: { initialWindowSize: 2 ** 31 - 1 } });
  session.on("error", () => {});
  // Windows larger than the answer (as BDP probing reaches) let nodegate write all of it at once.
  session.on("connect", () => session.setLocalWindowSize(2 ** 30));
  const method = EthService.method.getLogs;
  const bytes = toBinary(method.input, create(GetLogsRequestSchema, { filter: { fromBlock: { kind: { case: "number", value: 9n } }, toBlock: { kind: { case: "number", value: 9n } } } }));
  const frame = Buffer.alloc(5 + bytes.length);
  frame.writeUInt32BE(bytes.length, 1);
  frame.set(bytes, 5);
  const stream = session.request({ ":method": "POST", ":path": `/${EthService.typeName}/${method.name}`, "content-type": "application/grpc", te: "trailers", "x-api-key": ng.key });
  stream.end(frame);
  const chunks: Buffer[] = [];
  let trailers: http2.IncomingHttpHeaders | undefined;
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  stream.on("trailers", (t) => (trailers = t));
  stream.on("error", () => {});
  const streamClosed = new Promise((resolve) => stream.once("close", resolve));

  for (let i = 0; i < 200 && upstream.count("eth_getLogs") === 0; i++) await new Promise((r) => setTimeout(r, 10));
  expect(upstream.count("eth_getLogs")).toBe(1);
  const closed = ng.server.close(20_000);
  // nodegate is done with the call once its last frame is queued, well before the relay has passed it all on.
  for (let i = 0; i < 5000 && ng.server.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 1));
  expect(ng.server.inFlight).toBe(0);
  expect(trailers).toBeUndefined();
  session.setLocalWindowSize(2 ** 31 - 1); // a WINDOW_UPDATE, as a BDP-probing client sends while it reads

  await streamClosed;
  session.close();
  await closed;
  expect(trailers?.["grpc-status"]).toBe("0");
  const body = Buffer.concat(chunks);
  expect(body.readUInt32BE(1)).toBe(body.length - 5);
  const logs = fromBinary(method.output, body.subarray(5)).logs;
  expect(logs).toHaveLength(LOG_COUNT);
  expect(logs[LOG_COUNT - 1]?.logIndex).toBe(BigInt(LOG_COUNT - 1));
});

it("a connection that was never answered does not hold the close to its deadline, though its client never closes it", async () => {
  const other = await startNodegate({ upstreamUrl: upstream.url });
  // Half-open allowed: the client does not end its side when nodegate ends its own, as Node's sockets otherwise do.
  const slowloris = net.connect({ port: other.port, host: "127.0.0.1", allowHalfOpen: true });
  slowloris.on("error", () => {});
  await new Promise((resolve) => slowloris.once("connect", resolve));
  slowloris.write("POST /v3/"); // part of a request line, never finished
  const ended = new Promise((resolve) => slowloris.once("end", resolve));
  await new Promise((r) => setTimeout(r, 50));
  // With a drain deadline past the test's timeout, the close resolves only if it does not wait for this client.
  await other.server.close(120_000);
  await ended;
  slowloris.destroy();
});

// Linux reports which connections' FIN the client has acknowledged; elsewhere the close waits for the client to close.
it.skipIf(!existsSync("/proc/net/tcp"))(
  "a client that has its answer but neither reads nor closes after the GOAWAY does not hold the close to its deadline",
  async () => {
    const other = await startNodegate({ upstreamUrl: upstream.url });
    // A relay that, once told, stops reading from nodegate and never closes its side, as an idle grpcio channel does.
    let toNodegate: net.Socket | undefined;
    const frozen = net.createServer((client) => {
      const upstreamSide = net.connect({ port: other.port, host: "127.0.0.1", allowHalfOpen: true });
      toNodegate = upstreamSide;
      relayed.add(client).add(upstreamSide);
      client.pipe(upstreamSide);
      upstreamSide.pipe(client);
      client.on("error", () => {});
      upstreamSide.on("error", () => {});
    });
    relay = frozen;
    const port = await new Promise<number>((resolve) => frozen.listen(0, "127.0.0.1", () => resolve((frozen.address() as net.AddressInfo).port)));
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on("error", () => {});
    const stream = session.request({ ":method": "POST", ":path": "/grpc.health.v1.Health/Check", "content-type": "application/grpc", te: "trailers" });
    stream.end(Buffer.alloc(5));
    const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve) => stream.on("trailers", resolve).resume());
    expect(trailers["grpc-status"]).toBe("0");
    toNodegate!.unpipe(); // stops reading; the kernel still acknowledges what arrives, the FIN too
    toNodegate!.pause();
    // With a drain deadline past the test's timeout, the close resolves only if it does not wait for this client.
    await other.server.close(120_000);
    session.destroy();
    frozen.close();
  },
);
