/**
 * The spec's transports, request and response envelopes and versioning, on
 * the native doors (HTTP and WebSocket), with the typed door where a rule
 * reaches it. nodegate sits in front of a real Anvil through a counter, so a
 * test can prove a refused request never reached the node.
 */
import { create } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { type Hex, hexToBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService, GetLogsRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { JsonRpcService } from "../../gen/nodegate/jsonrpc/v1/jsonrpc_service_pb.js";
import { StarknetService } from "../../gen/nodegate/starknet/v1/starknet_service_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { API_KEY_HEADER } from "../../src/grpc/typed-services.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import { type CountingUpstream, startCountingUpstream } from "../support/counting-upstream.js";
import { ANVIL_KEY_0 } from "../support/probe.js";
import { FIXTURE_BLOCK, type StarknetFixtureUpstream, startStarknetFixtureUpstream } from "../support/starknet-fixture-upstream.js";
import { Code, HttpDoor, type JsonRpcReply, TypedDoor, wsUpgrade } from "./harness/doors.js";
import { openSpecGateway, type SpecGateway } from "./harness/gateway.js";
import { specRule } from "./harness/spec-rule.js";

const UNKNOWN_HASH: Hex = `0x${"5a".repeat(32)}`;

let anvil: AnvilNode;
let counter: CountingUpstream;
let starknet: StarknetFixtureUpstream;
let g: SpecGateway;

beforeAll(async () => {
  [anvil, starknet] = await Promise.all([startAnvil(), startStarknetFixtureUpstream()]);
  counter = await startCountingUpstream(anvil.url);
  g = await openSpecGateway({
    upstreamUrl: counter.url,
    networks: [
      { name: "ethereum", family: "eth", upstreams: [{ label: "anvil", url: counter.url }] },
      { name: "starknet", family: "starknet", upstreams: [{ label: "fixtures", url: starknet.url }] },
    ],
  });
});

afterAll(async () => {
  await g?.close();
  await Promise.all([counter?.close(), starknet?.close(), anvil?.stop()]);
});

/** Runs `send` and returns how many requests reached the node meanwhile. */
async function upstreamCalls(send: () => Promise<unknown>): Promise<number> {
  const before = counter.count;
  await send();
  return counter.count - before;
}

specRule("service.read-only", async () => {
  const account = privateKeyToAccount(ANVIL_KEY_0);
  const raw = await account.signTransaction({
    chainId: 31337,
    type: "eip1559",
    to: account.address,
    value: 1n,
    gas: 21_000n,
    maxFeePerGas: 10n ** 10n,
    maxPriorityFeePerGas: 1n,
    nonce: 0,
  });
  const blockBefore = await g.http.result("eth_blockNumber", []);

  let native: JsonRpcReply | undefined;
  let write: JsonRpcReply | undefined;
  expect(
    await upstreamCalls(async () => {
      native = await g.http.call("eth_sendRawTransaction", [raw]);
      write = await g.http.call("eth_sendTransaction", [{ from: account.address, to: account.address, value: "0x1" }]);
    }),
  ).toBe(0);
  expect(native?.error).toEqual({ code: -32601, message: "the method eth_sendRawTransaction does not exist/is not available" });
  expect(write?.error?.code).toBe(-32601);

  const generic = new TypedDoor(g.ng, JsonRpcService, { [API_KEY_HEADER]: g.ng.key });
  try {
    const typed = await generic.fail(JsonRpcService.method.call, { method: "eth_sendRawTransaction", paramsJson: JSON.stringify([raw]) });
    expect(typed.code).toBe(Code.Unimplemented);
    expect(typed.error?.code).toBe(-32601);
  } finally {
    generic.close();
  }
  // Nothing was mined and the sender's nonce did not move.
  expect(await g.http.result("eth_blockNumber", [])).toBe(blockBefore);
  expect(await g.http.result("eth_getTransactionCount", [account.address, "latest"])).toBe("0x0");
  // The typed services have no write method at all.
  for (const service of [EthService, StarknetService]) {
    for (const rpc of service.methods) expect(rpc.idempotency, `${service.name}.${rpc.name}`).toBe(MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS);
  }
});

specRule("transport.http-post", async () => {
  const ok = await g.http.post({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] });
  expect([ok.status, ok.json.result]).toEqual([200, "0x7a69"]);
  const withCharset = await g.http.post(
    { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] },
    { headers: { "content-type": "application/json; charset=utf-8" } },
  );
  expect(withCharset.status).toBe(200);
  // The media types geth takes (rpc/http.go acceptedContentTypes), as legacy clients send them.
  for (const type of ["application/json-rpc", "application/jsonrequest"]) {
    const other = await g.http.post({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }, { headers: { "content-type": type } });
    expect([type, other.status, other.json.result]).toEqual([type, 200, "0x7a69"]);
  }

  const get = await g.http.post(undefined, { method: "GET" });
  expect(get.status).toBe(405);
  expect(get.headers.get("allow")).toBe("POST");
  expect(get.json.error.code).toBe(-32600);
  // With CORS off, a browser's preflight is told so, not "use POST" (found from outside).
  const preflight = await g.http.post(undefined, { method: "OPTIONS", headers: { origin: "https://dapp.example", "access-control-request-method": "POST" } });
  expect([preflight.status, preflight.headers.get("access-control-allow-origin"), preflight.text]).toEqual([403, null, "CORS is off: no origin may call from a browser (cors.origins)\n"]);
  const text = await g.http.post('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}', { headers: { "content-type": "text/plain" } });
  expect(text.status).toBe(415);
  // The media type counts whole (found from outside: a prefix match took these), its case and parameters aside.
  for (const type of ["application/json-seq", "application/json-patch+json", "application/json.v2", "application/jsonx", "application/json-rpcx"]) {
    const other = await g.http.post({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }, { headers: { "content-type": type } });
    expect([type, other.status]).toEqual([type, 415]);
  }
  for (const type of ["Application/JSON", " application/json-rpc ;charset=UTF-8"]) {
    const other = await g.http.post({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }, { headers: { "content-type": type } });
    expect([type, other.status]).toEqual([type, 200]);
  }
  expect(text.json.error).toEqual({ code: -32600, message: "invalid request: content-type must be application/json" });
});

