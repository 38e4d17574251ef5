/**
 * Missing and unknown API keys on both front doors: the native path answers
 * HTTP 401 with the provider's texts, the typed path UNAUTHENTICATED with the
 * JsonRpcError detail, and no request reaches the node.
 */
import { create } from "@bufbuild/protobuf";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { status as GrpcStatus } from "@grpc/grpc-js";
import { BaseError, createPublicClient, http, InvalidRequestRpcError } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { ChainIdRequestSchema, type ChainIdResponse, EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type CountingUpstream, startCountingUpstream } from "../support/counting-upstream.js";
import { connectErrorOf, grpcErrorOf, jsonRpcErrorOfConnect, jsonRpcErrorOfGrpc } from "../support/grpc-status.js";
import { type JsonRpcReply, postJson } from "../support/json-rpc.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { connectCaller, grpcJsCaller } from "../support/typed-callers.js";

const MISSING = "project id required in the url";
const MISSING_TYPED = "project id required in the x-api-key metadata";
const UNKNOWN = "invalid project id";
const WRONG_KEY = "not-a-key-0000000000000000";

let anvil: AnvilNode;
let upstream: CountingUpstream;
let ng: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  upstream = await startCountingUpstream(anvil.url);
  ng = await startNodegate({ upstreamUrl: upstream.url });
});

afterAll(async () => {
  await ng?.close();
  await upstream?.close();
  await anvil?.stop();
});

const chainId = { jsonrpc: "2.0", id: 5, method: "eth_chainId", params: [] };

/** Runs `body` and checks that the upstream saw no request meanwhile. */
async function withoutUpstreamTraffic(body: () => Promise<void>): Promise<void> {
  const before = upstream.count;
  await body();
  expect(upstream.count).toBe(before);
}

describe("native path", () => {
  it("the right key is served (and counted upstream)", async () => {
    const before = upstream.count;
    const reply = await postJson(ng.rpcUrl, chainId);
    expect(reply.status).toBe(200);
    expect((reply.json as JsonRpcReply).result).toBe("0x7a69");
    expect(upstream.count).toBe(before + 1);
  });

  for (const [title, path, message] of [
    ["an unknown key", `/v3/${WRONG_KEY}`, UNKNOWN],
    ["an unknown key under a network prefix", `/ethereum/v3/${WRONG_KEY}`, UNKNOWN],
    ["no key segment", "/v3", MISSING],
    ["an empty key segment", "/v3/", MISSING],
  ] as const) {
    it(`${title}: HTTP 401 "${message}"`, async () => {
      await withoutUpstreamTraffic(async () => {
        const reply = await postJson(`${ng.url}${path}`, chainId);
        expect(reply.status).toBe(401);
        const body = reply.json as JsonRpcReply;
        expect(body.jsonrpc).toBe("2.0");
        expect(body.error?.message).toBe(message);
        expect(body.result).toBeUndefined();
      });
    });
  }

  it("a key with percent-encoded characters is the same key over HTTP and WebSocket", async () => {
    const encoded = `${ng.key.slice(0, -1)}%${ng.key.charCodeAt(ng.key.length - 1).toString(16)}`;
    const reply = await postJson(`${ng.url}/v3/${encoded}`, chainId);
    expect([reply.status, (reply.json as JsonRpcReply).result]).toEqual([200, "0x7a69"]);
    for (const path of [`/ws/v3/${encoded}`, `/ethereum/ws/v3/${encoded}`]) {
      const socket = new WebSocket(`${ng.url.replace("http", "ws")}${path}`);
      try {
        await new Promise((resolve, reject) => socket.once("open", resolve).once("unexpected-response", (_req, res) => reject(new Error(`${path}: HTTP ${res.statusCode}`))));
        const answer = new Promise<string>((resolve) => socket.once("message", (data: Buffer) => resolve(data.toString("utf8"))));
        socket.send(JSON.stringify(chainId));
        expect(JSON.parse(await answer)).toEqual({ jsonrpc: "2.0", id: 5, result: "0x7a69" });
      } finally {
        socket.terminate();
      }
    }
  });

  it("viem with an unknown key reports the provider's error", async () => {
    await withoutUpstreamTraffic(async () => {
      const client = createPublicClient({ transport: http(`${ng.url}/v3/${WRONG_KEY}`, { retryCount: 0 }) });
      const err = await client.getChainId().catch((e: unknown) => e);
      // viem reads the JSON-RPC error out of the 401 body rather than reporting a bare HTTP failure.
      const rpcError = err instanceof BaseError ? (err.walk((e) => e instanceof InvalidRequestRpcError) as InvalidRequestRpcError | null) : null;
      expect(rpcError?.code).toBe(-32600);
      expect(rpcError?.details).toBe(UNKNOWN);
    });
  });
});

describe("typed path", () => {
  it("the right key is served", async () => {
    const caller = grpcJsCaller(ng, EthService, ng.key);
    try {
      const res = await caller.call<ChainIdResponse>(EthService.method.chainId, create(ChainIdRequestSchema));
      expect(res.chainId).toBe(31337n);
    } finally {
      caller.close();
    }
  });

  for (const [title, key, message] of [
    ["no x-api-key", undefined, MISSING_TYPED],
    ["an unknown x-api-key", WRONG_KEY, UNKNOWN],
  ] as const) {
    it(`grpc-js with ${title}: UNAUTHENTICATED "${message}"`, async () => {
      const caller = grpcJsCaller(ng, EthService, key);
      try {
        await withoutUpstreamTraffic(async () => {
          const err = await grpcErrorOf(caller.call(EthService.method.chainId, create(ChainIdRequestSchema)));
          expect(err.code).toBe(GrpcStatus.UNAUTHENTICATED);
          const detail = jsonRpcErrorOfGrpc(err);
          expect(detail.code).toBe(-32600n);
          expect(detail.message).toBe(message);
        });
      } finally {
        caller.close();
      }
    });
  }

  it(`connect-es with an unknown x-api-key: Unauthenticated "${UNKNOWN}"`, async () => {
    const caller = connectCaller(ng, EthService, WRONG_KEY);
    await withoutUpstreamTraffic(async () => {
      const err = await connectErrorOf(caller.call(EthService.method.chainId, create(ChainIdRequestSchema)));
      expect(err.code).toBe(Code.Unauthenticated);
      expect(err.rawMessage).toBe(UNKNOWN);
      const detail = jsonRpcErrorOfConnect(err);
      expect(detail.code).toBe(-32600n);
      expect(detail.message).toBe(UNKNOWN);
    });
  });

  it(`connect-es with no x-api-key: Unauthenticated "${MISSING_TYPED}"`, async () => {
    // A plain transport: the test helper would always set the header.
    const client = createClient(EthService, createConnectTransport({ baseUrl: ng.url, httpVersion: "1.1" }));
    await withoutUpstreamTraffic(async () => {
      const err = await connectErrorOf(client.chainId({}));
      expect(err.code).toBe(Code.Unauthenticated);
      const detail = jsonRpcErrorOfConnect(err);
      expect(detail.code).toBe(-32600n);
      expect(detail.message).toBe(MISSING_TYPED);
    });
  });
});
