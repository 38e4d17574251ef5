/**
 * What operators and explorers use: gRPC reflection (a reflection client and
 * buf curl list and call services without proto files), grpc.health.v1
 * following upstream state, /healthz and /readyz, a Prometheus scrape, TLS on
 * the same port, and the CLI.
 */
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { create, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { once } from "node:events";
import http2 from "node:http2";
import { connect } from "node:net";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckRequestSchema, type HealthCheckResponse, HealthCheckResponse_ServingStatus as Status } from "../../gen/grpc/health/v1/health_pb.js";
import * as reflectionV1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as reflectionV1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { EthService, type ChainIdResponse, ChainIdRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { connectClient, grpcJsClient } from "../support/grpc-clients.js";
import { connectErrorOf } from "../support/grpc-status.js";
import { JsonRpcService } from "../../gen/nodegate/jsonrpc/v1/jsonrpc_service_pb.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type Answer, type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";
import { testTempDir } from "../support/temp-dir.js";
import { h2Frame, hpackLiteral } from "../support/h2-frames.js";

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, "../..");

let anvil: AnvilNode;
let switchable: ProgrammableUpstream;
let upstreamAnswer: Answer;
let ng: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  upstreamAnswer = { forward: anvil.url };
  switchable = await startProgrammableUpstream(() => upstreamAnswer);
  ng = await startNodegate({ upstreamUrl: switchable.url });
});
afterAll(async () => {
  await ng?.close();
  await switchable?.close();
  await anvil?.stop();
});

async function reflect<S extends typeof reflectionV1 | typeof reflectionV1alpha>(schemas: S, requests: reflectionV1.ServerReflectionRequest["messageRequest"][]) {
  const client = createClient(schemas.ServerReflection as typeof reflectionV1.ServerReflection, createGrpcTransport({ baseUrl: ng.url }));
  async function* input() {
    for (const r of requests) yield create(reflectionV1.ServerReflectionRequestSchema, { messageRequest: r });
  }
  const out: reflectionV1.ServerReflectionResponse[] = [];
  for await (const res of client.serverReflectionInfo(input())) out.push(res);
  return out;
}

describe("gRPC server reflection", () => {
  for (const [version, schemas] of [["v1", reflectionV1], ["v1alpha", reflectionV1alpha]] as const) {
    it(`${version}: lists every service and serves their files with dependencies`, async () => {
      const [list, file, method, byName] = await reflect(schemas, [
        { case: "listServices", value: "" },
        { case: "fileContainingSymbol", value: "nodegate.eth.v1.EthService" },
        { case: "fileContainingSymbol", value: "nodegate.eth.v1.EthService.GetBlockByNumber" },
        { case: "fileByFilename", value: "nodegate/eth/v1/block.proto" },
      ]);
      const names = list?.messageResponse.case === "listServicesResponse" ? list.messageResponse.value.service.map((s) => s.name) : [];
      expect(names).toEqual(
        expect.arrayContaining([
          "nodegate.eth.v1.EthService",
          "nodegate.starknet.v1.StarknetService",
          "nodegate.jsonrpc.v1.JsonRpcService",
          "grpc.health.v1.Health",
          "grpc.reflection.v1.ServerReflection",
          "grpc.reflection.v1alpha.ServerReflection",
        ]),
      );
      for (const r of [file, method]) {
        expect(r?.messageResponse.case).toBe("fileDescriptorResponse");
        const files = r?.messageResponse.case === "fileDescriptorResponse" ? r.messageResponse.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b).name) : [];
        expect(files).toContain("nodegate/eth/v1/eth_service.proto");
        expect(files).toContain("nodegate/jsonrpc/v1/options.proto");
        expect(files).toContain("google/protobuf/descriptor.proto");
      }
      expect(byName?.messageResponse.case).toBe("fileDescriptorResponse");
    });
  }

  it("serves the error details' types, which no service imports, so a reflection-only client can decode statuses", async () => {
    // Found from outside: JsonRpcError, RevertError, google.rpc.Status and RetryInfo were NOT_FOUND.
    const symbols = ["nodegate.jsonrpc.v1.JsonRpcError", "nodegate.jsonrpc.v1.RevertError", "google.rpc.Status", "google.rpc.RetryInfo"];
    const names = ["nodegate/jsonrpc/v1/error.proto", "google/rpc/status.proto", "google/rpc/error_details.proto"];
    const answers = await reflect(reflectionV1, [
      ...symbols.map((value) => ({ case: "fileContainingSymbol" as const, value })),
      ...names.map((value) => ({ case: "fileByFilename" as const, value })),
    ]);
    const first = (r: (typeof answers)[number]) =>
      r?.messageResponse.case === "fileDescriptorResponse" ? fromBinary(FileDescriptorProtoSchema, r.messageResponse.value.fileDescriptorProto[0] as Uint8Array).name : undefined;
    expect(answers.map(first)).toEqual([
      "nodegate/jsonrpc/v1/error.proto",
      "nodegate/jsonrpc/v1/error.proto",
      "google/rpc/status.proto",
      "google/rpc/error_details.proto",
      ...names,
    ]);
  });

  it("finds an enum value's file by its name, scoped beside its enum as protoc names it", async () => {
    // Found from outside: the enum resolved, its values were NOT_FOUND.
    const [value, enumType, notAValue] = await reflect(reflectionV1, [
      { case: "fileContainingSymbol", value: "nodegate.eth.v1.BLOCK_TAG_LATEST" },
      { case: "fileContainingSymbol", value: "nodegate.eth.v1.BlockTag" },
      { case: "fileContainingSymbol", value: "nodegate.eth.v1.BLOCK_TAG_NOPE" },
    ]);
    for (const r of [value, enumType]) {
      const files = r?.messageResponse.case === "fileDescriptorResponse" ? r.messageResponse.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b).name) : [];
      expect(files[0]).toBe("nodegate/eth/v1/primitives.proto");
    }
    expect(notAValue?.messageResponse.case === "errorResponse" && notAValue.messageResponse.value.errorCode).toBe(5);
  });

  it("answers an unknown symbol with NOT_FOUND in the stream, and keeps the stream", async () => {
    const [missing, list] = await reflect(reflectionV1, [
      { case: "fileContainingSymbol", value: "no.such.Thing" },
      { case: "listServices", value: "" },
    ]);
    expect(missing?.messageResponse.case === "errorResponse" && missing.messageResponse.value.errorCode).toBe(5);
    expect(list?.messageResponse.case).toBe("listServicesResponse");
  });

  it("buf curl lists and calls services through reflection alone", async () => {
    const buf = join(ROOT, "node_modules/.bin/buf");
    const services = await run(buf, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--list-services", ng.url]);
    expect(services.stdout).toContain("nodegate.eth.v1.EthService");
    const call = await run(buf, [
      "curl", "--protocol", "grpc", "--http2-prior-knowledge", "-H", `x-api-key: ${ng.key}`,
      "-d", "{}", `${ng.url}/nodegate.eth.v1.EthService/ChainId`,
    ]);
    expect(JSON.parse(call.stdout)).toEqual({ chainId: "31337" });
  });
});

