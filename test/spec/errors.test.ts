/**
 * The spec's Errors part: the error object's shape, code 3 for reverts, and
 * what nodegate chose where the spec shows nothing (HTTP statuses, the codes
 * of malformed requests, unknown methods and bad params). A real Anvil
 * behind a recorder; scripted upstreams for what a node answers badly.
 */
import { encodeErrorResult, encodeFunctionData, hexToBytes } from "viem";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { RevertErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { JsonRpcService } from "../../gen/nodegate/jsonrpc/v1/jsonrpc_service_pb.js";
import { DEFAULT_LIMITS } from "../../src/config/config.js";
import { type AnvilNode, freePort, startAnvil } from "../../src/embedded/anvil.js";
import { API_KEY_HEADER } from "../../src/grpc/typed-services.js";
import { deployProbeScenario, type ProbeScenario } from "../support/probe-scenario.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";
import { Code, type JsonRpcReply, TypedDoor, wsUpgrade } from "./harness/doors.js";
import { openSpecGateway, type SpecGateway } from "./harness/gateway.js";
import { specRule } from "./harness/spec-rule.js";

const m = EthService.method;
const ERROR_STRING = [{ type: "error", name: "Error", inputs: [{ name: "message", type: "string" }] }] as const;
const REFUSING_KEY = "refusing-key-000000001";
const BURST_KEY = "burst-key-00000000001";
/** Error(string) "boom", ABI-encoded. */
const BOOM = encodeErrorResult({ abi: ERROR_STRING, errorName: "Error", args: ["boom"] });

let anvil: AnvilNode;
let recorder: ProgrammableUpstream;
let bare: ProgrammableUpstream;
let garbage: ProgrammableUpstream;
let slow: ProgrammableUpstream;
/** What the "reverting" network's node answers every call with. */
let revertAnswer: Record<string, unknown> = {};
let reverting: ProgrammableUpstream;
let s: ProbeScenario;
let g: SpecGateway;

beforeAll(async () => {
  anvil = await startAnvil();
  s = await deployProbeScenario(anvil.url);
  [recorder, bare, garbage, slow, reverting] = await Promise.all([
    startProgrammableUpstream(() => ({ forward: anvil.url })),
    // A node that reverts with only "execution reverted" and the data.
    startProgrammableUpstream(() => ({ error: { code: 3, message: "execution reverted", data: BOOM } })),
    startProgrammableUpstream(() => ({ raw: "<html>bad gateway</html>", status: 200 })),
    startProgrammableUpstream(() => ({ delayMs: 3000, then: { result: "0x1" } })),
    startProgrammableUpstream(() => ({ error: revertAnswer as { code: number; message: string } })),
  ]);
  const nobody = `http://127.0.0.1:${await freePort()}`;
  g = await openSpecGateway({
    upstreamUrl: recorder.url,
    keys: [
      "test-key-0123456789abcdef",
      { key: REFUSING_KEY, plan: "growth", allowlists: { methods: ["eth_chainId"] } },
      { key: BURST_KEY, plan: "core", rateLimit: { requestsPerSecond: 2, requestsPerDay: 0 } },
    ],
    networks: [
      { name: "ethereum", family: "eth", upstreams: [{ label: "anvil", url: recorder.url }] },
      { name: "bare", family: "eth", upstreams: [{ label: "bare", url: bare.url }] },
      { name: "garbage", family: "eth", upstreams: [{ label: "garbage", url: garbage.url }] },
      { name: "down", family: "eth", upstreams: [{ label: "down", url: nobody }] },
      { name: "slow", family: "eth", upstreams: [{ label: "slow", url: slow.url }] },
      { name: "reverting", family: "eth", upstreams: [{ label: "reverting", url: reverting.url }] },
    ],
    config: { upstreamTimeoutMs: 500, limits: { ...DEFAULT_LIMITS, maxBodyBytes: 4096 } },
  });
});

afterAll(async () => {
  await g?.close();
  await Promise.all([recorder, bare, garbage, slow, reverting].map((u) => u?.close()));
  await anvil?.stop();
});

const failCall = () => encodeFunctionData({ abi: s.probe.abi, functionName: "fail", args: ["boom"] });

/** Asserts the spec's error member: integer code, string message, optional hex data. */
function expectErrorShape(reply: JsonRpcReply, id: unknown): void {
  expect(Object.keys(reply).sort()).toEqual(["error", "id", "jsonrpc"]);
  expect(reply.id).toEqual(id);
  expect(Number.isInteger(reply.error?.code)).toBe(true);
  expect(typeof reply.error?.message).toBe("string");
  if (reply.error?.data !== undefined) expect(reply.error.data).toMatch(/^0x(?:[0-9a-f]{2})*$/);
}

specRule("errors.shape", async () => {
  const revert = JSON.stringify({ jsonrpc: "2.0", id: "abc", method: "eth_call", params: [{ to: s.address, data: failCall() }, "latest"] });
  const badParams = JSON.stringify({ jsonrpc: "2.0", id: 77, method: "eth_getBlockByHash", params: ["0x12", false] });
  for (const [text, id] of [
    [revert, "abc"],
    [badParams, 77],
  ] as const) {
    const overHttp = await g.http.post(text);
    expectErrorShape(overHttp.json, id);
    expect(await g.ws.send(text)).toBe(overHttp.text);
  }
  expect((await g.http.post(revert)).json.error.data).toBe(BOOM);
  // Typed: the same error object rides in the status.
  const typed = await g.eth.fail(m.call, { transaction: { to: hexToBytes(s.address), data: hexToBytes(failCall()) } });
  expect(typed.error).toEqual({ code: 3, message: "execution reverted: boom", data: JSON.stringify(BOOM) });
});

specRule("errors.revert", async () => {
  const params = [{ from: s.sender, to: s.address, data: failCall() }, "latest"];
  for (const door of [g.http, g.ws]) {
    for (const method of ["eth_call", "eth_estimateGas"]) {
      expect((await door.call(method, params)).error, method).toEqual({ code: 3, message: "execution reverted: boom", data: BOOM });
    }
  }
  const typed = await g.eth.fail(m.call, { transaction: { to: hexToBytes(s.address), data: hexToBytes(failCall()) } });
  expect(typed.code).toBe(Code.FailedPrecondition);
  const [detail] = typed.connectError.findDetails(RevertErrorSchema);
  expect(detail?.reason).toBe("boom");
  expect(`0x${Buffer.from(detail?.data ?? []).toString("hex")}`).toBe(BOOM);

  // A node that gives only "execution reverted": nodegate decodes the reason into the message.
  const plain = g.on("bare");
  for (const door of [plain.http, plain.ws]) {
    expect((await door.call("eth_call", params)).error).toEqual({ code: 3, message: "execution reverted: boom", data: BOOM });
  }
  const decoded = await plain.eth.fail(m.call, { transaction: { to: hexToBytes(s.address) } });
  expect(decoded.error?.message).toBe("execution reverted: boom");
  expect(decoded.connectError.findDetails(RevertErrorSchema)[0]?.reason).toBe("boom");
});

it("every client's way of saying reverted reaches typed callers as a revert, with its bytes when known, and native callers in the spec's form", async () => {
  // Found from outside: Besu's -32000 and Nethermind's -32015 reverts were INTERNAL/UNKNOWN without a RevertError,
  // and a code 3 without hex data got an empty RevertError ("reverted with no data"). Then, from outside too: the
  // native door passed them on as the node wrote them, where the spec says a revert is code 3 with the bytes as hex.
  const BOOM_HEX = BOOM.slice(2);
  const specForm = { code: 3, message: "execution reverted: boom", data: BOOM };
  const cases: { node: string; error: Record<string, unknown>; code: Code; revert: string | undefined; native?: Record<string, unknown> }[] = [
    { node: "Besu", error: { code: -32000, message: "Execution reverted", data: BOOM }, code: Code.FailedPrecondition, revert: BOOM, native: specForm },
    { node: "Nethermind", error: { code: -32015, message: "VM execution error.", data: `Reverted ${BOOM}` }, code: Code.FailedPrecondition, revert: BOOM, native: specForm },
    // Bytes that encode no reason: the message says only that it reverted.
    { node: "Besu, a custom error", error: { code: -32000, message: "Execution reverted", data: "0xdeadbeef" }, code: Code.FailedPrecondition, revert: "0xdeadbeef", native: { code: 3, message: "execution reverted", data: "0xdeadbeef" } },
    {
      node: "Hardhat",
      error: { code: -32603, message: "Error: VM Exception while processing transaction: reverted with reason string 'boom'", data: { message: "x", data: BOOM } },
      code: Code.FailedPrecondition,
      revert: BOOM,
      native: specForm,
    },
    { node: "Ganache 7", error: { code: -32000, message: "VM Exception while processing transaction: revert boom", data: { hash: null, result: BOOM, reason: "boom" } }, code: Code.FailedPrecondition, revert: BOOM, native: specForm },
    // As geth, and so the provider, writes a bare revert(): passed on as it came.
    { node: "geth, revert() without data", error: { code: -32000, message: "execution reverted" }, code: Code.FailedPrecondition, revert: "0x" },
    { node: "code 3 with the bytes nested", error: { code: 3, message: "execution reverted: boom", data: { data: BOOM } }, code: Code.FailedPrecondition, revert: BOOM },
    { node: "code 3 without data", error: { code: 3, message: "execution reverted" }, code: Code.FailedPrecondition, revert: undefined },
    { node: "not a revert", error: { code: -32000, message: "insufficient funds for gas * price + value", data: `0x${BOOM_HEX}` }, code: Code.FailedPrecondition, revert: undefined },
    // Found from outside: Ganache's other VM exceptions are not reverts.
    { node: "Ganache, invalid opcode", error: { code: -32000, message: "VM Exception while processing transaction: invalid opcode", data: { result: "0x" } }, code: Code.Internal, revert: undefined },
  ];
  const net = g.on("reverting");
  for (const c of cases) {
    revertAnswer = c.error;
    // The native door passes the node's error on as it came, unless it is a revert with bytes in another client's form.
    expect((await net.http.call("eth_call", [{ to: s.address }, "latest"])).error, c.node).toEqual(c.native ?? c.error);
    expect((await net.http.call("eth_estimateGas", [{ to: s.address }])).error, c.node).toEqual(c.native ?? c.error);
    const typed = await net.eth.fail(m.call, { transaction: { to: hexToBytes(s.address) } });
    expect(typed.code, c.node).toBe(c.code);
    const [detail] = typed.connectError.findDetails(RevertErrorSchema);
    expect(detail === undefined ? undefined : `0x${Buffer.from(detail.data).toString("hex")}`, c.node).toBe(c.revert);
    if (c.revert === BOOM) expect(detail?.reason, c.node).toBe("boom");
  }
});

it("what Anvil answers -32000 for reaches typed callers as what its message means: an unknown block or filter is NOT_FOUND", async () => {
  // Read by its code alone, -32000 was INTERNAL: a typed caller could not tell a block the node does not know
  // (a reorged-out hash) from a server fault.
  const unknownHash = `0x${"11".repeat(32)}` as const;
  expect((await g.http.call("eth_getLogs", [{ blockHash: unknownHash }])).error).toEqual({ code: -32000, message: "unknown block" });
  const logs = await g.eth.fail(m.getLogs, { filter: { blockHash: hexToBytes(unknownHash) } });
  expect([logs.code, logs.error]).toEqual([Code.NotFound, { code: -32000, message: "unknown block" }]);
  const generic = new TypedDoor(g.ng, JsonRpcService, { [API_KEY_HEADER]: g.ng.key });
  try {
    expect((await g.http.call("eth_getFilterChanges", ["0x1234"])).error).toEqual({ code: -32000, message: "filter not found" });
    const filter = await generic.fail(JsonRpcService.method.call, { method: "eth_getFilterChanges", paramsJson: '["0x1234"]' });
    expect([filter.code, filter.error]).toEqual([Code.NotFound, { code: -32000, message: "filter not found" }]);
  } finally {
    generic.close();
  }
});

specRule("errors.http-status", async () => {
  const chainId = { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] };
  const at = (path: string) => ({ url: `${g.ng.url}${path}` });
  const statuses: [string, Promise<{ status: number }>, number][] = [
    ["a node's error", g.http.post({ jsonrpc: "2.0", id: 1, method: "eth_call", params: [{ to: s.address, data: failCall() }, "latest"] }), 200],
    ["only notifications", g.http.post({ jsonrpc: "2.0", method: "eth_chainId", params: [] }), 204],
    ["no key", g.http.post(chainId, at("/v3/")), 401],
    ["an unknown key", g.http.post(chainId, at("/v3/not-a-key")), 401],
    ["a method outside the key's allowlist", g.http.post({ ...chainId, method: "eth_blockNumber" }, at(`/v3/${REFUSING_KEY}`)), 403],
    ["an unknown path", g.http.post(chainId, at(`/v9/${g.ng.key}`)), 404],
    ["GET", g.http.post(undefined, { method: "GET" }), 405],
    ["a body over the limit", g.http.post({ ...chainId, params: ["x".repeat(5000)] }), 413],
    ["text/plain", g.http.post(JSON.stringify(chainId), { headers: { "content-type": "text/plain" } }), 415],
    // Never fits (a batch of 2 costs 3 against 2 per second): each call gets -32005 in a 200, which clients do not resend.
    ["a batch costing more than the key's whole rate limit", g.http.post([chainId, chainId], at(`/v3/${BURST_KEY}`)), 200],
    ["a node that answers garbage", g.on("garbage").http.post(chainId), 502],
    ["a node that cannot be reached", g.on("down").http.post(chainId), 503],
    ["a node that does not answer in time", g.on("slow").http.post(chainId), 504],
  ];
  for (const [what, reply, status] of statuses) expect((await reply).status, what).toBe(status);
  // Ten calls at once against a limit of two: some are refused, each told when to retry.
  const burst = await Promise.all(Array.from({ length: 10 }, () => g.http.post(chainId, at(`/v3/${BURST_KEY}`))));
  const limited = burst.find((r) => r.status === 429);
  expect(limited, "the key's rate limit").toBeDefined();
  expect(Number(limited?.headers.get("retry-after"))).toBeGreaterThan(0);
  // Notifications refused for the rate limit are told so (429, one error under id null), not answered 204 as if run.
  const notifications = await Promise.all(Array.from({ length: 10 }, () => g.http.post({ jsonrpc: "2.0", method: "eth_chainId", params: [] }, at(`/v3/${BURST_KEY}`))));
  const refusedNotification = notifications.find((r) => r.status === 429);
  expect(refusedNotification, "a notification over the key's rate limit").toBeDefined();
  expect(refusedNotification?.json).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32005 } });
  expect(Number(refusedNotification?.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(notifications.filter((r) => r.status !== 429).map((r) => r.status)).toEqual(notifications.filter((r) => r.status !== 429).map(() => 204));
  expect((await g.on("down").http.post(chainId)).json.error.code).toBe(-32050);
  expect((await g.on("slow").http.post(chainId)).json.error.code).toBe(-32051);
  expect((await g.on("garbage").http.post(chainId)).json.error.code).toBe(-32052);

  // A WebSocket upgrade is refused with the status the HTTP path gives.
  const port = g.ng.port;
  expect((await wsUpgrade(`ws://127.0.0.1:${port}/ws/v3/`)).refusedWith).toBe(401);
  expect((await wsUpgrade(`ws://127.0.0.1:${port}/ws/v3/not-a-key`)).refusedWith).toBe(401);
  expect((await wsUpgrade(`ws://127.0.0.1:${port}/ws/v9/${g.ng.key}`)).refusedWith).toBe(404);
  // Once open, errors travel as JSON-RPC errors on the connection.
  expect((await g.ws.call("eth_call", [{ to: s.address, data: failCall() }, "latest"])).error?.code).toBe(3);
});

