import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicClient, http } from "viem";
import { EthService, GetBlockByNumberRequestSchema, type GetBlockByNumberResponse } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { BlockTag } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { connectClient, grpcJsClient } from "../support/grpc-clients.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";

let anvil: AnvilNode;
let ng: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  ng = await startNodegate({ upstreamUrl: anvil.url });
});
afterAll(async () => {
  await ng?.close();
  await anvil?.stop();
});

describe("one port serves every front door", () => {
  it("grpc-js over HTTP/2", async () => {
    const client = grpcJsClient(ng.address, EthService);
    const res = await client.call<GetBlockByNumberResponse>(
      "getBlockByNumber",
      create(GetBlockByNumberRequestSchema, { block: { kind: { case: "tag", value: BlockTag.LATEST } } }),
      { "x-api-key": ng.key },
    );
    client.close();
    expect(res.block?.number).toBe(0n);
    expect(res.block?.hash?.length).toBe(32);
  });

  it("connect-es over Connect, gRPC and gRPC-Web", async () => {
    for (const protocol of ["connect", "grpc", "grpc-web"] as const) {
      const res = await connectClient(ng.url, EthService, ng.key, protocol).chainId({});
      expect(res.chainId).toBe(31337n);
    }
  });

  it("viem on the native path", async () => {
    const client = createPublicClient({ transport: http(ng.rpcUrl) });
    expect(await client.getChainId()).toBe(31337);
  });
});