describe("health", () => {
  const check = (client: ReturnType<typeof grpcJsClient>, service: string) =>
    client.call<HealthCheckResponse>("check", create(HealthCheckRequestSchema, { service }));

  it("grpc.health.v1 Check follows upstream state per service; unknown services are NOT_FOUND", async () => {
    const client = grpcJsClient(ng.address, Health);
    try {
      expect((await check(client, "")).status).toBe(Status.SERVING);
      expect((await check(client, "nodegate.eth.v1.EthService")).status).toBe(Status.SERVING);
      // No starknet network is configured: its service cannot serve.
      expect((await check(client, "nodegate.starknet.v1.StarknetService")).status).toBe(Status.NOT_SERVING);
      await expect(check(client, "no.Such")).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
    } finally {
      client.close();
    }
  });

  it("Check of the whole server (\"\") is SERVING only when every network is ready", async () => {
    const down = await startProgrammableUpstream(() => ({ destroy: true }));
    const two = await startNodegate({
      upstreamUrl: anvil.url,
      networks: [
        { name: "ethereum", family: "eth", upstreams: [{ label: "primary", url: anvil.url }] },
        { name: "starknet", family: "starknet", upstreams: [{ label: "primary", url: down.url }] },
      ],
    });
    const client = grpcJsClient(two.address, Health);
    try {
      expect((await check(client, "nodegate.eth.v1.EthService")).status).toBe(Status.SERVING);
      expect((await check(client, "nodegate.starknet.v1.StarknetService")).status).toBe(Status.NOT_SERVING);
      expect((await check(client, "")).status).toBe(Status.NOT_SERVING);
    } finally {
      client.close();
      await two.close();
      await down.close();
    }
  });

  it("health, metrics and not-found answers carry x-request-id (the client's, or a new one), as every response does", async () => {
    for (const path of ["/healthz", "/readyz", "/metrics", "/no/such/path"]) {
      const echoed = await fetch(`${ng.url}${path}`, { headers: { "x-request-id": "ops-trace-7" } });
      expect(echoed.headers.get("x-request-id"), path).toBe("ops-trace-7");
      const fresh = await fetch(`${ng.url}${path}`);
      expect(fresh.headers.get("x-request-id"), path).toMatch(/^[0-9a-f-]{36}$/);
      // An id that is no sane token (quotes, spaces, too long) is not echoed into headers and log lines: a new one is made.
      for (const odd of [`a"b c`, "x".repeat(129)]) {
        const replaced = await fetch(`${ng.url}${path}`, { headers: { "x-request-id": odd } });
        expect(replaced.headers.get("x-request-id"), `${path} ${odd.slice(0, 10)}`).toMatch(/^[0-9a-f-]{36}$/);
      }
    }
  });

  it("health and metrics answer with a query on their URL (a probe's or Prometheus' `params:`), as without", async () => {
    for (const path of ["/healthz?probe=1", "/readyz?verbose", "/metrics?format=prometheus&x=1"]) {
      const res = await fetch(`${ng.url}${path}`);
      expect(res.status, path).toBe(200);
      const text = await res.text();
      if (path.startsWith("/metrics")) expect(text).toContain("nodegate_requests_total");
    }
  });

  it("/healthz is process liveness; /readyz follows the upstream; Watch streams the change", async () => {
    const down = await startProgrammableUpstream(() => ({ destroy: true }));
    const idle = await startNodegate({ upstreamUrl: down.url });
    try {
      expect((await fetch(`${idle.url}/healthz`)).status).toBe(200);
      const notReady = await fetch(`${idle.url}/readyz`);
      expect(notReady.status).toBe(503);
      expect(await notReady.json()).toEqual({ ready: false, draining: false, networks: { ethereum: false } });

      const client = createClient(Health, createGrpcTransport({ baseUrl: idle.url }));
      const abort = new AbortController();
      const seen: Status[] = [];
      const watching = (async () => {
        for await (const res of client.watch({ service: "nodegate.eth.v1.EthService" }, { signal: abort.signal })) {
          seen.push(res.status);
          if (seen.length === 1) down.handler = () => ({ forward: anvil.url });
          if (seen.length === 2) abort.abort();
        }
      })().catch(() => undefined);
      await post(idle.rpcUrl, rpc("eth_chainId")).catch(() => undefined);
      await watching;
      expect(seen[0]).toBe(Status.NOT_SERVING);
      expect((await fetch(`${idle.url}/readyz`)).status).toBe(200);
    } finally {
      await idle.close();
      await down.close();
    }
  }, 20_000);

  // Found from outside: a Go client's health checking (grpc.health.v1) kept routing to an instance whose node had
  // died for about 30 s, while every call got -32050.
  it("/readyz and Check see a node that stopped answering at its first failed call, and its return at once", async () => {
    const flaky = await startProgrammableUpstream(() => ({ forward: anvil.url }));
    const watched = await startNodegate({ upstreamUrl: flaky.url });
    const client = grpcJsClient(watched.address, Health);
    try {
      expect((await fetch(`${watched.url}/readyz`)).status).toBe(200);
      expect((await check(client, "nodegate.eth.v1.EthService")).status).toBe(Status.SERVING);
      flaky.handler = () => ({ destroy: true });
      expect((await post(watched.rpcUrl, rpc("eth_blockNumber"))).json.error?.code).toBe(-32050);
      expect((await fetch(`${watched.url}/readyz`)).status).toBe(503);
      expect((await check(client, "nodegate.eth.v1.EthService")).status).toBe(Status.NOT_SERVING);
      flaky.handler = () => ({ forward: anvil.url });
      expect((await fetch(`${watched.url}/readyz`)).status).toBe(200);
      expect((await check(client, "nodegate.eth.v1.EthService")).status).toBe(Status.SERVING);
    } finally {
      client.close();
      await watched.close();
      await flaky.close();
    }
  });

  it("a Watch stream says NOT_SERVING at the first failed call, not at its next periodic check", async () => {
    // grpc-go's client-side health checking uses Watch; it re-evaluates every 5 s, here every 10 min, so only the failed call can wake it.
    const flaky = await startProgrammableUpstream(() => ({ forward: anvil.url }));
    const watched = await startNodegate({ upstreamUrl: flaky.url, serverOptions: { healthWatchIntervalMs: 600_000 } });
    const client = createClient(Health, createGrpcTransport({ baseUrl: watched.url }));
    const abort = new AbortController();
    const seen: Status[] = [];
    let failedCall: Promise<unknown> | undefined;
    try {
      for await (const res of client.watch({ service: "nodegate.eth.v1.EthService" }, { signal: abort.signal })) {
        seen.push(res.status);
        if (seen.length === 1) {
          flaky.handler = () => ({ destroy: true });
          failedCall = post(watched.rpcUrl, rpc("eth_blockNumber"));
        } else break;
      }
      expect(seen).toEqual([Status.SERVING, Status.NOT_SERVING]);
      expect(((await failedCall) as Awaited<ReturnType<typeof post>>).json.error?.code).toBe(-32050);
    } finally {
      abort.abort();
      await watched.close();
      await flaky.close();
    }
  });

  it("a WebSocket node's dropped connection makes readiness probe at once, with no call made", async () => {
    // Found from outside: an instance with no traffic reported a dead WebSocket node SERVING for 30 s.
    const node = await startAnvil();
    const watched = await startNodegate({ upstreamUrl: node.wsUrl });
    try {
      expect((await post(watched.rpcUrl, rpc("eth_chainId"))).json.result).toBe("0x7a69");
      expect((await fetch(`${watched.url}/readyz`)).status).toBe(200);
      await node.stop();
      let status = 200;
      for (let i = 0; i < 50 && status === 200; i++) {
        await new Promise((r) => setTimeout(r, 20));
        status = (await fetch(`${watched.url}/readyz`)).status;
      }
      expect(status).toBe(503);
    } finally {
      await watched.close();
      await node.stop();
    }
  });

  it("/readyz: a network whose node is of the other family is told once at warn, and stays ready", async () => {
    // Found from outside: a Starknet network pointed at an Ethereum node said nothing anywhere, and every Starknet
    // call got "method not found". It stays ready: the node is up, and a node (or a recorded fixture) short of the
    // chainId method must not take the instance out of its load balancer.
    const mixedUp = await startNodegate({
      upstreamUrl: anvil.url,
      networks: [
        { name: "ethereum", family: "eth", upstreams: [{ label: "primary", url: anvil.url }] },
        { name: "starknet", family: "starknet", upstreams: [{ label: "eth-node", url: anvil.url }] },
      ],
    });
    try {
      // A call to the Starknet network reaches Anvil, which answers: the network has answered recently, and is
      // probed all the same the first time readiness is asked.
      const answer = await post(`${mixedUp.url}/starknet/v3/test-key-0123456789abcdef`, rpc("starknet_blockNumber"));
      expect(answer.json.error?.code).toBe(-32601);
      for (let i = 0; i < 2; i++) {
        const ready = await fetch(`${mixedUp.url}/readyz`);
        expect([ready.status, await ready.json()]).toEqual([200, { ready: true, draining: false, networks: { ethereum: true, starknet: true } }]);
      }
      const warned = mixedUp.logs.filter((l) => l.level === 40 && String(l.msg).includes("starknet_chainId"));
      expect(warned).toEqual([
        expect.objectContaining({
          network: "starknet",
          upstream: "starknet/eth-node",
          msg: "the upstream answers starknet_chainId with -32601 (method not found): is it a Starknet node? Calls to this network may all get method not found",
        }),
      ]);
    } finally {
      await mixedUp.close();
    }
  });

  it("/readyz counts a partner that answers while the primary is down, whatever the failover policy", async () => {
    // Found from outside: the probe asked only the primary, so with it down every replica went unready and the
    // partner behind them was never reached.
    const down = await startProgrammableUpstream(() => ({ destroy: true }));
    const partner = await startProgrammableUpstream(() => ({ forward: anvil.url }));
    const failing = await startNodegate({
      upstreamUrl: down.url,
      networks: [{ name: "ethereum", family: "eth", upstreams: [{ label: "primary", url: down.url }, { label: "partner", url: partner.url }] }],
    });
    try {
      const ready = await fetch(`${failing.url}/readyz`);
      expect([ready.status, await ready.json()]).toEqual([200, { ready: true, draining: false, networks: { ethereum: true } }]);
      expect(partner.count("eth_chainId")).toBe(1);
      partner.handler = () => ({ destroy: true });
      // With no upstream answering, and the last answer long enough ago, it is not ready.
      const later = await startNodegate({
        upstreamUrl: down.url,
        networks: [{ name: "ethereum", family: "eth", upstreams: [{ label: "primary", url: down.url }, { label: "partner", url: partner.url }] }],
      });
      try {
        expect((await fetch(`${later.url}/readyz`)).status).toBe(503);
      } finally {
        await later.close();
      }
    } finally {
      await failing.close();
      await partner.close();
      await down.close();
    }
  }, 20_000);
});

