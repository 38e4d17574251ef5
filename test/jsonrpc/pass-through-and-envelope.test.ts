/**
 * Legacy callers on the native HTTP path: allowlisted methods outside the
 * typed table pass through verbatim (writes only when enabled); typed callers
 * reach the same allowlist through JsonRpcService.Call; the JSON-RPC 2.0
 * envelope (batches, ids, notifications, every error code); HTTP rules; CORS.
 */
import nodeHttp from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicClient, http, parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { JsonRpcErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { CallRequestSchema, type CallResponse, JsonRpcService } from "../../gen/nodegate/jsonrpc/v1/jsonrpc_service_pb.js";
import { DEFAULT_CACHE, DEFAULT_LIMITS } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { connectClient, grpcJsClient } from "../support/grpc-clients.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { deployProbe } from "../support/probe.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

let anvil: AnvilNode;
let recorder: ProgrammableUpstream;
let ng: TestNodegate;
let writer: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  // eth_newBlockFilter waits a little, so two calls made together are in flight together (what coalescing would join).
  recorder = await startProgrammableUpstream((r) => (r.method === "eth_newBlockFilter" ? { delayMs: 100, then: { forward: anvil.url } } : { forward: anvil.url }));
  ng = await startNodegate({ upstreamUrl: recorder.url, config: { corsOrigins: ["https://dapp.example"], limits: { ...DEFAULT_LIMITS, maxBatchSize: 5, maxBodyBytes: 64 * 1024 } } });
  writer = await startNodegate({ upstreamUrl: anvil.url, config: { passThrough: { methods: ["net_version"], allowWrites: true } } });
});
afterAll(async () => {
  await ng?.close();
  await writer?.close();
  await recorder?.close();
  await anvil?.stop();
});