specRule("transport.websocket", async () => {
  const texts = [
    '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
    `{"jsonrpc":"2.0","id":"b","method":"eth_getBlockByHash","params":["${UNKNOWN_HASH}",false]}`,
    '{"jsonrpc":"2.0","id":3,"method":"eth_getBlockByNumber","params":["0x0",false]}',
    '{"jsonrpc":"2.0","id":4,"method":"eth_nothing","params":[]}',
    '[{"jsonrpc":"2.0","id":5,"method":"eth_chainId"},{"jsonrpc":"2.0","id":6,"method":"eth_blockNumber"}]',
  ];
  for (const text of texts) {
    const [overHttp, overWs] = await Promise.all([g.http.post(text), g.ws.send(text)]);
    expect(overWs, text).toBe(overHttp.text);
  }
});

specRule("envelope.jsonrpc", async () => {
  for (const door of [g.http, g.ws]) {
    const send = async (text: string) => JSON.parse(door instanceof HttpDoor ? (await door.post(text)).text : await door.send(text)) as JsonRpcReply;
    const ok = await send('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}');
    expect(ok).toEqual({ jsonrpc: "2.0", id: 1, result: "0x7a69" });
    for (const bad of [
      '{"id":2,"method":"eth_chainId","params":[]}',
      '{"jsonrpc":"1.0","id":2,"method":"eth_chainId","params":[]}',
      '{"jsonrpc":2.0,"id":2,"method":"eth_chainId","params":[]}',
    ]) {
      expect(await send(bad), bad).toEqual({ jsonrpc: "2.0", id: 2, error: { code: -32600, message: 'invalid request: jsonrpc must be "2.0"' } });
    }
    const pair = '[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"eth_nope"}]';
    const batch = (await send(pair)) as unknown as JsonRpcReply[];
    expect(batch.map((r) => r.jsonrpc)).toEqual(["2.0", "2.0"]);
  }
});