describe("metrics", () => {
  async function scrape(): Promise<Map<string, number>> {
    const res = await fetch(`${ng.url}/metrics`);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const samples = new Map<string, number>();
    for (const line of (await res.text()).split("\n")) {
      if (!line || line.startsWith("#")) continue;
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
      expect(m, line).not.toBeNull();
      samples.set(m?.[1] as string, Number(m?.[2]));
    }
    return samples;
  }

  it("a Prometheus scrape parses and counts requests by door, method and outcome, and upstream latency", async () => {
    const okHttp = 'nodegate_requests_total{door="jsonrpc-http",method="eth_chainId",outcome="ok"}';
    const badHttp = 'nodegate_requests_total{door="jsonrpc-http",method="eth_getBalance",outcome="-32602"}';
    const okGrpc = 'nodegate_requests_total{door="grpc",method="nodegate.eth.v1.EthService/ChainId",outcome="ok"}';
    // Found from outside: refusals before the body is read (a bad key here) were not counted on the native door.
    const refusedHttp = 'nodegate_requests_total{door="jsonrpc-http",method="other",outcome="-32600"}';
    const upstream = 'nodegate_upstream_duration_seconds_count{network="ethereum",upstream="ethereum/primary"}';
    // Found from outside too: texts that are not JSON-RPC, and invalid batch members, were neither counted nor named in the log.
    const unparsable = 'nodegate_requests_total{door="jsonrpc-http",method="other",outcome="-32700"}';
    const before = await scrape();
    expect((await post(ng.rpcUrl, "{bad")).json.error.code).toBe(-32700);
    expect((await post(ng.rpcUrl, [rpc("eth_chainId"), 5])).json[1].error.code).toBe(-32600);
    await post(ng.rpcUrl, rpc("eth_chainId"));
    await post(ng.rpcUrl, rpc("eth_chainId"));
    await post(ng.rpcUrl, rpc("eth_getBalance", ["0x12"]));
    expect((await post(`${ng.url}/v3/not-a-key-of-this-gateway`, rpc("eth_chainId"))).status).toBe(401);
    const client = grpcJsClient(ng.address, EthService);
    await client.call<ChainIdResponse>("chainId", create(ChainIdRequestSchema), { "x-api-key": ng.key });
    client.close();
    const after = await scrape();
    const delta = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);
    expect(delta(okHttp)).toBe(3);
    expect(delta(badHttp)).toBe(1);
    expect(delta(okGrpc)).toBe(1);
    expect(delta(refusedHttp)).toBe(2);
    expect(delta(unparsable)).toBe(1);
    expect(delta(upstream)).toBe(4); // the invalid call never went upstream
    const invalidLine = ng.logs.find((l) => l.method === "(invalid)" && l.errors === 1);
    expect(invalidLine).toBeDefined();
    expect(after.has("nodegate_process_resident_memory_bytes")).toBe(true);
  });
});

