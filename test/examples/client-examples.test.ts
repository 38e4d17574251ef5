/**
 * The client examples in examples/, each run as a user runs it (a child
 * process, configured by NODEGATE_URL / NODEGATE_KEY / NODEGATE_ADDRESS)
 * against a nodegate in front of Anvil. Their output must match what the
 * node itself says, and a bad key must come back as nodegate's JSON-RPC error.
 * The Python example needs Debian's protobuf-compiler, protobuf-compiler-grpc,
 * libprotobuf-dev, python3-grpcio and python3-protobuf: skipped with the
 * reason when they are missing, failing instead in CI
 * (NODEGATE_REQUIRE_SYSTEM_PACKAGES=1).
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { describeRequiring, requirePackages } from "../support/system-packages.js";
import { testTempDir } from "../support/temp-dir.js";

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, "../..");
/** An account that only this test funds, so its balance comes from the test's own setup. */
const ACCOUNT = "0x00000000000000000000000000000000000C0FFe";
const WRONG_KEY = "no-such-key-000000001";

const python = requirePackages([
  ["protobuf-compiler", "protoc", ["--version"]],
  ["protobuf-compiler-grpc", "sh", ["-c", "command -v grpc_python_plugin"]],
  ["libprotobuf-dev", "test", ["-f", "/usr/include/google/protobuf/descriptor.proto"]],
  ["python3-grpcio", "/usr/bin/python3", ["-c", "import grpc"]],
  ["python3-protobuf", "/usr/bin/python3", ["-c", "import google.protobuf"]],
]);
const curl = requirePackages([["curl", "curl", ["--version"]]]);

let anvil: AnvilNode;
let ng: TestNodegate;
/** What Anvil itself answers, in the examples' output format. */
let expected: string[];
/** nodegate's answer to an unknown key on the native path. */
let unknownKeyError: { code: number; message: string };

async function anvilCall(method: string, params: unknown[] = []): Promise<any> {
  const res = await post(anvil.url, rpc(method, params));
  if (res.json.error) throw new Error(`${method}: ${res.json.error.message}`);
  return res.json.result;
}

beforeAll(async () => {
  anvil = await startAnvil();
  // A chain with something on it: a funded account and a latest block holding a transaction.
  await anvilCall("anvil_setBalance", [ACCOUNT, "0x1bc16d674ec80000"]);
  await anvilCall("evm_mine");
  const [from] = (await anvilCall("eth_accounts")) as string[];
  await anvilCall("eth_sendTransaction", [{ from, to: ACCOUNT, value: "0x2a" }]);
  ng = await startNodegate({ upstreamUrl: anvil.url });

  const chainId = BigInt(await anvilCall("eth_chainId"));
  const block = await anvilCall("eth_getBlockByNumber", ["latest", false]);
  const balance = BigInt(await anvilCall("eth_getBalance", [ACCOUNT, "latest"]));
  expect(block.transactions).toHaveLength(1);
  expected = [
    `chain id: ${chainId}`,
    `latest block: ${BigInt(block.number)} (hash ${block.hash}, ${block.transactions.length} transactions)`,
    `balance of ${ACCOUNT}: ${balance} wei`,
  ];
  unknownKeyError = (await post(`${ng.url}/v3/${WRONG_KEY}`, rpc("eth_chainId"))).json.error;
});
afterAll(async () => {
  await ng?.close();
  await anvil?.stop();
});

function env(key: string): NodeJS.ProcessEnv {
  return { ...process.env, NODEGATE_URL: ng.url, NODEGATE_KEY: key, NODEGATE_ADDRESS: ACCOUNT };
}

async function example(command: string, args: string[], key = ng.key) {
  return run(command, args, { cwd: ROOT, env: env(key), timeout: 60_000 });
}

async function failingExample(command: string, args: string[]) {
  const err = await example(command, args, WRONG_KEY).then(
    () => undefined,
    (e: unknown) => e as { code: number; stdout: string; stderr: string },
  );
  if (err === undefined) throw new Error("the example succeeded with an unknown key");
  return err;
}

const lines = (text: string) => text.trim().split("\n");