specRule("envelope.method", async () => {
  for (const door of [g.http, g.ws]) {
    const send = async (text: string) => JSON.parse(door instanceof HttpDoor ? (await door.post(text)).text : await door.send(text)) as JsonRpcReply;
    let missing: JsonRpcReply | undefined;
    let unknown: JsonRpcReply | undefined;
    expect(
      await upstreamCalls(async () => {
        missing = await send('{"jsonrpc":"2.0","id":1,"params":[]}');
        unknown = await send('{"jsonrpc":"2.0","id":2,"method":"eth_getBlockByHeight","params":["0x0"]}');
      }),
    ).toBe(0);
    expect(missing?.error).toEqual({ code: -32600, message: "invalid request: method must be a string" });
    expect(unknown?.error).toEqual({ code: -32601, message: "the method eth_getBlockByHeight does not exist/is not available" });
    expect((await send('{"jsonrpc":"2.0","id":3,"method":"eth_getBlockByNumber","params":["0x0",false]}')).result.number).toBe("0x0");
  }
});

specRule("envelope.params", async () => {
  const starknetHttp = g.on("starknet").http;
  const named = `{"block_id":{"block_number":${FIXTURE_BLOCK.number}},"index":1}`;
  for (const door of [g.http, g.ws]) {
    const call = (method: string, params: unknown) => door.call(method, params);
    expect((await call("eth_getBlockByNumber", ["0x0", false])).result.number).toBe("0x0");
    expect((await call("eth_getBlockByNumber", { block: "0x0", fullTransactions: false })).error).toEqual({
      code: -32602,
      message: "invalid params: want a JSON array of positional params",
    });
    expect((await call("eth_getBlockByNumber", undefined)).error).toEqual({ code: -32602, message: "missing value for required argument 0 (block)" });
  }
  const overWs = g.on("starknet").ws;
  for (const door of [starknetHttp, overWs]) {
    expect((await door.call("starknet_getTransactionByBlockIdAndIndex", JSON.parse(named))).result).toEqual(FIXTURE_BLOCK.transactions[1]);
  }
  const positional = await starknetHttp.call("starknet_getTransactionByBlockIdAndIndex", [{ block_number: FIXTURE_BLOCK.number }, 1]);
  expect(positional.result).toEqual(FIXTURE_BLOCK.transactions[1]);
});

specRule("envelope.id", async () => {
  for (const door of [g.http, g.ws]) {
    const send = async (text: string) => (door instanceof HttpDoor ? (await door.post(text)).text : door.send(text));
    for (const id of ["7", "12345678901234567890", '"abc"', "null"]) {
      expect(await send(`{"jsonrpc":"2.0","id":${id},"method":"eth_chainId","params":[]}`)).toBe(`{"jsonrpc":"2.0","id":${id},"result":"0x7a69"}`);
    }
    // An object, a boolean (found by a mutation audit: only an object was tried) and an array are no ids.
    for (const id of ['{"n":1}', "true", "[1]"]) {
      const badId = JSON.parse(await send(`{"jsonrpc":"2.0","id":${id},"method":"eth_chainId","params":[]}`)) as JsonRpcReply;
      expect(badId, id).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "invalid request: id must be a string, a number or null" } });
    }
  }
  // Without an id the request is a notification: no answer at all.
  const notified = await g.http.post('{"jsonrpc":"2.0","method":"eth_chainId","params":[]}');
  expect([notified.status, notified.text]).toEqual([204, ""]);
  // Over WebSocket nothing comes back for it, so the next message answers the next request.
  const { session } = await wsUpgrade(g.ng.wsUrl);
  session?.send('{"jsonrpc":"2.0","method":"eth_chainId","params":[]}');
  session?.send('{"jsonrpc":"2.0","id":8,"method":"eth_chainId","params":[]}');
  expect(await session?.next()).toBe('{"jsonrpc":"2.0","id":8,"result":"0x7a69"}');
  await session?.close();
});