/** Waits for the request log line with this request id. */
async function lineOf(requestId: string): Promise<Record<string, unknown>> {
  await expect.poll(() => ng.logs.some((l) => l.requestId === requestId && l.msg === "request"), { timeout: 10_000 }).toBe(true);
  return ng.logs.find((l) => l.requestId === requestId && l.msg === "request") as Record<string, unknown>;
}

/** A counter's value in a Prometheus scrape (0 when absent). */
async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${ng.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.split(" ")[1]);
}

describe("the native door's calls, as operators see them", () => {

  it("a request to a path nothing serves, or a WebSocket address asked over plain HTTP, is logged and counted without its key", async () => {
    // Found from outside: /v4/<KEY>, /v3/<KEY>/extra and the 426 for /ws/v3/<KEY> left no trace at all.
    const counted = (status: number) => metric(`nodegate_requests_total{door="jsonrpc-http",method="(unserved)",outcome="${status}"}`);
    const before = { 404: await counted(404), 426: await counted(426) };
    for (const [path, status, logged] of [
      ["/v4/openkey1234567890", 404, "/v4/…"],
      ["/v3/openkey1234567890/extra", 404, "/v3/…"],
      ["/foo", 404, "/foo"],
      // Found from outside: a first segment that could be a key, or an RPC-shaped path to a service nodegate does not
      // serve, was logged as it came.
      ["/openkey1234567890/", 404, "/…"],
      ["/ws/v3/openkey1234567890", 426, "/ws/…"],
    ] as const) {
      const id = `unserved-native-${path.length}-${status}`;
      const res = await fetch(`${ng.url}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-request-id": id }, body: "{}" });
      await res.text();
      expect(res.status, path).toBe(status);
      const line = await lineOf(id);
      expect([line.door, line.method, line.path, line.status], path).toEqual(["jsonrpc-http", "(unserved)", logged, status]);
      expect(JSON.stringify(line)).not.toContain("openkey");
    }
    expect(await counted(404)).toBe(before[404] + 4);
    expect(await counted(426)).toBe(before[426] + 1);
    // A key where a network name goes (/<KEY>/v3: no key follows, 401): the network is logged as unknown.
    const refused = await fetch(`${ng.url}/openkey1234567890/v3`, { method: "POST", headers: { "content-type": "application/json", "x-request-id": "unserved-key-as-network" }, body: "{}" });
    expect(refused.status).toBe(401);
    const line = await lineOf("unserved-key-as-network");
    expect(line.network).toBe("(unknown)");
    expect(JSON.stringify(line)).not.toContain("openkey");
    // An RPC's shape with a key in it, to a service nodegate does not serve.
    await (await fetch(`${ng.url}/a.b/openkey1234567890`, { method: "POST", headers: { "content-type": "application/json", "x-request-id": "unserved-rpc-key" }, body: "{}" })).text();
    const rpcLine = await lineOf("unserved-rpc-key");
    expect([rpcLine.method, rpcLine.path]).toEqual(["(unserved)", "/a.b/…"]);
    expect(JSON.stringify(rpcLine)).not.toContain("openkey");
  });

  it("a WebSocket upgrade to an address nothing serves is logged and counted without its key", async () => {
    // Left alone last stop: /v3/<KEY> and /ws/v4/<KEY> asked as WebSockets got their 404 with no trace.
    const counted = () => metric('nodegate_requests_total{door="jsonrpc-ws",method="(unserved)",outcome="404"}');
    const before = await counted();
    for (const [path, logged] of [
      ["/v3/openkey1234567890", "/v3/…"],
      ["/ws/v4/openkey1234567890", "/ws/…"],
    ] as const) {
      const id = `unserved-upgrade-${path.length}`;
      const ws = new WebSocket(`${ng.wsUrl.replace(/\/ws\/v3\/.*$/, "")}${path}`, { headers: { "x-request-id": id } });
      const status = await new Promise<number>((resolve) => ws.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0)).on("error", () => resolve(-1)));
      expect(status, path).toBe(404);
      const line = await lineOf(id);
      expect([line.door, line.method, line.path, line.status], path).toEqual(["jsonrpc-ws", "(unserved)", logged, 404]);
      expect(JSON.stringify(line)).not.toContain("openkey");
    }
    expect(await counted()).toBe(before + 2);
  });

  it("a typed call with a key in its network header is refused saying so, and the key is not logged", async () => {
    // Found from outside: the refusal quoted the header ("unknown network \"<KEY>\""), and the typed request log
    // writes the error.
    const ask = (id: string, network: string) =>
      fetch(`${ng.url}/${EthService.typeName}/ChainId`, {
        method: "POST",
        headers: { "content-type": "application/proto", "x-api-key": ng.key, "x-request-id": id, "x-nodegate-network": network },
        body: new Uint8Array(0),
      });
    const keyed = await ask("key-in-network-header", "openkey1234567890");
    expect(keyed.status).toBe(404);
    expect(((await keyed.json()) as { message: string }).message).toBe("unknown network; configured networks: ethereum");
    const line = await lineOf("key-in-network-header");
    expect(line.status).toBe("NotFound");
    expect(JSON.stringify(line)).not.toContain("openkey");
    // A name that cannot be a key is still quoted, as the caller wrote it.
    expect(((await (await ask("short-network-name", "solana")).json()) as { message: string }).message).toBe('unknown network "solana"; configured networks: ethereum');
  });

  it("a call whose HTTP client leaves is logged (499) and counted as Canceled, not dropped", async () => {
    // Found from outside: nothing was logged or counted for it.
    const canceled = 'nodegate_requests_total{door="jsonrpc-http",method="eth_gasPrice",outcome="Canceled"}';
    const before = await metric(canceled);
    upstreamAnswer = { delayMs: 2000, then: { result: "0x1" } };
    try {
      const gone = new AbortController();
      const call = fetch(ng.rpcUrl, { method: "POST", headers: { "content-type": "application/json", "x-request-id": "native-left-1" }, body: JSON.stringify(rpc("eth_gasPrice")), signal: gone.signal });
      setTimeout(() => gone.abort(), 200);
      await expect(call).rejects.toThrow();
      const line = await lineOf("native-left-1");
      expect([line.door, line.status, line.outcome]).toEqual(["jsonrpc-http", 499, "Canceled"]);
      expect(await metric(canceled)).toBe(before + 1);
    } finally {
      upstreamAnswer = { forward: anvil.url };
    }
  });

  it("a client that leaves before its body has arrived is logged (499) and counted too", async () => {
    const url = new URL(ng.rpcUrl);
    const socket = connect(Number(url.port), url.hostname);
    await once(socket, "connect");
    socket.write(`POST ${url.pathname} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\nx-request-id: left-mid-body\r\n\r\n{"jsonrpc":`);
    await new Promise((r) => setTimeout(r, 100));
    socket.destroy();
    const line = await lineOf("left-mid-body");
    expect([line.door, line.method, line.status, line.outcome]).toEqual(["jsonrpc-http", "(unread)", 499, "Canceled"]);
  });

  it("a WebSocket client that leaves mid-call is Canceled, not an internal error; its connection's request id is echoed and logged", async () => {
    // Found from outside: -32603 was counted (alerting on internal errors), and WebSocket lines had no request id.
    const canceled = 'nodegate_requests_total{door="jsonrpc-ws",method="eth_gasPrice",outcome="Canceled"}';
    const internal = 'nodegate_requests_total{door="jsonrpc-ws",method="eth_gasPrice",outcome="-32603"}';
    const [canceledBefore, internalBefore] = [await metric(canceled), await metric(internal)];
    upstreamAnswer = { delayMs: 2000, then: { result: "0x1" } };
    try {
      const ws = new WebSocket(`${ng.wsUrl}`, { headers: { "x-request-id": "ws-left-1" } });
      const opened = once(ws, "open");
      const upgradeId = await new Promise<string | undefined>((resolve, reject) => {
        ws.once("upgrade", (res) => resolve(res.headers["x-request-id"] as string | undefined));
        ws.once("error", reject);
      });
      expect(upgradeId).toBe("ws-left-1");
      await opened;
      ws.send(JSON.stringify(rpc("eth_gasPrice")));
      await new Promise((r) => setTimeout(r, 200));
      ws.terminate();
      const line = await lineOf("ws-left-1");
      expect([line.door, line.status, line.outcome]).toEqual(["jsonrpc-ws", 499, "Canceled"]);
      expect(await metric(canceled)).toBe(canceledBefore + 1);
      expect(await metric(internal)).toBe(internalBefore);
    } finally {
      upstreamAnswer = { forward: anvil.url };
    }
  });

  it("log lines name each call's outcome; subscriptions are counted by name; refused upgrades are logged", async () => {
    await post(ng.rpcUrl, rpc("eth_getBalance", ["0x12"]), { "x-request-id": "outcome-one" });
    expect((await lineOf("outcome-one")).outcome).toBe("-32602");
    await post(ng.rpcUrl, [rpc("eth_chainId", [], 1), rpc("eth_nope", [], 2)], { "x-request-id": "outcome-batch" });
    expect((await lineOf("outcome-batch")).outcomes).toEqual(["ok", "-32601"]);

    const subscribe = 'nodegate_requests_total{door="jsonrpc-ws",method="eth_subscribe",outcome="ok"}';
    const before = await metric(subscribe);
    const ws = new WebSocket(ng.wsUrl);
    await once(ws, "open");
    ws.send(JSON.stringify(rpc("eth_subscribe", ["newHeads"])));
    const [answer] = await once(ws, "message");
    ws.close();
    expect(JSON.parse(String(answer))).toHaveProperty("result");
    expect(await metric(subscribe)).toBe(before + 1);

    const refused = new WebSocket(`${ng.url.replace("http", "ws")}/ws/v3/not-a-key-of-this-gateway`, { headers: { "x-request-id": "ws-refused-1" } });
    refused.on("error", () => {}); // the refusal, read below
    const status = await new Promise<number | undefined>((resolve) => refused.once("unexpected-response", (_, res) => resolve(res.statusCode)));
    refused.terminate();
    expect(status).toBe(401);
    const line = await lineOf("ws-refused-1");
    expect([line.door, line.method, line.status, line.outcome]).toEqual(["jsonrpc-ws", "(refused)", 401, "-32600"]);
  });
});

describe("typed calls the client cancels before its request is whole", () => {
  it("are logged and counted Canceled, not as the request Connect found cut short (Unknown, Unimplemented)", async () => {
    // Found from outside: streams reset before their body arrived were logged Unknown "Premature close" (at warn) or
    // Unimplemented "missing input message for server-streaming method".
    const session = http2.connect(ng.url);
    const ids: string[] = [];
    try {
      for (let i = 0; i < 30; i++) {
        const requestId = `cancel-early-${i}`;
        ids.push(requestId);
        const stream = session.request({
          ":method": "POST",
          ":path": `/${EthService.typeName}/${EthService.method.subscribeNewHeads.name}`,
          "content-type": "application/grpc",
          te: "trailers",
          "x-api-key": ng.key,
          "x-request-id": requestId,
        });
        stream.on("error", () => {});
        if (i % 2 === 1) stream.write(Buffer.from([0, 0, 0])); // part of a message's prefix
        await new Promise((r) => setTimeout(r, i % 3 === 0 ? 0 : 5));
        stream.close(http2.constants.NGHTTP2_CANCEL);
      }
      await new Promise((r) => setTimeout(r, 300));
    } finally {
      session.close();
    }
    await expect.poll(() => ng.logs.some((l) => l.msg === "request" && ids.includes(l.requestId as string)), { timeout: 10_000 }).toBe(true);
    const lines = ng.logs.filter((l) => l.msg === "request" && ids.includes(l.requestId as string));
    expect(lines.map((l) => l.status).filter((status) => status !== "Canceled")).toEqual([]);
    expect(lines.every((l) => l.level === 30)).toBe(true);
  });
});

describe("typed calls whose client deadline passes", () => {
  it("are logged and counted DeadlineExceeded, on the lean lane and on Connect's, though the client's reset may come first", async () => {
    // Found from outside: grpc-js resets the stream at its deadline, often just before nodegate's own timer fires, and
    // such calls were mostly logged Canceled.
    upstreamAnswer = { delayMs: 2000, then: { result: "0x1" } };
    const client = new grpc.Client(ng.address, grpc.credentials.createInsecure());
    const identity = (b: Buffer) => b;
    const calls = [
      ["/nodegate.eth.v1.EthService/BlockNumber", Buffer.alloc(0)], // the lean lane
      ["/nodegate.jsonrpc.v1.JsonRpcService/Call", Buffer.from([0x0a, 0x0f, ...Buffer.from("eth_blockNumber")])], // Connect's
    ] as const;
    try {
      for (const [path, body] of calls) {
        for (let i = 0; i < 3; i++) {
          const requestId = `deadline-${path.length}-${i}`;
          const metadata = new grpc.Metadata();
          metadata.set("x-api-key", ng.key);
          metadata.set("x-request-id", requestId);
          const code = await new Promise<number>((resolve) =>
            client.makeUnaryRequest(path, identity, identity, body, metadata, { deadline: Date.now() + 300 }, (err) => resolve(err?.code ?? 0)),
          );
          expect(code).toBe(grpc.status.DEADLINE_EXCEEDED);
          await expect.poll(() => ng.logs.find((l) => l.msg === "request" && l.requestId === requestId)?.status, { timeout: 5000 }).toBe("DeadlineExceeded");
        }
      }
      // Over HTTP/1.1 the client closes its connection at its deadline, its body whole, and Connect fails the call
      // Canceled (found from outside: counted so).
      const overHttp1 = connectClient(ng.url, JsonRpcService, ng.key, "connect");
      for (let i = 0; i < 3; i++) {
        const requestId = `deadline-http1-${i}`;
        const err = await connectErrorOf(overHttp1.call({ method: "eth_blockNumber", paramsJson: "[]" }, { timeoutMs: 300, headers: { "x-request-id": requestId } }));
        expect(err.code).toBe(Code.DeadlineExceeded);
        await expect.poll(() => ng.logs.find((l) => l.msg === "request" && l.requestId === requestId)?.status, { timeout: 5000 }).toBe("DeadlineExceeded");
      }
    } finally {
      client.close();
      upstreamAnswer = { forward: anvil.url };
    }
  });
});

describe("an HTTP/1.1 stream whose envelope announces more than readMaxBytes", () => {
  it("is refused RESOURCE_EXHAUSTED, logged, and leaves the open-streams gauge as it was", async () => {
    // Found from outside: Connect destroyed the request, whose socket was then null; reading it threw, the call was
    // answered "internal error", never logged, and each one left nodegate_open_streams one higher.
    const openStreams = async () => Number(/^nodegate_open_streams (\d+)/m.exec(await (await fetch(`${ng.url}/metrics`)).text())?.[1]);
    const before = await openStreams();
    // A unary gRPC-Web call on Connect's lane too (found from outside: logged Canceled, since Connect destroying the
    // refused request makes Node say 'aborted' on HTTP/1.1 while the client stays and reads the whole answer).
    const streams = `${EthService.typeName}/SubscribeNewHeads`;
    const unary = `${JsonRpcService.typeName}/Call`;
    for (const [contentType, i, path] of [["application/connect+proto", 0, streams], ["application/grpc-web+proto", 1, streams], ["application/grpc-web+proto", 2, unary]] as const) {
      const requestId = `oversize-envelope-${i}`;
      const answer = await fetch(`${ng.url}/${path}`, {
        method: "POST",
        headers: { "content-type": contentType, "x-api-key": ng.key, "x-request-id": requestId },
        body: "x".repeat(20), // an envelope announcing 0x78787878 bytes
      });
      const text = await answer.text();
      expect(text).toContain(contentType.includes("grpc-web") ? "grpc-status: 8" : "resource_exhausted");
      await expect.poll(() => ng.logs.find((l) => l.msg === "request" && l.requestId === requestId)?.status, { timeout: 5000 }).toBe("ResourceExhausted");
    }
    expect(await openStreams()).toBe(before);
  });

  it("queued behind a slow call on a pipelining connection, is logged with the status it was answered", async () => {
    // Found from outside: with neither the response nor the destroyed request holding the connection, the call was
    // taken for closed and logged Canceled before its answer was written.
    upstreamAnswer = { delayMs: 500, then: { result: "0x1" } };
    const plain = connect(ng.port, "127.0.0.1");
    plain.on("error", () => {});
    let received = "";
    plain.on("data", (d: Buffer) => (received += d.toString("latin1")));
    try {
      await once(plain, "connect");
      const slow = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_gasPrice", params: [] });
      plain.write(
        `POST /v3/${ng.key} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${slow.length}\r\n\r\n${slow}` +
          `POST /${EthService.typeName}/SubscribeNewHeads HTTP/1.1\r\nHost: x\r\nContent-Type: application/connect+proto\r\nX-Api-Key: ${ng.key}\r\nX-Request-Id: oversize-queued\r\nContent-Length: 20\r\n\r\n${"x".repeat(20)}`,
      );
      await expect.poll(() => received.includes("resource_exhausted"), { timeout: 5000 }).toBe(true);
      await expect.poll(() => ng.logs.find((l) => l.msg === "request" && l.requestId === "oversize-queued")?.status, { timeout: 5000 }).toBe("ResourceExhausted");
    } finally {
      plain.destroy();
      upstreamAnswer = { forward: anvil.url };
    }
  });
});

describe("unary calls on the lanes Connect serves, cancelled mid-upload", () => {
  it("are logged Canceled, not as the cut body Connect answered (InvalidArgument, or ok); a cut body sent whole stays InvalidArgument", async () => {
    // Found from outside: a JsonRpcService gRPC call was logged InvalidArgument and a compressed Connect POST ok.
    // Raw frames: the client resets each stream mid-body (as grpc-go cancels), with no END_STREAM before it, which
    // Node's own client sends first (and then nodegate may answer the cut body before the reset arrives).
    const lanes: [string, Record<string, string>][] = [
      ["/nodegate.jsonrpc.v1.JsonRpcService/Call", { "content-type": "application/grpc", te: "trailers" }],
      [`/${EthService.typeName}/ChainId`, { "content-type": "application/proto", "content-encoding": "gzip" }],
    ];
    const statusOf = async (requestId: string) => {
      await expect.poll(() => ng.logs.some((l) => l.msg === "request" && l.requestId === requestId), { timeout: 10_000 }).toBe(true);
      return ng.logs.find((l) => l.msg === "request" && l.requestId === requestId)?.status;
    };
    const socket = connect(ng.port, "127.0.0.1");
    socket.on("error", () => {});
    socket.resume();
    await once(socket, "connect");
    socket.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), h2Frame(4, 0, 0)]));
    let stream = 1;
    try {
      for (const [i, [path, headers]] of lanes.entries()) {
        for (const cancel of [true, false]) {
          const requestId = `cancel-upload-${i}-${cancel}`;
          const fields = { ":path": path, ":authority": "127.0.0.1", "x-api-key": ng.key, "x-request-id": requestId, ...headers };
          const block = Buffer.concat([Buffer.from([0x83, 0x86]), ...Object.entries(fields).map(([name, value]) => hpackLiteral(name, value))]); // POST, http
          const body = Buffer.concat([Buffer.from([0, 0, 0, 0x10, 0]), Buffer.alloc(100)]); // a prefix announcing 4 KiB, and 100 bytes
          socket.write(Buffer.concat([h2Frame(1, 0x4, stream, block), h2Frame(0, cancel ? 0 : 0x1, stream, body)]));
          await new Promise((r) => setTimeout(r, 50));
          if (cancel) socket.write(h2Frame(3, 0, stream, Buffer.from([0, 0, 0, 8]))); // RST_STREAM CANCEL
          const status = await statusOf(requestId);
          if (cancel) expect([path, status]).toEqual([path, "Canceled"]);
          else expect([path, status]).not.toEqual([path, "Canceled"]);
          stream += 2;
        }
      }
    } finally {
      socket.destroy();
    }
    // Over HTTP/1.1: the connection closed mid-body.
    const plain = connect(ng.port, "127.0.0.1");
    await once(plain, "connect");
    plain.write(`POST /${EthService.typeName}/ChainId HTTP/1.1\r\nHost: x\r\nContent-Type: application/proto\r\nContent-Encoding: gzip\r\nX-Api-Key: ${ng.key}\r\nX-Request-Id: cancel-upload-h1\r\nContent-Length: 4096\r\n\r\n${"x".repeat(100)}`);
    await new Promise((r) => setTimeout(r, 50));
    plain.destroy();
    expect(await statusOf("cancel-upload-h1")).toBe("Canceled");
  });
});

describe("typed requests answered before Connect's interceptor, as operators see them", () => {
  // Found from outside: these were answered but neither logged nor counted.
  const linesOf = (requestId: string) => ng.logs.filter((l) => l.requestId === requestId && l.msg === "request");

  const GET_BALANCE = "/nodegate.eth.v1.EthService/GetBalance";
  const grpcWeb = (path: string, body: Uint8Array, requestId: string, contentType = "application/grpc-web+proto") =>
    fetch(`${ng.url}${path}`, { method: "POST", headers: { "content-type": contentType, "x-api-key": ng.key, "x-request-id": requestId }, body });

  it("a gRPC-Web body that does not decode, and an unsupported content type", async () => {
    await (await grpcWeb(GET_BALANCE, Buffer.from("abc"), "typed-undecodable")).arrayBuffer();
    const undecodable = await lineOf("typed-undecodable");
    expect([undecodable.door, undecodable.method, undecodable.status]).toEqual(["grpc-web", "nodegate.eth.v1.EthService/GetBalance", "InvalidArgument"]);
    const res = await grpcWeb(GET_BALANCE, Buffer.from("abc"), "typed-415", "application/grpc-web+xml");
    expect(res.status).toBe(415);
    const refused = await lineOf("typed-415");
    expect([refused.door, refused.method, refused.status, refused.httpStatus]).toEqual(["grpc-web", "nodegate.eth.v1.EthService/GetBalance", "Unknown", 415]);
  });

  it("an RPC no service serves, on gRPC-Web, the Connect protocol and gRPC over HTTP/2: one label for all such paths", async () => {
    const unserved = 'nodegate_requests_total{door="grpc-web",method="(unserved)",outcome="Unimplemented"}';
    const before = await metric(unserved);
    await (await grpcWeb("/nodegate.eth.v1.EthService/Nope", new Uint8Array(5), "typed-unserved-web")).arrayBuffer();
    const web = await lineOf("typed-unserved-web");
    expect([web.door, web.method, web.path, web.status]).toEqual(["grpc-web", "(unserved)", "/nodegate.eth.v1.EthService/Nope", "Unimplemented"]);
    expect(await metric(unserved)).toBe(before + 1);

    await (await fetch(`${ng.url}/x.Y/Z`, { method: "POST", headers: { "content-type": "application/json", "x-request-id": "typed-unserved-connect" }, body: "{}" })).text();
    const viaConnect = await lineOf("typed-unserved-connect");
    expect([viaConnect.door, viaConnect.method, viaConnect.status, viaConnect.httpStatus]).toEqual(["connect", "(unserved)", "Unimplemented", 404]);

    // A native call sent to a path whose first segment has a dot is taken for a typed one: the key in it is not logged.
    for (const [path, logged] of [
      ["/v3.0/openkey1234567890", "/v3.0/…"],
      ["/eth.mainnet/v3/openkey1234567890", "/eth.mainnet/…"],
      ["/openkey1234567890.x", "/…"],
    ] as const) {
      const id = `typed-unserved-${logged.length}-${path.length}`;
      await (await fetch(`${ng.url}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-request-id": id }, body: "{}" })).text();
      const line = await lineOf(id);
      expect([line.method, line.path]).toEqual(["(unserved)", logged]);
      expect(JSON.stringify(line)).not.toContain("openkey");
    }

    const client = new grpc.Client(`127.0.0.1:${ng.port}`, grpc.credentials.createInsecure());
    try {
      const metadata = new grpc.Metadata();
      metadata.set("x-request-id", "typed-unserved-grpc");
      const code = await new Promise<number>((resolve) =>
        client.makeUnaryRequest("/nodegate.eth.v1.EthService/Nope", (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(0), metadata, (err) => resolve(err?.code ?? 0)),
      );
      expect(code).toBe(grpc.status.UNIMPLEMENTED);
    } finally {
      client.close();
    }
    const viaGrpc = await lineOf("typed-unserved-grpc");
    expect([viaGrpc.door, viaGrpc.method, viaGrpc.status]).toEqual(["grpc", "(unserved)", "Unimplemented"]);
  });

  it("a Connect GET whose message is not base64 is InvalidArgument; a call the interceptor logs gets one line, not two", async () => {
    await (await fetch(`${ng.url}${GET_BALANCE}?encoding=proto&base64=1&message=!!!`, { headers: { "x-request-id": "typed-bad-get" } })).text();
    const badGet = await lineOf("typed-bad-get");
    expect([badGet.door, badGet.status, badGet.httpStatus]).toEqual(["connect", "InvalidArgument", 400]);

    // A well-formed gRPC-Web call with an invalid address: Connect's handler runs it and the interceptor logs it.
    await (await grpcWeb(GET_BALANCE, new Uint8Array(5), "typed-logged-once")).arrayBuffer();
    const logged = await lineOf("typed-logged-once");
    expect(logged.status).toBe("InvalidArgument");
    await new Promise((r) => setTimeout(r, 300));
    expect(linesOf("typed-logged-once")).toHaveLength(1);
  });
});

describe("TLS on the same port", () => {
  it("serves gRPC over HTTP/2 (ALPN) and the native path over HTTP/1.1", async () => {
    const dir = testTempDir("nodegate-tls-");
    await run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"]);
    const secure = await startNodegate({
      upstreamUrl: anvil.url,
      config: { tls: { certFile: join(dir, "cert.pem"), keyFile: join(dir, "key.pem") } },
    });
    try {
      const cert = readFileSync(join(dir, "cert.pem"));
      const client = new grpc.Client(`localhost:${secure.port}`, grpc.credentials.createSsl(cert));
      const chainId = await new Promise<Buffer>((resolve, reject) => {
        const md = new grpc.Metadata();
        md.set("x-api-key", secure.key);
        client.makeUnaryRequest("/nodegate.eth.v1.EthService/ChainId", (x: Buffer) => x, (x: Buffer) => x, Buffer.alloc(0), md, (err, res) => (err ? reject(err) : resolve(res as Buffer)));
      });
      // Over TLS connect-node answers the unary call too: its status message reads back exactly on grpc-js.
      const md = new grpc.Metadata();
      md.set("x-api-key", secure.key);
      const shortAddress = Buffer.concat([Buffer.from([0x0a, 19]), Buffer.alloc(19, 1)]); // GetBalanceRequest.address, 19 bytes
      const denied = await new Promise<grpc.ServiceError>((resolve) => {
        client.makeUnaryRequest("/nodegate.eth.v1.EthService/GetBalance", (x: Buffer) => x, (x: Buffer) => x, shortAddress, md, (err) => resolve(err as grpc.ServiceError));
      });
      client.close();
      expect(chainId.length).toBeGreaterThan(0);
      expect(denied.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(denied.details).toMatch(/^[^%]*: [^%]*20 bytes/);
      const https = await import("node:https");
      const body = await new Promise<string>((resolve, reject) => {
        const req = https.request(
          { host: "127.0.0.1", port: secure.port, path: `/v3/${secure.key}`, method: "POST", ca: cert, servername: "localhost", headers: { "content-type": "application/json" } },
          (res) => {
            let text = "";
            res.on("data", (d) => (text += d));
            res.on("end", () => resolve(`${res.httpVersion} ${text}`));
          },
        );
        req.on("error", reject);
        req.end(JSON.stringify(rpc("eth_chainId")));
      });
      expect(body).toBe('1.1 {"jsonrpc":"2.0","id":1,"result":"0x7a69"}');
    } finally {
      await secure.close();
    }
  });
});

describe("the nodegate command", () => {
  const cli = (...args: string[]) => run(process.execPath, [join(ROOT, "bin/nodegate.mjs"), ...args]).catch((e: { code: number; stderr: string; stdout: string }) => e);

  it("--help names the commands and the environment contract", async () => {
    const { stdout } = (await cli("--help")) as { stdout: string };
    for (const word of ["check-config", "NODEGATE_UPSTREAM_URL", "NODEGATE_PORT", "NODEGATE_API_KEYS", "NODEGATE_STARKNET_UPSTREAM_URL"]) expect(stdout).toContain(word);
  });

  it("check-config validates a file: 0 when valid, 2 naming the field and line when not", async () => {
    const ok = (await run(process.execPath, [join(ROOT, "bin/nodegate.mjs"), "check-config", join(ROOT, "examples/nodegate.example.yaml")], {
      env: { ...process.env, PROVIDER_KEY: "p", PARTNER_URL: "https://partner.example/rpc", CLIENT_KEY_1: "client-key-1-xyz", CLIENT_KEY_2: "client-key-2-xyz", CLIENT_SECRET_2: "s" },
    })) as { stdout: string };
    expect(ok.stdout).toContain("valid (1 network: ethereum [eth, 2 upstreams]; 2 keys");
    // Said as a start would do it: the embedded Anvil and a development key, not "0 upstreams; 0 keys".
    const bare = join(testTempDir("nodegate-bare-"), "nodegate.yaml");
    writeFileSync(bare, "listen:\n  port: 64999\n");
    const bareOut = (await cli("check-config", bare)) as { stdout: string };
    expect(bareOut.stdout).toContain("valid (1 network: ethereum [eth, the embedded Anvil]; no keys: a development key is made at start; listen");
    const bad = (await cli("check-config", join(ROOT, "test/fixtures/bad-config.yaml"))) as { code: number; stderr: string };
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/bad-config\.yaml:\d+:\d+: keys\[0\]\.plan: want one of core, growth, custom/);
  });

  it("an argument after the file, or a file whose top level is no mapping: exit 2 with one clear line", async () => {
    // Found from outside: both passed silently, and "--config FILE --port 9999" started on the file's port.
    const file = join(testTempDir("nodegate-extra-"), "nodegate.yaml");
    writeFileSync(file, "listen:\n  port: 64999\n");
    for (const args of [["check-config", file, "--bogus"], ["--config", file, "--port", "9999"]]) {
      const extra = (await cli(...args)) as { code: number; stderr: string };
      expect(extra.code).toBe(2);
      expect(extra.stderr.trim()).toBe(`nodegate: unknown argument ${args[2]}; see nodegate --help`);
    }
    const list = join(testTempDir("nodegate-list-"), "nodegate.yaml");
    writeFileSync(list, "- listen\n- port\n");
    const notMapping = (await cli("check-config", list)) as { code: number; stderr: string };
    expect(notMapping.code).toBe(2);
    expect(notMapping.stderr.trim()).toBe(`nodegate: ${list}:1:1: the file: want a mapping of settings`);
  });

  it("a port already in use: exit 1 with one clear line, not a stack trace", async () => {
    const busy = (await run(process.execPath, [join(ROOT, "bin/nodegate.mjs")], {
      env: { ...process.env, NODEGATE_UPSTREAM_URL: anvil.url, NODEGATE_HOST: "127.0.0.1", NODEGATE_PORT: String(ng.port) },
    }).catch((e: unknown) => e)) as { code: number; stderr: string };
    expect(busy.code).toBe(1);
    expect(busy.stderr.trim()).toBe(
      `nodegate: cannot listen on 127.0.0.1:${ng.port}: listen EADDRINUSE: address already in use 127.0.0.1:${ng.port} (choose another with NODEGATE_PORT / NODEGATE_HOST, or listen.port / listen.host in the configuration file)`,
    );
  });

  it("a method name no call matches: check-config warns and exits 0, and the start logs the warning", async () => {
    const file = join(testTempDir("nodegate-warn-"), "nodegate.yaml");
    writeFileSync(file, `networks:\n  - name: mainnet\n    upstreams:\n      - url: ${anvil.url}\nkeys:\n  - key: abcdefgh12345678\n    allowlists:\n      methods: [eth_getLogz]\n`);
    const warning = `${file}:8:17: keys[0].allowlists.methods[0]: eth_getLogz is neither a method nodegate translates nor in passThrough.methods, so no call matches it (did you mean eth_getLogs?)`;
    const checked = (await cli("check-config", file)) as { stdout: string; stderr: string };
    expect(checked.stderr).toContain(`nodegate: warning: ${warning}`);
    expect(checked.stdout).toContain("valid (1 network");
    // A start that then fails (the port is taken) has logged it already.
    const started = (await run(process.execPath, [join(ROOT, "bin/nodegate.mjs"), "--config", file], {
      env: { ...process.env, NODEGATE_HOST: "127.0.0.1", NODEGATE_PORT: String(ng.port) },
    }).catch((e: unknown) => e)) as { code: number; stdout: string };
    expect(started.code).toBe(1);
    const warned = started.stdout.split("\n").filter((l) => l.includes("eth_getLogz")).map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(warned).toEqual([expect.objectContaining({ level: 40, msg: expect.stringContaining(warning) })]);
  });

  it("with workers, a port in use: exit 1 without a stack trace, and the embedded Anvil is stopped", async () => {
    const orphanedAnvils = async () => ((await run("ps", ["-eo", "ppid=,comm="])) as { stdout: string }).stdout.split("\n").filter((l) => /^\s*1\s+anvil/.test(l)).length;
    const before = await orphanedAnvils();
    const busy = (await run(process.execPath, [join(ROOT, "bin/nodegate.mjs")], {
      env: { ...process.env, NODEGATE_UPSTREAM_URL: "", NODEGATE_HOST: "127.0.0.1", NODEGATE_PORT: String(ng.port), NODEGATE_WORKERS: "2" },
    }).catch((e: unknown) => e)) as { code: number; stderr: string };
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain("EADDRINUSE");
    expect(busy.stderr).toMatch(/nodegate: a worker exited with code 1 before listening \(its own message is above\)\n$/);
    expect(busy.stderr).not.toMatch(/\n\s+at /);
    expect(await orphanedAnvils()).toBe(before);
  });
});