describe("pass-through allowlist", () => {
  it.each(["net_version", "web3_clientVersion", "eth_syncing", "eth_accounts", "eth_maxPriorityFeePerGas", "net_listening"])(
    "%s is forwarded verbatim and answered as the node answers",
    async (method) => {
      const direct = await post(anvil.url, rpc(method, [], 3));
      const via = await post(ng.rpcUrl, rpc(method, [], 3));
      expect(via.json).toEqual(direct.json);
      expect(recorder.requests.at(-1)?.method).toBe(method);
    },
  );

  // Found from outside (viem and ethers against the default configuration): HTTP watchers poll with filters, and
  // eth_newBlockFilter was -32601.
  it("filters pass by default, so viem's HTTP block filter works; two callers asking at once get two filters", async () => {
    const client = createPublicClient({ transport: http(ng.rpcUrl) });
    const filter = await client.createBlockFilter();
    await post(anvil.url, rpc("evm_mine", []));
    const mined = await client.getFilterChanges({ filter });
    expect(mined).toHaveLength(1);
    expect(mined[0]).toBe((await client.getBlock()).hash);
    expect(await client.uninstallFilter({ filter })).toBe(true);
    // Never coalesced (as production runs, with the cache on): a shared filter would split its changes between its callers.
    const coalescing = await startNodegate({ upstreamUrl: recorder.url, config: { cache: { ...DEFAULT_CACHE } } });
    try {
      const [a, b] = await Promise.all([post(coalescing.rpcUrl, rpc("eth_newBlockFilter", [], 1)), post(coalescing.rpcUrl, rpc("eth_newBlockFilter", [], 2))]);
      expect(typeof a.json.result).toBe("string");
      expect(a.json.result).not.toBe(b.json.result);
    } finally {
      await coalescing.close();
    }
  });

  // Found from outside (viem against the default configuration): viem asks eth_fillTransaction first, and on -32601
  // works out the fees itself, so a local account's transaction got other fees than the node's own fill gives.
  it("eth_fillTransaction passes by default, so viem prepares a local account's transaction as the node fills it", async () => {
    const tx = { from: "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266", to: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8", value: "0x1" };
    const direct = await post(anvil.url, rpc("eth_fillTransaction", [tx], 4));
    expect(direct.json.result?.raw).toMatch(/^0x/);
    expect((await post(ng.rpcUrl, rpc("eth_fillTransaction", [tx], 4))).json).toEqual(direct.json);
    const account = privateKeyToAccount("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80" as const);
    const request = { account, to: tx.to as `0x${string}`, value: 1n, chain: null } as const;
    const viaNodegate = await createPublicClient({ transport: http(ng.rpcUrl) }).prepareTransactionRequest(request);
    const viaNode = await createPublicClient({ transport: http(anvil.url) }).prepareTransactionRequest(request);
    const fields = (r: typeof viaNode) => ({ nonce: r.nonce, gas: r.gas, maxFeePerGas: r.maxFeePerGas, maxPriorityFeePerGas: r.maxPriorityFeePerGas, type: r.type });
    expect(fields(viaNodegate)).toEqual(fields(viaNode));
    expect(recorder.requests.some((r) => r.method === "eth_fillTransaction")).toBe(true);
  });

  it("web3.js's getCoinbase, isMining and getHashRate get the node's own answers", async () => {
    // Found from outside: eth_coinbase, eth_mining and eth_hashrate were -32601 from nodegate where Anvil answers
    // (eth_coinbase) or refuses in its own words.
    for (const [i, method] of ["eth_coinbase", "eth_mining", "eth_hashrate"].entries()) {
      const direct = await post(anvil.url, rpc(method, [], 30 + i));
      expect((await post(ng.rpcUrl, rpc(method, [], 30 + i))).json, method).toEqual(direct.json);
    }
  });

  it("params go exactly as sent", async () => {
    const params = '["0x68656c6c6f"]';
    await post(ng.rpcUrl, `{"jsonrpc":"2.0","id":1,"method":"web3_sha3","params":${params}}`);
    expect(recorder.requests.at(-1)?.body).toContain(`"params":${params}`);
  });

  // Found from outside (cast): with the block left out, the whole params were encoded anew, so eth_getProof's
  // storage key "0x0" went as 32 zero bytes and the answer echoed that, not the key the caller sent.
  it("a table method's block left off the end is added after the caller's params, which go as sent", async () => {
    const address = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
    const sentFor = async (method: string, params: string) => {
      await post(ng.rpcUrl, `{"jsonrpc":"2.0","id":1,"method":"${method}","params":${params}}`);
      const body = recorder.requests.at(-1)?.body ?? "";
      expect(recorder.requests.at(-1)?.method).toBe(method);
      return body.slice(body.indexOf('"params":') + 9, body.lastIndexOf("}"));
    };
    expect(await sentFor("eth_getProof", `["${address}", ["0x0"]]`)).toBe(`["${address}", ["0x0"],"latest"]`);
    expect(await sentFor("eth_getBalance", `[ "${address}" ]`)).toBe(`[ "${address}" ,"latest"]`);
    const call = `{"to":"${address}","data":"0x","value":"0x0"}`;
    expect(await sentFor("eth_call", `[${call}]`)).toBe(`[${call},"latest"]`);
    // A number block is still written as hex for the node, and the address still goes as written.
    expect(await sentFor("eth_getBalance", `["${address}",1]`)).toBe(`["${address}","0x1"]`);
  });

  it("a method on no list is -32601 and nothing goes upstream", async () => {
    const before = recorder.requests.length;
    const res = await post(ng.rpcUrl, rpc("debug_traceTransaction", ["0x00"]));
    expect(res.json.error.code).toBe(-32601);
    expect(recorder.requests.length).toBe(before);
  });

  it("eth_sendRawTransaction is refused unless writes are enabled", async () => {
    const probe = await deployProbe(anvil.url);
    const signed = await probe.wallet.signTransaction({
      account: probe.account,
      to: "0x000000000000000000000000000000000000dEaD",
      value: parseEther("0.001"),
      nonce: await probe.client.getTransactionCount({ address: probe.account.address }),
      gas: 21_000n,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1n,
      chain: probe.wallet.chain,
    } as never);
    const refused = await post(ng.rpcUrl, rpc("eth_sendRawTransaction", [signed]));
    expect(refused.json.error.code).toBe(-32601);
    const accepted = await post(writer.rpcUrl, rpc("eth_sendRawTransaction", [signed]));
    expect(accepted.json.result).toMatch(/^0x[0-9a-f]{64}$/);
    // Anvil mines on its own schedule, so wait for the receipt rather than assume it is there.
    const receipt = await probe.client.waitForTransactionReceipt({ hash: accepted.json.result });
    expect(receipt.status).toBe("success");
  });

  // Found from outside (Foundry users driving a dev chain through nodegate): listed anvil_mine and evm_snapshot were
  // coalesced like reads, so five concurrent anvil_mine calls mined one block and four evm_snapshot callers shared an id.
  it("a listed method not known to read is sent once per call: concurrent anvil_mine calls mine a block each", async () => {
    const devChain = await startAnvil();
    const slow = await startProgrammableUpstream(() => ({ delayMs: 50, then: { forward: devChain.url } }));
    const cached = await startNodegate({
      upstreamUrl: slow.url,
      config: { cache: { ...DEFAULT_CACHE }, passThrough: { methods: ["anvil_mine", "evm_snapshot", "eth_blockNumber", "txpool_status"], allowWrites: false } },
    });
    try {
      const height = async () => Number.parseInt((await post(devChain.url, rpc("eth_blockNumber"))).json.result, 16);
      const before = await height();
      const mined = await Promise.all([1, 2, 3, 4, 5].map((id) => post(cached.rpcUrl, rpc("anvil_mine", ["0x1"], id))));
      expect(mined.map((r) => r.json.error)).toEqual([undefined, undefined, undefined, undefined, undefined]);
      expect(await height()).toBe(before + 5);
      const snapshots = await Promise.all([1, 2, 3, 4, 5].map((id) => post(cached.rpcUrl, rpc("evm_snapshot", [], id))));
      expect(new Set(snapshots.map((r) => r.json.result)).size).toBe(5);
      // A known read is still shared: five identical txpool_status calls made together reach the node once.
      const sentBefore = slow.requests.filter((r) => r.method === "txpool_status").length;
      const pools = await Promise.all([1, 2, 3, 4, 5].map((id) => post(cached.rpcUrl, rpc("txpool_status", [], id))));
      expect(pools.every((r) => r.json.result !== undefined)).toBe(true);
      expect(slow.requests.filter((r) => r.method === "txpool_status").length - sentBefore).toBe(1);
    } finally {
      await cached.close();
      await slow.close();
      await devChain.stop();
    }
  });

  it("a configured list replaces the default", async () => {
    expect((await post(writer.rpcUrl, rpc("net_version"))).json.result).toBe("31337");
    expect((await post(writer.rpcUrl, rpc("web3_clientVersion"))).json.error.code).toBe(-32601);
  });
});

describe("JsonRpcService.Call for typed callers", () => {
  it("reaches pass-through methods (grpc-js and connect-es)", async () => {
    const grpc = grpcJsClient(ng.address, JsonRpcService);
    const res = await grpc.call<CallResponse>("call", create(CallRequestSchema, { method: "net_version" }), { "x-api-key": ng.key });
    grpc.close();
    expect(JSON.parse(res.resultJson)).toBe("31337");
    const connect = await connectClient(ng.url, JsonRpcService, ng.key).call({ method: "eth_getBlockByNumber", paramsJson: '["0x0", false]' });
    expect(JSON.parse(connect.resultJson).number).toBe("0x0");
  });

  it('reads params_json "null" as no params, as the native path reads "params": null', async () => {
    const native = await post(ng.rpcUrl, { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: null });
    expect(native.json.result).toBe("0x7a69");
    const typed = await connectClient(ng.url, JsonRpcService, ng.key, "grpc").call({ method: "eth_chainId", paramsJson: " null " });
    expect(JSON.parse(typed.resultJson)).toBe("0x7a69");
    const scalar = await connectClient(ng.url, JsonRpcService, ng.key, "grpc").call({ method: "eth_chainId", paramsJson: "5" }).then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(scalar?.code).toBe(Code.InvalidArgument);
    expect(scalar?.findDetails(JsonRpcErrorSchema)[0]).toMatchObject({ code: -32602n, message: "params_json must be a JSON array or object" });
  });

  it("validates table methods and maps errors to statuses with details", async () => {
    const client = connectClient(ng.url, JsonRpcService, ng.key, "grpc");
    const bad = await client.call({ method: "eth_getBalance", paramsJson: '["0x12"]' }).then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(bad?.code).toBe(Code.InvalidArgument);
    expect(Number(bad?.findDetails(JsonRpcErrorSchema)[0]?.code)).toBe(-32602);
    const unknown = await client.call({ method: "nope_nope" }).then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(unknown?.code).toBe(Code.Unimplemented);
    const notJson = await client.call({ method: "net_version", paramsJson: "[" }).then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(notJson?.code).toBe(Code.InvalidArgument);
    expect(notJson?.findDetails(JsonRpcErrorSchema)[0]).toMatchObject({ code: -32602n, message: "params_json is not valid JSON" });
    const noMethod = await client.call({ paramsJson: "[]" }).then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(noMethod?.code).toBe(Code.InvalidArgument);
    expect(noMethod?.findDetails(JsonRpcErrorSchema)[0]).toMatchObject({ code: -32602n, message: "method is required" });
  });
});

describe("JSON-RPC 2.0 envelope on HTTP", () => {
  it("answers a batch in order, each member with its own id, invalid members individually", async () => {
    const res = await post(ng.rpcUrl, [rpc("eth_chainId", [], "a"), { jsonrpc: "2.0", id: 2, method: 5 }, rpc("eth_getBalance", ["0x1"], 3), 7, rpc("nope", [], 4)]);
    expect(res.status).toBe(200);
    expect(res.json.map((r: { id: unknown }) => r.id)).toEqual(["a", 2, 3, null, 4]);
    expect(res.json[0].result).toBe("0x7a69");
    expect(res.json[1].error.code).toBe(-32600);
    expect(res.json[2].error.code).toBe(-32602);
    expect(res.json[3].error.code).toBe(-32600);
    expect(res.json[4].error.code).toBe(-32601);
  });

  it("an empty batch is -32600; a batch over the maximum is refused with a clear message", async () => {
    expect((await post(ng.rpcUrl, [])).json.error.code).toBe(-32600);
    const members = Array.from({ length: 6 }, (_, i) => rpc("eth_chainId", [], i));
    const big = await post(ng.rpcUrl, [...members, { jsonrpc: "2.0", method: "eth_chainId" }]);
    const error = { code: -32600, message: "invalid request: batch of 7 exceeds the maximum of 5" };
    expect([big.status, big.json]).toEqual([200, members.map((m) => ({ jsonrpc: "2.0", id: m.id, error }))]);
  });

  it("a batch of notifications over the maximum: one -32600 under id null, not a 204 as if they had run", async () => {
    const notifications = Array.from({ length: 7 }, () => ({ jsonrpc: "2.0", method: "eth_chainId" }));
    const res = await post(ng.rpcUrl, notifications);
    expect([res.status, res.json]).toEqual([200, { jsonrpc: "2.0", id: null, error: { code: -32600, message: "invalid request: batch of 7 exceeds the maximum of 5" } }]);
  });

  it("echoes ids as their raw text and answers no notification", async () => {
    const text = '[{"jsonrpc":"2.0","id":12345678901234567890123,"method":"eth_chainId"},{"jsonrpc":"2.0","id":1.50,"method":"eth_chainId"},{"jsonrpc":"2.0","method":"eth_chainId"}]';
    const res = await post(ng.rpcUrl, text);
    expect(res.text).toContain('"id":12345678901234567890123,');
    expect(res.text).toContain('"id":1.50,');
    expect(res.json).toHaveLength(2);
    const only = await post(ng.rpcUrl, { jsonrpc: "2.0", method: "eth_chainId" });
    expect(only.status).toBe(204);
    expect(only.text).toBe("");
  });

  it("gives -32700 with id null for unparsable text, -32600 for a bad jsonrpc version", async () => {
    expect((await post(ng.rpcUrl, '{"jsonrpc":"2.0",')).json).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } });
    expect((await post(ng.rpcUrl, { jsonrpc: "1.0", id: 9, method: "eth_chainId" })).json).toMatchObject({ id: 9, error: { code: -32600 } });
    expect((await post(ng.rpcUrl, { jsonrpc: "2.0", id: 9, method: "eth_chainId", params: "x" })).json.error.code).toBe(-32600);
  });

  it('reads "params": null as no params, as geth and Anvil do', async () => {
    const res = await post(ng.rpcUrl, { jsonrpc: "2.0", id: 9, method: "eth_chainId", params: null });
    expect(res.json).toEqual({ jsonrpc: "2.0", id: 9, result: "0x7a69" });
    expect(recorder.requests.at(-1)?.body).not.toContain("null");
  });

  it("a number JSON cannot hold (1e400) is -32602 for its own call, and the rest of the batch is answered", async () => {
    const text = '[{"jsonrpc":"2.0","id":8,"method":"eth_feeHistory","params":["0x1","latest",[1e400]]},{"jsonrpc":"2.0","id":9,"method":"eth_chainId"}]';
    const res = await post(ng.rpcUrl, text);
    expect(res.status).toBe(200);
    expect(res.json[0]).toMatchObject({ id: 8, error: { code: -32602, message: expect.stringContaining("rewardPercentiles[0]") } });
    expect(res.json[1]).toEqual({ jsonrpc: "2.0", id: 9, result: "0x7a69" });
  });
});

