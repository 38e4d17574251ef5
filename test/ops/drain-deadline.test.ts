/**
 * Calls still waiting on the node when the drain deadline comes are answered
 * "shutting down" (-32056, HTTP 503; UNAVAILABLE on the typed door), under
 * their own ids, rather than cut off with an empty reply (found from
 * outside: curl saw "empty reply from server").
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { connectClient } from "../support/grpc-clients.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

let upstream: ProgrammableUpstream;
let ng: TestNodegate;

beforeAll(async () => {
  upstream = await startProgrammableUpstream((r) => (r.method === "eth_blockNumber" ? { delayMs: 5000, then: { result: "0x10" } } : { result: "0x1" }));
  ng = await startNodegate({ upstreamUrl: upstream.url });
});
afterAll(async () => {
  await upstream?.close();
});

it("native and typed calls cut short by the drain deadline get a shutting-down answer", async () => {
  const native = post(ng.rpcUrl, rpc("eth_blockNumber", [], "slow-1"));
  const typed = connectClient(ng.url, EthService, ng.key, "grpc")
    .blockNumber({})
    .then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
  await new Promise((resolve) => setTimeout(resolve, 200));
  const started = performance.now();
  await ng.server.close(300);
  expect(performance.now() - started).toBeLessThan(4000);
  const answer = await native;
  expect(answer.status).toBe(503);
  expect(answer.json).toMatchObject({ id: "slow-1", error: { code: -32056, message: expect.stringContaining("shutting down") } });
  const err = await typed;
  expect(err?.code).toBe(Code.Unavailable);
  expect(err?.rawMessage).toContain("shutting down");
});
