/**
 * Identical concurrent calls (same network, method and params, whichever
 * front door and spelling) share one upstream call; every caller gets the
 * answer under its own id. Different params, writes and errors are not
 * shared beyond the calls in flight together.
 */
import { create } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ChainIdRequestSchema, type ChainIdResponse, EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { JsonRpcErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { connectClient, grpcJsClient } from "../support/grpc-clients.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type Answer, type ProgrammableUpstream, startProgrammableUpstream, type UpstreamRequest } from "../support/programmable-upstream.js";

const DEAD = "0x000000000000000000000000000000000000dead";
/** Long enough that every caller below is in flight before the node answers. */
const SLOW_MS = 300;

let anvil: AnvilNode;
let upstream: ProgrammableUpstream;
let ng: TestNodegate;
let answer: (r: UpstreamRequest) => Answer;

beforeAll(async () => {
  anvil = await startAnvil();
  upstream = await startProgrammableUpstream((r) => answer(r));
  ng = await startNodegate({
    upstreamUrl: upstream.url,
    // No store: only coalescing is under test here.
    config: { cache: { maxBytes: 0, coalesce: true, finalizedMaxAgeMs: 60_000 }, passThrough: { methods: ["eth_sendRawTransaction"], allowWrites: true } },
  });
}, 60_000);
afterAll(async () => {
  await ng?.close();
  await upstream?.close();
  await anvil?.stop();
});
beforeEach(() => {
  answer = () => ({ delayMs: SLOW_MS, then: { forward: anvil.url } });
});

function calls(method: string): number {
  return upstream.count(method);
}

describe("identical concurrent calls share one upstream call", () => {
  it("N native callers: one upstream call, each answer under the caller's own id", async () => {
    const before = calls("eth_getBalance");
    const ids = Array.from({ length: 20 }, (_, i) => (i % 2 ? i : `caller-${i}`));
    const replies = await Promise.all(ids.map((id) => post(ng.rpcUrl, rpc("eth_getBalance", [DEAD, "latest"], id))));
    expect(calls("eth_getBalance") - before).toBe(1);
    const expected = (await post(anvil.url, rpc("eth_getBalance", [DEAD, "latest"]))).json.result;
    replies.forEach((reply, i) => expect(reply.json).toEqual({ jsonrpc: "2.0", id: ids[i], result: expected }));
    expect(ng.gateway.network(undefined).cache?.stats.joined).toBeGreaterThanOrEqual(19);
  });

  it("both front doors and every spelling of the same params share it", async () => {
    const before = calls("eth_chainId");
    const grpc = grpcJsClient(ng.address, EthService);
    const connect = connectClient(ng.url, EthService, ng.key, "connect");
    const typed = [
      ...Array.from({ length: 5 }, () => grpc.call<ChainIdResponse>("chainId", create(ChainIdRequestSchema), { "x-api-key": ng.key })),
      ...Array.from({ length: 5 }, () => connect.chainId({})),
    ];
    const native = Array.from({ length: 5 }, (_, i) => post(ng.rpcUrl, rpc("eth_chainId", [], i)));
    const [typedReplies, nativeReplies] = await Promise.all([Promise.all(typed), Promise.all(native)]);
    grpc.close();
    expect(calls("eth_chainId") - before).toBe(1);
    for (const r of typedReplies) expect(r.chainId).toBe(31337n);
    for (const r of nativeReplies) expect(r.json.result).toBe("0x7a69");

    const balances = calls("eth_getBalance");
    const spellings = [DEAD, DEAD.toUpperCase().replace("0X", "0x"), "0x000000000000000000000000000000000000dEaD"];
    await Promise.all(spellings.map((address) => post(ng.rpcUrl, rpc("eth_getBalance", [address, "latest"]))));
    expect(calls("eth_getBalance") - balances).toBe(1);
  });

  it("different params are different calls", async () => {
    const before = calls("eth_getBalance");
    const addresses = Array.from({ length: 8 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, "0")}`);
    await Promise.all(addresses.map((a) => post(ng.rpcUrl, rpc("eth_getBalance", [a, "latest"]))));
    expect(calls("eth_getBalance") - before).toBe(8);
    const blocks = calls("eth_getBalance");
    await Promise.all(["latest", "pending", "0x0"].map((b) => post(ng.rpcUrl, rpc("eth_getBalance", [DEAD, b]))));
    expect(calls("eth_getBalance") - blocks).toBe(3);
  });

  it("an error reaches every caller that shared the call, and the next call asks again", async () => {
    answer = () => ({ delayMs: SLOW_MS, then: { error: { code: -32000, message: "header not found" } } });
    const before = calls("eth_getCode");
    const replies = await Promise.all(Array.from({ length: 6 }, (_, i) => post(ng.rpcUrl, rpc("eth_getCode", [DEAD, "latest"], i))));
    for (const r of replies) expect(r.json.error).toEqual({ code: -32000, message: "header not found" });
    const typed = await connectClient(ng.url, EthService, ng.key, "grpc")
      .getCode({ address: Buffer.from(DEAD.slice(2), "hex") })
      .then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(typed?.findDetails(JsonRpcErrorSchema)[0]?.message).toBe("header not found");
    expect(calls("eth_getCode") - before).toBe(2);
  });

  it("writes are never shared", async () => {
    answer = (r) => ({ delayMs: SLOW_MS, then: r.method === "eth_sendRawTransaction" ? { result: `0x${"11".repeat(32)}` } : { forward: anvil.url } });
    const before = calls("eth_sendRawTransaction");
    await Promise.all(Array.from({ length: 3 }, () => post(ng.rpcUrl, rpc("eth_sendRawTransaction", ["0x02f8"]))));
    expect(calls("eth_sendRawTransaction") - before).toBe(3);
  });
});

describe("callers that go away", () => {
  it("one caller leaving does not cancel the call the others wait for", async () => {
    const before = calls("eth_getStorageAt");
    const params = [DEAD, "0x0", "latest"];
    const leaving = new AbortController();
    const gone = fetch(ng.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(rpc("eth_getStorageAt", params)),
      signal: leaving.signal,
    }).catch((e: unknown) => e);
    const staying = Array.from({ length: 3 }, (_, i) => post(ng.rpcUrl, rpc("eth_getStorageAt", params, i)));
    setTimeout(() => leaving.abort(), SLOW_MS / 3);
    expect(await gone).toBeInstanceOf(Error);
    for (const r of await Promise.all(staying)) expect(r.json.result).toBe(`0x${"0".repeat(64)}`);
    expect(calls("eth_getStorageAt") - before).toBe(1);
    expect(upstream.requests.filter((r) => r.method === "eth_getStorageAt").at(-1)?.abandoned).toBe(false);
  });

  it("when every caller leaves, the upstream call is cancelled", async () => {
    answer = () => ({ delayMs: 2_000, then: { forward: anvil.url } });
    const params = [DEAD, "0x1", "latest"];
    const leaving = new AbortController();
    const gone = Array.from({ length: 3 }, () =>
      fetch(ng.rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(rpc("eth_getStorageAt", params)),
        signal: leaving.signal,
      }).catch((e: unknown) => e),
    );
    await new Promise((r) => setTimeout(r, 200));
    leaving.abort();
    await Promise.all(gone);
    const sentCall = upstream.requests.filter((r) => r.method === "eth_getStorageAt" && JSON.stringify(r.params) === JSON.stringify(params));
    expect(sentCall).toHaveLength(1);
    for (let i = 0; i < 100 && !sentCall[0]?.abandoned; i++) await new Promise((r) => setTimeout(r, 10));
    expect(sentCall[0]?.abandoned).toBe(true);
    // A newcomer starts afresh rather than joining the cancelled call.
    answer = () => ({ forward: anvil.url });
    expect((await post(ng.rpcUrl, rpc("eth_getStorageAt", params))).json.result).toBe(`0x${"0".repeat(64)}`);
  });
});