describe("examples/node (grpc-js + protobuf-es)", () => {
  const args = ["--import", "tsx", "examples/node/client.ts"];

  it("prints the chain id, the latest block and a balance, as the node has them", async () => {
    const { stdout } = await example(process.execPath, args);
    expect(lines(stdout)).toEqual(expected);
  });

  it("shows nodegate's JSON-RPC error from the gRPC status details, and exits 1", async () => {
    const err = await failingExample(process.execPath, args);
    expect(err.code).toBe(1);
    expect(err.stderr.trim()).toBe(`nodegate call failed: UNAUTHENTICATED: JSON-RPC error ${unknownKeyError.code} ${unknownKeyError.message}`);
  });
});

describeRequiring(python, "examples/python (protoc + grpc_python_plugin + grpcio)", () => {
  it("generates its stubs and prints what the node has", async () => {
    const { stdout } = await example("examples/python/run.sh", []);
    expect(lines(stdout)).toEqual(expected);
  });

  it("shows nodegate's JSON-RPC error from the gRPC status details, and exits 1", async () => {
    const err = await failingExample("examples/python/run.sh", []);
    expect(err.code).toBe(1);
    expect(err.stderr.trim()).toBe(`nodegate call failed: UNAUTHENTICATED: JSON-RPC error ${unknownKeyError.code} ${unknownKeyError.message}`);
  });
});

describe("examples/native/viem.ts", () => {
  const args = ["--import", "tsx", "examples/native/viem.ts"];

  it("reads the same values over HTTP, and the block number over WebSocket", async () => {
    const { stdout } = await example(process.execPath, args);
    const latest = BigInt((await anvilCall("eth_blockNumber")) as string);
    expect(lines(stdout)).toEqual([...expected, `block number over WebSocket: ${latest}`]);
  });

  it("shows nodegate's error message and exits 1", async () => {
    const err = await failingExample(process.execPath, args);
    expect(err.code).toBe(1);
    expect(err.stderr.trim()).toBe(`nodegate call failed: ${unknownKeyError.message}`);
  });
});

describeRequiring(curl, "examples/native/curl.sh", () => {
  it("prints the JSON-RPC answers of a call and a batch, as the node gives them", async () => {
    const { stdout } = await example("examples/native/curl.sh", []);
    const [title1, single, title2, batch] = lines(stdout);
    expect([title1, title2]).toEqual(["# eth_chainId", "# a batch: eth_blockNumber and eth_getBalance"]);
    expect(JSON.parse(single as string)).toEqual({ jsonrpc: "2.0", id: 1, result: await anvilCall("eth_chainId") });
    expect(JSON.parse(batch as string)).toEqual([
      { jsonrpc: "2.0", id: 1, result: await anvilCall("eth_blockNumber") },
      { jsonrpc: "2.0", id: 2, result: await anvilCall("eth_getBalance", [ACCOUNT, "latest"]) },
    ]);
  });

  it("exits non-zero on a 401 and still prints nodegate's JSON-RPC error", async () => {
    const err = await failingExample("examples/native/curl.sh", []);
    expect(err.code).toBe(22);
    const [, body] = lines(err.stdout);
    expect(JSON.parse(body as string).error).toEqual(unknownKeyError);
  });
});

const protoc = requirePackages([["protobuf-compiler", "protoc", ["--version"]]]);

describeRequiring(protoc, "Java stubs (protoc --java_out)", () => {
  it("generate without warnings, one class per message (found from outside: an outer class clashing with JsonRpcService, and messages of the same name in two packages' outer classes)", async () => {
    const out = testTempDir("nodegate-java-");
    const files = (await run("find", ["proto/nodegate", "-name", "*.proto"], { cwd: ROOT })).stdout.trim().split("\n");
    const generated = await run("protoc", ["-I", "proto", "-I", "/usr/include", `--java_out=${out}`, ...files], { cwd: ROOT });
    expect(generated.stderr).toBe("");
    for (const name of ["nodegate/jsonrpc/v1/CallRequest.java", "nodegate/eth/v1/CallRequest.java", "nodegate/jsonrpc/v1/JsonrpcServiceProto.java", "nodegate/jsonrpc/v1/ErrorProto.java"]) {
      expect(existsSync(join(out, name)), name).toBe(true);
    }
  });
});
