/**
 * The gRPC client's ceiling: a unary gRPC server on node:http2 that does no
 * work. Every call gets, at once, the answer nodegate gives the benchmark's
 * small call (a GetBalanceResponse for the canned upstream's balance); no
 * upstream, no decoding, no logs. Driven by the same grpc-js load generator,
 * it shows how far that client alone limits the gRPC rows: what is left
 * between this and nodegate's gRPC row is nodegate's own work.
 *
 * Usage: node bench/idle-grpc-server.ts
 * Prints {"port": N} on stdout once listening on 127.0.0.1.
 */
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { GetBalanceResponseSchema } from "../gen/nodegate/eth/v1/eth_service_pb.js";
import { bigintToBytes } from "../src/codec/hex.js";
import { CANNED_BALANCE } from "./bodies.js";

const encoded = toBinary(GetBalanceResponseSchema, create(GetBalanceResponseSchema, { balance: { value: bigintToBytes(CANNED_BALANCE) } }));
const frame = Buffer.alloc(5 + encoded.length);
frame.writeUInt32BE(encoded.length, 1);
frame.set(encoded, 5);
const trailers = { "grpc-status": "0" };

const server = http2.createServer();
server.on("stream", (stream) => {
  stream.on("error", () => {});
  stream.resume();
  stream.once("end", () => {
    if (stream.destroyed || stream.closed) return;
    stream.respond({ ":status": 200, "content-type": "application/grpc+proto" }, { waitForTrailers: true });
    stream.once("wantTrailers", () => stream.sendTrailers(trailers));
    stream.end(frame);
  });
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