describe("params nodes accept in more than one spelling", () => {
  it("eth_feeHistory's blockCount as a JSON integer or a decimal string, as geth and Anvil read it, forwarded as sent", async () => {
    for (const count of [2, "2", "0x2"]) {
      const params = [count, "latest", [50]];
      const direct = await post(anvil.url, rpc("eth_feeHistory", params, 5));
      const via = await post(ng.rpcUrl, rpc("eth_feeHistory", params, 5));
      expect(via.json).toEqual(direct.json);
      expect(recorder.requests.at(-1)?.params).toEqual(params);
    }
    expect((await post(ng.rpcUrl, rpc("eth_feeHistory", [-1, "latest", []]))).json.error.code).toBe(-32602);
    const huge = await post(ng.rpcUrl, '{"jsonrpc":"2.0","id":1,"method":"eth_feeHistory","params":[18446744073709551616,"latest",[]]}');
    expect(huge.json.error).toMatchObject({ code: -32602, message: expect.stringContaining("cannot be read exactly") });
  });

  it("eth_getLogs: null among a topic's alternatives is a wildcard, as geth reads it", async () => {
    const topic = `0x${"11".repeat(32)}`;
    for (const topics of [[[null]], [null, [null, topic]]]) {
      const params = [{ fromBlock: "0x0", toBlock: "latest", topics }];
      const direct = await post(anvil.url, rpc("eth_getLogs", params, 6));
      const via = await post(ng.rpcUrl, rpc("eth_getLogs", params, 6));
      expect(via.json).toEqual(direct.json);
      expect(via.json.result).toBeDefined();
    }
  });
});