specRule("response.envelope", async () => {
  for (const door of [g.http, g.ws]) {
    const success = await door.call("eth_getBlockByHash", [UNKNOWN_HASH, false], 11);
    expect(Object.keys(success)).toEqual(["jsonrpc", "id", "result"]);
    expect(success).toEqual({ jsonrpc: "2.0", id: 11, result: null });
    const failure = await door.call("eth_getBlockByHash", ["0x12", false], 12);
    expect(Object.keys(failure)).toEqual(["jsonrpc", "id", "error"]);
    expect(failure.error?.code).toBe(-32602);
  }
});

specRule("response.nothing-found", async () => {
  const table = createMethodTable();
  const nobody = `0x${"77".repeat(20)}`;
  const answer = async (method: string, params: unknown[]) => (await g.http.post({ jsonrpc: "2.0", id: 1, method, params })).text;
  expect(await answer("eth_getBlockByHash", [UNKNOWN_HASH, true])).toBe('{"jsonrpc":"2.0","id":1,"result":null}');
  expect(await answer("eth_getTransactionReceipt", [UNKNOWN_HASH])).toBe('{"jsonrpc":"2.0","id":1,"result":null}');
  expect(await answer("eth_getLogs", [{ address: nobody, fromBlock: "0x0" }])).toBe('{"jsonrpc":"2.0","id":1,"result":[]}');

  const block = await g.eth.call(EthService.method.getBlockByHash, { blockHash: hexToBytes(UNKNOWN_HASH), fullTransactions: true });
  expect(block).toEqual(create(EthService.method.getBlockByHash.output));
  const receipt = await g.eth.call(EthService.method.getTransactionReceipt, { transactionHash: hexToBytes(UNKNOWN_HASH) });
  expect(table.byRpc(EthService.method.getTransactionReceipt)?.result.encode(receipt)).toBe("null");
  const logs = await g.eth.call(
    EthService.method.getLogs,
    create(GetLogsRequestSchema, { filter: { address: [hexToBytes(nobody as Hex)], fromBlock: { kind: { case: "number", value: 0n } } } }),
  );
  expect(table.byRpc(EthService.method.getLogs)?.result.encode(logs)).toBe("[]");
});

