/**
 * The spec's Authentication part: the API key as the last path segment (the
 * x-api-key header on the typed door), nothing else needed, what a missing or
 * unknown key and a refused call get, and partner failover for Growth and
 * Custom keys only (a scripted primary that is down, a real Anvil as the
 * partner).
 */
import http from "node:http";
import { create } from "@bufbuild/protobuf";
import { type Hex, hexToBytes } from "viem";
import { afterAll, beforeAll, expect } from "vitest";
import { BlockNumberRequestSchema, EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { NODEGATE_CODES } from "../../src/errors/catalogue.js";
import { API_KEY_HEADER } from "../../src/grpc/typed-services.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";
import { Code, HttpDoor, TypedDoor, wsUpgrade } from "./harness/doors.js";
import { openSpecGateway, type SpecGateway } from "./harness/gateway.js";
import { specRule } from "./harness/spec-rule.js";

const m = EthService.method;
const KEY = "spec-key-0123456789ab";
const REFUSING_KEY = "refusing-key-000000001";
const CORE = "core-key-0000000000001";
const CUSTOM = "custom-key-00000000001";

let anvil: AnvilNode;
let primary: ProgrammableUpstream;
let g: SpecGateway;
let genesisHash: Hex;

beforeAll(async () => {
  anvil = await startAnvil();
  // The primary of the "failing" network is down; its partner is Anvil.
  primary = await startProgrammableUpstream(() => ({ raw: "unavailable", status: 503 }));
  g = await openSpecGateway({
    upstreamUrl: anvil.url,
    keys: [
      { key: KEY, plan: "growth" },
      { key: REFUSING_KEY, plan: "growth", allowlists: { methods: ["eth_chainId"] } },
      { key: CORE, plan: "core" },
      { key: CUSTOM, plan: "custom" },
    ],
    networks: [
      { name: "ethereum", family: "eth", upstreams: [{ label: "anvil", url: anvil.url }] },
      {
        name: "failing",
        family: "eth",
        upstreams: [
          { label: "primary", url: primary.url },
          { label: "partner", url: anvil.url },
        ],
      },
    ],
  });
  genesisHash = (await g.http.result("eth_getBlockByNumber", ["0x0", false])).hash;
});

afterAll(async () => {
  await g?.close();
  await primary?.close();
  await anvil?.stop();
});

const chainId = { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] };
const keyed = (key: string) => new TypedDoor(g.ng, EthService, { [API_KEY_HEADER]: key });

specRule("auth.key-in-path", async () => {
  expect((await g.http.post(chainId)).json.result).toBe("0x7a69");
  expect(new URL(g.http.url).pathname).toBe(`/v3/${KEY}`);
  // The key is the last segment: nothing may follow it.
  expect((await g.http.post(chainId, { url: `${g.ng.url}/v3/${KEY}/extra` })).status).toBe(404);
  const { session } = await wsUpgrade(`ws://127.0.0.1:${g.ng.port}/ws/v3/${KEY}`);
  session?.send(JSON.stringify(chainId));
  expect(JSON.parse((await session?.next()) ?? "{}").result).toBe("0x7a69");
  await session?.close();
  // Typed callers send it as x-api-key; without it they are not let in.
  const answer = await g.eth.call(m.blockNumber, create(BlockNumberRequestSchema));
  expect(answer.$typeName).toBe("nodegate.eth.v1.BlockNumberResponse");
  const anonymous = new TypedDoor(g.ng, EthService, {});
  try {
    expect((await anonymous.fail(m.blockNumber, create(BlockNumberRequestSchema))).code).toBe(Code.Unauthenticated);
  } finally {
    anonymous.close();
  }
});

