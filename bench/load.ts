/**
 * Closed-loop load generators: `concurrency` callers, each sending its next
 * request as soon as the previous one is answered, for a fixed time. Requests
 * come from a pool of prepared bodies, cycled, so calls differ (nothing can
 * be answered from a cache or shared in flight) without per-request encoding
 * in the generator. Every answer is read to the end and checked for an error.
 */
import * as grpc from "@grpc/grpc-js";
import { Pool } from "undici";

export interface RunResult {
  ok: number;
  errors: number;
  /** Latency of each successful call, ms. */
  latencies: Float64Array;
  seconds: number;
  /** The first error seen, for the report. */
  firstError?: string;
}

export interface LoadClient {
  /** Sends request `i` of the pool; resolves true on success. */
  send(i: number): Promise<boolean>;
  close(): Promise<void>;
  lastError?: string;
}

const ERROR_MARK = Buffer.from('"error"');

/** JSON-RPC over HTTP/1.1 (direct, the reference proxy, nodegate's native path). */
export function jsonRpcClient(url: string, bodies: readonly Buffer[], concurrency: number): LoadClient {
  const u = new URL(url);
  const pool = new Pool(u.origin, { connections: concurrency, keepAliveTimeout: 60_000, pipelining: 1 });
  const path = `${u.pathname}${u.search}`;
  const headers = { "content-type": "application/json" };
  const client: LoadClient = {
    send(i) {
      return new Promise((resolve) => {
        let status = 0;
        let head: Buffer | undefined;
        pool.dispatch(
          { origin: u.origin, path, method: "POST", headers, body: bodies[i % bodies.length] as Buffer },
          {
            onRequestStart() {},
            onResponseStart(_c, statusCode) {
              status = statusCode;
            },
            onResponseData(_c, chunk) {
              head ??= chunk.subarray(0, 64);
            },
            onResponseEnd() {
              // A JSON-RPC error names "error" near the start; results are written after the id.
              const ok = status === 200 && head !== undefined && !head.includes(ERROR_MARK);
              if (!ok) client.lastError = `HTTP ${status}: ${head?.toString("utf8") ?? ""}`;
              resolve(ok);
            },
            onResponseError(_c, err) {
              client.lastError = err.message;
              resolve(false);
            },
          },
        );
      });
    },
    close: () => pool.close(),
  };
  return client;
}

/** The Connect protocol (binary protobuf over HTTP/1.1), as connect-es sends it. */
export function connectClient(baseUrl: string, procedure: string, bodies: readonly Buffer[], key: string, concurrency: number): LoadClient {
  const u = new URL(baseUrl);
  const pool = new Pool(u.origin, { connections: concurrency, keepAliveTimeout: 60_000, pipelining: 1 });
  const headers = { "content-type": "application/proto", "connect-protocol-version": "1", "x-api-key": key };
  const client: LoadClient = {
    send(i) {
      return new Promise((resolve) => {
        let status = 0;
        let errorText = "";
        pool.dispatch(
          { origin: u.origin, path: procedure, method: "POST", headers, body: bodies[i % bodies.length] as Buffer },
          {
            onRequestStart() {},
            onResponseStart(_c, statusCode) {
              status = statusCode;
            },
            onResponseData(_c, chunk) {
              if (status !== 200 && errorText.length < 200) errorText += chunk.toString("utf8");
            },
            onResponseEnd() {
              if (status !== 200) client.lastError = `HTTP ${status}: ${errorText}`;
              resolve(status === 200);
            },
            onResponseError(_c, err) {
              client.lastError = err.message;
              resolve(false);
            },
          },
        );
      });
    },
    close: () => pool.close(),
  };
  return client;
}

/** gRPC through @grpc/grpc-js over one HTTP/2 connection; messages are pre-encoded and answers left encoded. */
export function grpcClient(address: string, procedure: string, bodies: readonly Buffer[], key: string): LoadClient {
  const client = new grpc.Client(address, grpc.credentials.createInsecure(), {
    "grpc.max_receive_message_length": -1,
    "grpc.max_send_message_length": -1,
    // grpc-js's default session memory (10 MiB) cannot hold 16 concurrent 2.7 MiB answers: it resets the session.
    "grpc-node.max_session_memory": 1024,
    // Per-call bookkeeping a load generator does not need (retry buffering, channelz call tracking).
    "grpc.enable_retries": 0,
    "grpc.enable_channelz": 0,
  });
  const metadata = new grpc.Metadata();
  metadata.set("x-api-key", key);
  const identity = (b: Buffer) => b;
  const load: LoadClient = {
    send(i) {
      return new Promise((resolve) => {
        client.makeUnaryRequest(procedure, identity, identity, bodies[i % bodies.length] as Buffer, metadata, (err) => {
          if (err) load.lastError = `${grpc.status[err.code]}: ${err.details}`;
          resolve(err === null);
        });
      });
    },
    close: async () => client.close(),
  };
  return load;
}

/** Runs `concurrency` closed loops for `ms` milliseconds. */
export async function run(client: LoadClient, concurrency: number, ms: number, offset = 0): Promise<RunResult> {
  const latencies: number[] = [];
  let ok = 0;
  let errors = 0;
  let next = offset;
  const started = performance.now();
  const deadline = started + ms;
  const loop = async () => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      const success = await client.send(next++);
      if (success) {
        latencies.push(performance.now() - t0);
        ok++;
      } else {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const seconds = (performance.now() - started) / 1000;
  return { ok, errors, latencies: Float64Array.from(latencies), seconds, ...(client.lastError ? { firstError: client.lastError } : {}) };
}

export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}