specRule("endpoints.batch", async () => {
  const members = [
    '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}',
    '{"jsonrpc":"2.0","method":"eth_chainId"}',
    '{"jsonrpc":"2.0","id":2,"method":"eth_nope"}',
    "5",
    `{"jsonrpc":"2.0","id":3,"method":"eth_getBlockByHash","params":["${UNKNOWN_HASH}",false]}`,
  ];
  const text = `[${members.join(",")}]`;
  const expected = [
    '{"jsonrpc":"2.0","id":1,"result":"0x7a69"}',
    '{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"the method eth_nope does not exist/is not available"}}',
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: a request must be a JSON object"}}',
    '{"jsonrpc":"2.0","id":3,"result":null}',
  ];
  const overLimit = Array.from({ length: g.ng.gateway.limits.maxBatchSize + 1 }, (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"eth_chainId"}`);
  const tooMany = `[${overLimit.join(",")}]`;
  for (const send of [async (t: string) => (await g.http.post(t)).text, (t: string) => g.ws.send(t)]) {
    expect(await send(text)).toBe(`[${expected.join(",")}]`);
    expect(JSON.parse(await send("[]"))).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "invalid request: empty batch" } });
    // Each call is answered under its own id (found from outside: under id null alone, web3.js over WebSocket waited
    // for ever and ethers 5's batch provider threw, leaving every call pending).
    const refused = async () =>
      expect(JSON.parse(await send(tooMany))).toEqual(
        overLimit.map((_, i) => ({ jsonrpc: "2.0", id: i, error: { code: -32600, message: "invalid request: batch of 1001 exceeds the maximum of 1000" } })),
      );
    expect(await upstreamCalls(refused)).toBe(0);
  }
  // Only notifications: nothing to answer.
  const silent = await g.http.post('[{"jsonrpc":"2.0","method":"eth_chainId"}]');
  expect([silent.status, silent.text]).toEqual([204, ""]);
});

it("a large batch, started in slices, is answered member by member, in order", async () => {
  // A large batch starts its calls in slices (other requests' events run in between): every member is still answered,
  // in order, under its own id, whatever it is; notifications get nothing.
  const members: string[] = [];
  const expected: string[] = [];
  // 300: several slices, and two such batches stay within the test key's 1,000 requests a second.
  for (let i = 0; i < 300; i++) {
    const id = i % 2 === 0 ? String(i) : JSON.stringify(`call-${i}`);
    if (i % 10 === 3) {
      members.push(`{"jsonrpc":"2.0","id":${id},"method":"eth_nope"}`);
      expected.push(`{"jsonrpc":"2.0","id":${id},"error":{"code":-32601,"message":"the method eth_nope does not exist/is not available"}}`);
    } else if (i % 10 === 7) {
      members.push('{"jsonrpc":"2.0","method":"eth_chainId"}');
    } else if (i % 10 === 9) {
      members.push(`{"jsonrpc":"2.0","id":${id},"method":"eth_getBalance","params":["0x12"]}`);
      expected.push(`{"jsonrpc":"2.0","id":${id},"error":{"code":-32602,"message":"invalid argument 0 (address): invalid hex data \\"0x12\\": want 20 bytes, got 1"}}`);
    } else {
      members.push(`{"jsonrpc":"2.0","id":${id},"method":"eth_chainId","params":[]}`);
      expected.push(`{"jsonrpc":"2.0","id":${id},"result":"0x7a69"}`);
    }
  }
  const text = `[${members.join(",")}]`;
  expect((await g.http.post(text)).text).toBe(`[${expected.join(",")}]`);
  expect(await g.ws.send(text)).toBe(`[${expected.join(",")}]`);
});

specRule("version.path", async () => {
  expect((await g.http.post({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] })).status).toBe(200);
  for (const path of [`/v2/${g.ng.key}`, `/v4/${g.ng.key}`, `/${g.ng.key}`]) {
    const reply = await g.http.post({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }, { url: `${g.ng.url}${path}` });
    expect(reply.status, path).toBe(404);
  }
  const v3 = await wsUpgrade(g.ng.wsUrl);
  expect(v3.session).toBeDefined();
  await v3.session?.close();
  expect((await wsUpgrade(`ws://127.0.0.1:${g.ng.port}/ws/v2/${g.ng.key}`)).refusedWith).toBe(404);
});

specRule("version.policy", async () => {
  const table = createMethodTable();
  for (const service of table.services()) expect(service.file.proto.package, service.typeName).toMatch(/^nodegate\.[a-z]+\.v\d+$/);
  for (const service of [JsonRpcService]) expect(service.file.proto.package).toMatch(/\.v\d+$/);
  // The typed door answers under the versioned service name; the native door only under /v3.
  const block = await g.eth.call(EthService.method.getBlockByHash, { blockHash: hexToBytes(UNKNOWN_HASH) });
  expect(block.$typeName).toBe("nodegate.eth.v1.GetBlockByHashResponse");
  expect((await g.http.post({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }, { url: `${g.ng.url}/v1/${g.ng.key}` })).status).toBe(404);
});