describe("HTTP rules", () => {
  it("only POST with application/json, and a body size limit", async () => {
    const get = await fetch(ng.rpcUrl);
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    const text = await post(ng.rpcUrl, JSON.stringify(rpc("eth_chainId")), { "content-type": "text/plain" });
    expect(text.status).toBe(415);
    // No content-type at all is refused too (found by a mutation audit: only a wrong one was tried).
    const body = JSON.stringify(rpc("eth_chainId"));
    const untyped = await new Promise<number | undefined>((resolve, reject) => {
      const req = nodeHttp.request(ng.rpcUrl, { method: "POST", headers: { "content-length": Buffer.byteLength(body) } }, (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on("error", reject);
      req.end(body);
    });
    expect(untyped).toBe(415);
    const huge = await post(ng.rpcUrl, rpc("eth_call", [{ data: `0x${"00".repeat(40 * 1024)}` }, "latest"]));
    expect(huge.status).toBe(413);
    expect(huge.json.error.message).toMatch(/exceeds 65536 bytes/);
    // still serving
    expect((await post(ng.rpcUrl, rpc("eth_chainId"))).json.result).toBe("0x7a69");
  });

  it("CORS: preflight answered for configured origins; others get no CORS headers", async () => {
    const pre = await fetch(ng.rpcUrl, { method: "OPTIONS", headers: { origin: "https://dapp.example", "access-control-request-method": "POST" } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("https://dapp.example");
    expect(pre.headers.get("access-control-allow-headers")).toContain("x-api-key");
    const ok = await post(ng.rpcUrl, rpc("eth_chainId"), { origin: "https://dapp.example" });
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://dapp.example");
    const other = await post(ng.rpcUrl, rpc("eth_chainId"), { origin: "https://evil.example" });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    // Found from outside: another origin's preflight fell through to the native door's 405 "use POST".
    const otherPre = await fetch(ng.rpcUrl, { method: "OPTIONS", headers: { origin: "https://evil.example", "access-control-request-method": "POST" } });
    expect([otherPre.status, otherPre.headers.get("access-control-allow-origin"), await otherPre.text()]).toEqual([403, null, "CORS: this origin is not in cors.origins\n"]);
    // Found from outside: answers without an allowed Origin had no Vary, so a shared cache could hand them to an allowed
    // origin; connect-es's own headers (compressed bodies) and a browser's trace context were refused at preflight.
    expect(other.headers.get("vary")).toBe("origin");
    expect((await post(ng.rpcUrl, rpc("eth_chainId"))).headers.get("vary")).toBe("origin");
    // A Connect GET (what a cache keeps) varies with Accept-Encoding too, since Connect compresses its answer by it.
    const get = await fetch(`${ng.url}/nodegate.eth.v1.EthService/ChainId?connect=v1&encoding=json&message=%7B%7D`, { headers: { origin: "https://dapp.example", "x-api-key": ng.key } });
    expect([get.status, get.headers.get("vary")]).toEqual([200, "origin, accept-encoding, x-api-key, authorization, x-nodegate-network"]);
    const allowed = pre.headers.get("access-control-allow-headers")?.split(", ") ?? [];
    for (const h of ["content-encoding", "connect-content-encoding", "connect-accept-encoding", "grpc-message-type", "traceparent"]) expect(allowed).toContain(h);
    const exposed = ok.headers.get("access-control-expose-headers")?.split(", ") ?? [];
    for (const h of ["grpc-status", "grpc-status-details-bin", "content-encoding", "connect-content-encoding", "x-request-id", "retry-after"]) expect(exposed).toContain(h);
  });

  it("CORS: a gRPC-Web call to a method nodegate does not serve carries the CORS headers over HTTP/2 as over HTTP/1.1", async () => {
    // Found from outside: over HTTP/2 (a browser on HTTPS) the UNIMPLEMENTED answer had none, so the web app saw a
    // CORS failure instead of a readable status.
    const headers = { "content-type": "application/grpc-web+proto", "x-grpc-web": "1", origin: "https://dapp.example", "x-api-key": ng.key };
    const path = "/nodegate.eth.v1.EthService/NoSuchMethod";
    const overHttp1 = await fetch(`${ng.url}${path}`, { method: "POST", headers, body: new Uint8Array(5) });
    const overHttp2 = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      const session = http2.connect(ng.url);
      session.on("error", reject);
      const stream = session.request({ ":method": "POST", ":path": path, ...headers });
      stream.on("response", (h) => {
        resolve(h);
        session.close();
      });
      stream.end(new Uint8Array(5));
    });
    expect(overHttp1.headers.get("grpc-status")).toBe("12");
    expect(overHttp2["grpc-status"]).toBe("12");
    for (const name of ["access-control-allow-origin", "access-control-expose-headers", "vary", "x-request-id"]) {
      expect([name, overHttp2[name] !== undefined]).toEqual([name, true]);
      if (name !== "x-request-id") expect([name, overHttp2[name]]).toEqual([name, overHttp1.headers.get(name)]);
    }
  });

  it("a request target in absolute form (what a client sends to a proxy) is served, as RFC 9112 asks", async () => {
    const body = JSON.stringify(rpc("eth_chainId"));
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(ng.port, "127.0.0.1", () => {
        socket.write(`POST ${ng.rpcUrl} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
      });
      let text = "";
      socket.on("data", (d: Buffer) => (text += d.toString()));
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
    });
    expect(answer.startsWith("HTTP/1.1 200")).toBe(true);
    expect(answer).toContain('"result":"0x7a69"');
  });
});
