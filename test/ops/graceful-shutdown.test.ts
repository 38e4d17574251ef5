/**
 * SIGTERM during load: nodegate (a real child process, started as npm start
 * does) stops accepting, lets every accepted request finish, closes its
 * upstream sockets and exits 0. No accepted request is lost.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ChainIdRequestSchema, type ChainIdResponse, EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { freePort } from "../../src/embedded/anvil.js";
import { grpcJsClient } from "../support/grpc-clients.js";
import { post, rpc } from "../support/http.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const ROOT = join(import.meta.dirname, "../..");
const KEY = "shutdown-test-key-1";
let upstream: ProgrammableUpstream;
let child: ChildProcess | undefined;

beforeAll(async () => {
  // Every answer takes 400 ms, so requests are in flight when the signal arrives.
  upstream = await startProgrammableUpstream((r) => ({ delayMs: 400, then: { result: r.method === "eth_chainId" ? "0x7a69" : `0x${Number((r.params as string[])[0] ?? 0).toString(16)}` } }));
});
afterAll(async () => {
  child?.kill("SIGKILL");
  await upstream?.close();
});

it("answers every accepted request, then exits 0", async () => {
  const port = await freePort();
  child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "src/main.ts")], {
    cwd: ROOT,
    env: { ...process.env, NODEGATE_UPSTREAM_URL: upstream.url, NODEGATE_PORT: String(port), NODEGATE_API_KEYS: KEY, NODEGATE_LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child?.once("exit", (code) => resolve(code)));
  for (let i = 0; i < 200 && !output.includes("nodegate is running"); i++) await new Promise((r) => setTimeout(r, 50));
  expect(output).toContain("nodegate is running");

  const base = `http://127.0.0.1:${port}`;
  const grpc = grpcJsClient(`127.0.0.1:${port}`, EthService);
  const native = Array.from({ length: 40 }, (_, i) => post(`${base}/v3/${KEY}`, rpc("eth_chainId", [], i)));
  const typed = Array.from({ length: 20 }, () => grpc.call<ChainIdResponse>("chainId", create(ChainIdRequestSchema), { "x-api-key": KEY }));
  // Let every request reach the upstream before the signal.
  for (let i = 0; i < 100 && upstream.requests.length < 60; i++) await new Promise((r) => setTimeout(r, 20));
  expect(upstream.requests.length).toBe(60);
  child.kill("SIGTERM");

  const nativeResults = await Promise.all(native);
  const typedResults = await Promise.all(typed);
  grpc.close();
  expect(nativeResults.map((r) => r.status)).toEqual(Array(40).fill(200));
  expect(nativeResults.map((r) => r.json.id)).toEqual(Array.from({ length: 40 }, (_, i) => i));
  expect(nativeResults.every((r) => r.json.result === "0x7a69")).toBe(true);
  expect(typedResults.every((r) => r.chainId === 31337n)).toBe(true);
  expect(await exited).toBe(0);
  expect(output).not.toMatch(/error/i);
  // After the drain the port is closed: new connections are refused, not half-answered.
  await expect(fetch(`${base}/healthz`)).rejects.toThrow();
}, 30_000);