specRule("errors.other-codes", async () => {
  const before = recorder.requests.length;
  const cases: [string, string, JsonRpcReply][] = [
    ["parse error", "{", { jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } }],
    [
      "params neither array nor object",
      '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":"x"}',
      { jsonrpc: "2.0", id: 1, error: { code: -32600, message: "invalid request: params must be an array or an object" } },
    ],
    ["not an object", "42", { jsonrpc: "2.0", id: null, error: { code: -32600, message: "invalid request: a request must be a JSON object" } }],
    [
      "unknown method",
      '{"jsonrpc":"2.0","id":2,"method":"eth_mine","params":[]}',
      { jsonrpc: "2.0", id: 2, error: { code: -32601, message: "the method eth_mine does not exist/is not available" } },
    ],
    [
      "bad params",
      '{"jsonrpc":"2.0","id":3,"method":"eth_getBlockByNumber","params":["0xzz",false]}',
      { jsonrpc: "2.0", id: 3, error: { code: -32602, message: 'invalid argument 0 (block): invalid hex quantity "0xzz": not a hex number' } },
    ],
    [
      "a bad field deep in a param",
      '{"jsonrpc":"2.0","id":4,"method":"eth_call","params":[{"to":"0x1234"},"latest"]}',
      { jsonrpc: "2.0", id: 4, error: { code: -32602, message: 'invalid argument 0 (transaction.to): invalid hex data "0x1234": want 20 bytes, got 2' } },
    ],
  ];
  for (const [what, text, expected] of cases) expect((await g.http.post(text)).json, what).toEqual(expected);
  expect(recorder.requests.length).toBe(before);

  const badHash = await g.eth.fail(m.getBlockByHash, { blockHash: new Uint8Array(5) });
  expect(badHash.code).toBe(Code.InvalidArgument);
  expect(badHash.error?.code).toBe(-32602);
  expect(badHash.error?.message).toMatch(/blockHash/);
  const generic = new TypedDoor(g.ng, JsonRpcService, { [API_KEY_HEADER]: g.ng.key });
  try {
    const unknown = await generic.fail(JsonRpcService.method.call, { method: "eth_mine", paramsJson: "[]" });
    expect(unknown.code).toBe(Code.Unimplemented);
    expect(unknown.error).toEqual({ code: -32601, message: "the method eth_mine does not exist/is not available" });
  } finally {
    generic.close();
  }
  expect(recorder.requests.length).toBe(before);
});