/** A POST with exactly the headers given (fetch would add its own). */
function bareRequest(path: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port: g.ng.port,
        path,
        method: "POST",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

specRule("auth.nothing-else", async () => {
  // No User-Agent, Origin or Authorization: the path's key is enough.
  const reply = await bareRequest(`/v3/${KEY}`, JSON.stringify(chainId));
  expect(reply).toEqual({ status: 200, body: '{"jsonrpc":"2.0","id":1,"result":"0x7a69"}' });
  expect((await g.http.post(chainId)).status).toBe(200);
  const { session } = await wsUpgrade(g.ng.wsUrl);
  session?.send(JSON.stringify(chainId));
  expect(JSON.parse((await session?.next()) ?? "{}").result).toBe("0x7a69");
  await session?.close();
  expect((await g.eth.call(m.blockNumber, create(BlockNumberRequestSchema))).$typeName).toBe("nodegate.eth.v1.BlockNumberResponse");
});

specRule("auth.missing-or-invalid-key", async () => {
  for (const [path, status, error] of [
    ["/v3/", 401, { code: -32600, message: "project id required in the url" }],
    ["/v3", 401, { code: -32600, message: "project id required in the url" }],
    ["/v3/not-a-key", 401, { code: -32600, message: "invalid project id" }],
  ] as const) {
    const reply = await g.http.post(chainId, { url: `${g.ng.url}${path}` });
    expect([reply.status, reply.json], path).toEqual([status, { jsonrpc: "2.0", id: chainId.id, error }]);
    // Found from outside: the refusal said id null, so a batch could not tell its calls' answers apart.
    const batch = await g.http.post([{ ...chainId, id: "a" }, { ...chainId, id: 7 }, { ...chainId, id: undefined }], { url: `${g.ng.url}${path}` });
    expect([batch.status, batch.json], path).toEqual([status, [{ jsonrpc: "2.0", id: "a", error }, { jsonrpc: "2.0", id: 7, error }]]);
    const garbled = await g.http.post("{not json", { url: `${g.ng.url}${path}` });
    expect([garbled.status, garbled.json], path).toEqual([status, { jsonrpc: "2.0", id: null, error }]);
  }
  const refusing = new HttpDoor(`${g.ng.url}/v3/${REFUSING_KEY}`);
  expect((await refusing.post(chainId)).json.result).toBe("0x7a69");
  const refused = await refusing.post({ ...chainId, method: "eth_blockNumber" });
  expect([refused.status, refused.json.error]).toEqual([403, { code: -32002, message: "rejected due to project ID settings" }]);

  expect((await wsUpgrade(`ws://127.0.0.1:${g.ng.port}/ws/v3/`)).refusedWith).toBe(401);
  expect((await wsUpgrade(`ws://127.0.0.1:${g.ng.port}/ws/v3/not-a-key`)).refusedWith).toBe(401);

  for (const [key, code, error] of [
    ["not-a-key", Code.Unauthenticated, { code: -32600, message: "invalid project id" }],
    [REFUSING_KEY, Code.PermissionDenied, { code: -32002, message: "rejected due to project ID settings" }],
  ] as const) {
    const door = keyed(key);
    try {
      const failure = await door.fail(m.blockNumber, create(BlockNumberRequestSchema));
      expect([failure.code, failure.error], key).toEqual([code, error]);
    } finally {
      door.close();
    }
  }
});

specRule("endpoints.getBlockByHash-failover", async () => {
  const failing = g.on("failing");
  const request = { jsonrpc: "2.0", id: 1, method: "eth_getBlockByHash", params: [genesisHash, false] };
  // Growth (the default key) and Custom keys get the partner's answer.
  expect((await failing.http.post(request)).json.result.hash).toBe(genesisHash);
  expect((await failing.http.post(request, { url: `${g.ng.url}/failing/v3/${CUSTOM}` })).json.result.hash).toBe(genesisHash);
  const typed = await failing.eth.call(m.getBlockByHash, { blockHash: hexToBytes(genesisHash) });
  expect(typed.block?.number).toBe(0n);
  // Core keys get the outage.
  const core = await failing.http.post(request, { url: `${g.ng.url}/failing/v3/${CORE}` });
  expect(core.status).toBe(503);
  expect(core.json.error.code).toBe(NODEGATE_CODES.upstreamUnavailable);
  const coreTyped = new TypedDoor(g.ng, EthService, { [API_KEY_HEADER]: CORE, "x-nodegate-network": "failing" });
  try {
    const failure = await coreTyped.fail(m.getBlockByHash, { blockHash: hexToBytes(genesisHash) });
    expect(failure.code).toBe(Code.Unavailable);
    expect(failure.error?.code).toBe(NODEGATE_CODES.upstreamUnavailable);
  } finally {
    coreTyped.close();
  }
  // Other methods do not fail over, whatever the plan.
  const other = await failing.http.post({ jsonrpc: "2.0", id: 1, method: "eth_getBlockByNumber", params: ["0x0", false] });
  expect(other.json.error?.code).toBe(NODEGATE_CODES.upstreamUnavailable);
});
