/**
 * Identical concurrent calls (same network, method and params text sent to
 * the node, whichever front door) share one upstream call; every caller gets the
 * answer under its own id. Different params, writes and errors are not
 * shared beyond the calls in flight together. The node holds its answers
 * until the test opens a gate, once nodegate has seen every caller, so the
 * outcome does not depend on timing.
 */
import { create } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  ChainIdRequestSchema,
  type ChainIdResponse,
  EthService,
  GetBalanceRequestSchema,
  type GetBalanceResponse,
  GetBlockByNumberRequestSchema,
  GetProofRequestSchema,
  type GetProofResponse,
} from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { BlockTag } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { NEVER_CANCELLED } from "../../src/call-signal.js";
import { invokeTyped } from "../../src/grpc/typed-services.js";
import { compileUnaryRoutes, encodeAnswer } from "../../src/grpc/unary-routes.js";
import { JsonRpcErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { connectClient, grpcJsClient } from "../support/grpc-clients.js";
import { post, rpc } from "../support/http.js";
import { u256 } from "../spec/harness/typed-values.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type Answer, type ProgrammableUpstream, startProgrammableUpstream, type UpstreamRequest } from "../support/programmable-upstream.js";

const DEAD = "0x000000000000000000000000000000000000dead";

let anvil: AnvilNode;
let upstream: ProgrammableUpstream;
let ng: TestNodegate;
let answer: (r: UpstreamRequest) => Answer;
let gate: Promise<void>;
let open: () => void;

beforeAll(async () => {
  anvil = await startAnvil();
  upstream = await startProgrammableUpstream(async (r) => {
    await gate;
    return answer(r);
  });
  ng = await startNodegate({
    upstreamUrl: upstream.url,
    // No store: only coalescing is under test here.
    config: { cache: { maxBytes: 0, coalesce: true, coalesceWindowMs: 60_000, finalizedMaxAgeMs: 60_000 }, passThrough: { methods: ["eth_sendRawTransaction"], allowWrites: true } },
  });
}, 60_000);
afterAll(async () => {
  open?.();
  await ng?.close();
  await upstream?.close();
  await anvil?.stop();
});
beforeEach(() => {
  answer = () => ({ forward: anvil.url });
  gate = new Promise((resolve) => {
    open = resolve;
  });
});

function calls(method: string): number {
  return upstream.count(method);
}

function joined(): number {
  return ng.gateway.network(undefined).cache?.stats.joined ?? 0;
}

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!done()) throw new Error("timed out waiting");
}

describe("identical concurrent calls share one upstream call", () => {
  it("N native callers: one upstream call, each answer under the caller's own id", async () => {
    const before = calls("eth_getBalance");
    const joinedBefore = joined();
    const ids = Array.from({ length: 20 }, (_, i) => (i % 2 ? i : `caller-${i}`));
    const replies = Promise.all(ids.map((id) => post(ng.rpcUrl, rpc("eth_getBalance", [DEAD, "latest"], id))));
    await until(() => joined() - joinedBefore === 19);
    open();
    const expected = (await post(anvil.url, rpc("eth_getBalance", [DEAD, "latest"]))).json.result;
    (await replies).forEach((reply, i) => expect(reply.json).toEqual({ jsonrpc: "2.0", id: ids[i], result: expected }));
    expect(calls("eth_getBalance") - before).toBe(1);
  });

  it("both front doors share it when the node is sent the same params", async () => {
    const before = calls("eth_chainId");
    const joinedBefore = joined();
    const grpc = grpcJsClient(ng.address, EthService);
    const connect = connectClient(ng.url, EthService, ng.key, "connect");
    const typed = Promise.all([
      ...Array.from({ length: 5 }, () => grpc.call<ChainIdResponse>("chainId", create(ChainIdRequestSchema), { "x-api-key": ng.key })),
      ...Array.from({ length: 5 }, () => connect.chainId({})),
    ]);
    const native = Promise.all(Array.from({ length: 5 }, (_, i) => post(ng.rpcUrl, rpc("eth_chainId", [], i))));
    await until(() => joined() - joinedBefore === 14);
    open();
    for (const r of await typed) expect(r.chainId).toBe(31337n);
    for (const r of await native) expect(r.json.result).toBe("0x7a69");
    expect(calls("eth_chainId") - before).toBe(1);

    gate = new Promise((resolve) => {
      open = resolve;
    });
    const balances = calls("eth_getBalance");
    const joinedNow = joined();
    // A native call spelled as the typed door encodes (lower-case hex) joins the typed call's.
    const typedBalance = grpc.call<GetBalanceResponse>("getBalance", create(GetBalanceRequestSchema, { address: Buffer.from(DEAD.slice(2), "hex") }), { "x-api-key": ng.key });
    const nativeBalance = post(ng.rpcUrl, rpc("eth_getBalance", [DEAD, "latest"]));
    await until(() => joined() - joinedNow === 1);
    open();
    const expected = (await nativeBalance).json.result;
    expect(u256((await typedBalance).balance)).toBe(BigInt(expected));
    expect(calls("eth_getBalance") - balances).toBe(1);
    grpc.close();
  });

  it("params spelled differently are not shared: each caller gets the node's answer to what it sent", async () => {
    // Found from outside: keyed by the decoded params, a caller got the answer to another spelling. eth_getProof
    // echoes each storage key as it was sent (geth: a short key as a quantity, a 32-byte one in 64 digits), and a
    // node may refuse one spelling (Anvil: "odd number of digits") where it takes another.
    answer = (r) => {
      if (r.method !== "eth_getProof") return { forward: anvil.url };
      const [address, keys] = r.params as [string, string[]];
      return { result: { address, balance: "0x0", codeHash: `0x${"00".repeat(32)}`, nonce: "0x0", storageHash: `0x${"00".repeat(32)}`, accountProof: [], storageProof: keys.map((key) => ({ key, value: "0x0", proof: [] })) } };
    };
    const proofs = calls("eth_getProof");
    const joinedNow = joined();
    const grpc = grpcJsClient(ng.address, EthService);
    const typed = grpc.call<GetProofResponse>("getProof", create(GetProofRequestSchema, { address: Buffer.from(DEAD.slice(2), "hex"), storageKeys: [Uint8Array.of(1)] }), { "x-api-key": ng.key });
    const short = post(ng.rpcUrl, rpc("eth_getProof", [DEAD, ["0x1"], "latest"]));
    const padded = post(ng.rpcUrl, rpc("eth_getProof", [DEAD, [`0x${"1".padStart(64, "0")}`], "latest"]));
    const again = post(ng.rpcUrl, rpc("eth_getProof", [DEAD, ["0x1"], "latest"]));
    const balances = calls("eth_getBalance");
    const cases = [DEAD, DEAD.toUpperCase().replace("0X", "0x")].map((address) => post(ng.rpcUrl, rpc("eth_getBalance", [address, "latest"])));
    // The typed key is sent in 64 digits, as the padded native call: those two share, and the two short ones.
    await until(() => joined() - joinedNow === 2);
    open();
    expect((await short).json.result.storageProof[0].key).toBe("0x1");
    expect((await again).json.result.storageProof[0].key).toBe("0x1");
    expect((await padded).json.result.storageProof[0].key).toBe(`0x${"1".padStart(64, "0")}`);
    // The node echoed the 64 digits the typed door sent: 32 bytes.
    expect((await typed).proof?.storageProof[0]?.key).toEqual(Buffer.from("1".padStart(64, "0"), "hex"));
    expect(calls("eth_getProof") - proofs).toBe(2);
    for (const reply of await Promise.all(cases)) expect(reply.json.result).toMatch(/^0x[0-9a-f]+$/);
    // The address's case is a spelling too: two upstream calls.
    expect(calls("eth_getBalance") - balances).toBe(2);
    grpc.close();
  });

  it("typed callers that share the call share its encoding: the answer is transcoded once", async () => {
    const joinedBefore = joined();
    const request = create(GetBlockByNumberRequestSchema, { block: { kind: { case: "tag", value: BlockTag.LATEST } }, fullTransactions: true });
    const headers = { get: (name: string) => (name === "x-api-key" ? ng.key : null) };
    const route = compileUnaryRoutes(ng.gateway).get(`/${EthService.typeName}/GetBlockByNumber`);
    if (route === undefined) throw new Error("no GetBlockByNumber route");
    const results = Promise.all(Array.from({ length: 3 }, () => invokeTyped(ng.gateway, route.spec, request, headers, NEVER_CANCELLED)));
    await until(() => joined() - joinedBefore === 2);
    open();
    const [first, second, third] = await results;
    if (first === undefined || second === undefined || third === undefined) throw new Error("missing results");
    const framed = encodeAnswer(route, first, true);
    expect(encodeAnswer(route, second, true)).toBe(framed);
    expect(encodeAnswer(route, third, false)).toEqual(framed.subarray(5));
    expect(framed.readUInt32BE(1)).toBe(framed.length - 5);
  });

  it("a call does not join one sent longer ago than coalesceWindowMs: it gets the node's answer as of its own call", async () => {
    // Found from outside: behind a node holding an answer for seconds, a call made after a reorganization joined the
    // earlier call and got the block the reorganization had replaced.
    const windowed = await startNodegate({ upstreamUrl: upstream.url, config: { cache: { maxBytes: 0, coalesce: true, coalesceWindowMs: 200, finalizedMaxAgeMs: 60_000 } } });
    try {
      const before = calls("eth_getBalance");
      const first = post(windowed.rpcUrl, rpc("eth_getBalance", [DEAD, "latest"], 1));
      await until(() => calls("eth_getBalance") - before === 1);
      await new Promise((r) => setTimeout(r, 300));
      const second = post(windowed.rpcUrl, rpc("eth_getBalance", [DEAD, "latest"], 2));
      await until(() => calls("eth_getBalance") - before === 2);
      // While the first is still under way, a third call right after the second joins the second.
      const third = post(windowed.rpcUrl, rpc("eth_getBalance", [DEAD, "latest"], 3));
      await until(() => (windowed.gateway.network(undefined).cache?.stats.joined ?? 0) === 1);
      open();
      for (const reply of await Promise.all([first, second, third])) expect(reply.json.result).toMatch(/^0x/);
      expect(calls("eth_getBalance") - before).toBe(2);
    } finally {
      await windowed.close();
    }
  });

  it("different params are different calls", async () => {
    const before = calls("eth_getBalance");
    const addresses = Array.from({ length: 8 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, "0")}`);
    const first = Promise.all(addresses.map((a) => post(ng.rpcUrl, rpc("eth_getBalance", [a, "latest"]))));
    await until(() => calls("eth_getBalance") - before === 8);
    const blocks = Promise.all(["latest", "pending", "0x0"].map((b) => post(ng.rpcUrl, rpc("eth_getBalance", [DEAD, b]))));
    await until(() => calls("eth_getBalance") - before === 11);
    open();
    await Promise.all([first, blocks]);
    expect(calls("eth_getBalance") - before).toBe(11);
  });

  it("an error reaches every caller that shared the call, and the next call asks again", async () => {
    answer = () => ({ error: { code: -32000, message: "header not found" } });
    const before = calls("eth_getCode");
    const joinedBefore = joined();
    const replies = Promise.all(Array.from({ length: 6 }, (_, i) => post(ng.rpcUrl, rpc("eth_getCode", [DEAD, "latest"], i))));
    await until(() => joined() - joinedBefore === 5);
    open();
    for (const r of await replies) expect(r.json.error).toEqual({ code: -32000, message: "header not found" });
    const typed = await connectClient(ng.url, EthService, ng.key, "grpc")
      .getCode({ address: Buffer.from(DEAD.slice(2), "hex") })
      .then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(typed?.findDetails(JsonRpcErrorSchema)[0]?.message).toBe("header not found");
    expect(calls("eth_getCode") - before).toBe(2);
  });

  it("writes are never shared", async () => {
    answer = (r) => (r.method === "eth_sendRawTransaction" ? { result: `0x${"11".repeat(32)}` } : { forward: anvil.url });
    const before = calls("eth_sendRawTransaction");
    const replies = Promise.all(Array.from({ length: 3 }, () => post(ng.rpcUrl, rpc("eth_sendRawTransaction", ["0x02f8"]))));
    await until(() => calls("eth_sendRawTransaction") - before === 3);
    open();
    await replies;
    expect(calls("eth_sendRawTransaction") - before).toBe(3);
  });
});

describe("calls too large to key", () => {
  it("an eth_call with more than 64 KiB of params is sent for each caller, as it was written", async () => {
    // Keying it costs a canonical encoding and a SHA-256 of the whole params on every call: a third of the CPU
    // of a 1 MiB eth_call. Such calls seldom repeat, so they are neither shared nor cached.
    answer = () => ({ result: "0x" });
    const data = `0x${"ab".repeat(40 * 1024)}`;
    const before = calls("eth_call");
    const joinedBefore = joined();
    const replies = Promise.all(Array.from({ length: 3 }, (_, i) => post(ng.rpcUrl, rpc("eth_call", [{ to: DEAD, data }, "latest"], i))));
    await until(() => calls("eth_call") - before === 3);
    open();
    for (const r of await replies) expect(r.json.result).toBe("0x");
    expect(joined() - joinedBefore).toBe(0);
    const sent = upstream.requests.filter((r) => r.method === "eth_call").slice(-3);
    expect(sent.map((r) => JSON.stringify(r.params))).toEqual(Array(3).fill(JSON.stringify([{ to: DEAD, data }, "latest"])));
  });

  it("one just under the bound is still shared", async () => {
    answer = () => ({ result: "0x" });
    const data = `0x${"cd".repeat(30 * 1024)}`;
    const before = calls("eth_call");
    const joinedBefore = joined();
    const replies = Promise.all(Array.from({ length: 3 }, (_, i) => post(ng.rpcUrl, rpc("eth_call", [{ to: DEAD, data }, "latest"], i))));
    await until(() => joined() - joinedBefore === 2);
    open();
    for (const r of await replies) expect(r.json.result).toBe("0x");
    expect(calls("eth_call") - before).toBe(1);
  });
});

describe("callers that go away", () => {
  it("one caller leaving does not cancel the call the others wait for", async () => {
    const before = calls("eth_getStorageAt");
    const joinedBefore = joined();
    const params = [DEAD, "0x0", "latest"];
    const leaving = new AbortController();
    const gone = fetch(ng.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(rpc("eth_getStorageAt", params)),
      signal: leaving.signal,
    }).catch((e: unknown) => e);
    const staying = Promise.all(Array.from({ length: 3 }, (_, i) => post(ng.rpcUrl, rpc("eth_getStorageAt", params, i))));
    await until(() => joined() - joinedBefore === 3 && calls("eth_getStorageAt") - before === 1);
    leaving.abort();
    expect(await gone).toBeInstanceOf(Error);
    open();
    for (const r of await staying) expect(r.json.result).toBe(`0x${"0".repeat(64)}`);
    expect(calls("eth_getStorageAt") - before).toBe(1);
    expect(upstream.requests.filter((r) => r.method === "eth_getStorageAt").at(-1)?.abandoned).toBe(false);
  });

  it("when every caller leaves, the upstream call is cancelled", async () => {
    const params = [DEAD, "0x1", "latest"];
    const joinedBefore = joined();
    const leaving = new AbortController();
    const gone = Array.from({ length: 3 }, () =>
      fetch(ng.rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(rpc("eth_getStorageAt", params)),
        signal: leaving.signal,
      }).catch((e: unknown) => e),
    );
    const sentCall = () => upstream.requests.filter((r) => r.method === "eth_getStorageAt" && JSON.stringify(r.params) === JSON.stringify(params));
    await until(() => joined() - joinedBefore === 2 && sentCall().length === 1);
    leaving.abort();
    await Promise.all(gone);
    await until(() => sentCall()[0]?.abandoned === true);
    expect(sentCall()).toHaveLength(1);
    // A newcomer starts afresh rather than joining the cancelled call.
    open();
    expect((await post(ng.rpcUrl, rpc("eth_getStorageAt", params))).json.result).toBe(`0x${"0".repeat(64)}`);
    expect(sentCall()).toHaveLength(2);
  });
});
