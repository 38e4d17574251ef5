/**
 * A key held to its contracts is refused params that write a key twice in one object, on every door that forwards
 * the caller's params text. nodegate reads the params as JSON.parse does, keeping the last of duplicates, and checks
 * those contracts; the text goes to the node as sent, and a node whose JSON library keeps the first (some Rust, Go and
 * Java libraries do) would call the contract that was not checked. Found from outside:
 * {"to":"<other>","to":"<allowed>"} passed the contract allowlist.
 */
import { ConnectError, Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { JsonRpcService } from "../../gen/nodegate/jsonrpc/v1/jsonrpc_service_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { connectClient } from "../support/grpc-clients.js";
import { post } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const CONTRACT = "0x1111111111111111111111111111111111111111";
const OTHER = "0x2222222222222222222222222222222222222222";
const CONTRACTS_ONLY = "contract-key-000001";
const METHODS_ONLY = "methods-key-0000001";
const OPEN = "open-key-0000000001";
/** PUSH20 OTHER BALANCE ...: code that reads another account, run in the allowed contract's place. */
const CODE = `0x73${OTHER.slice(2)}315f5260205ff3`;

let anvil: AnvilNode;
let recorder: ProgrammableUpstream;
let ng: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  recorder = await startProgrammableUpstream(() => ({ forward: anvil.url }));
  ng = await startNodegate({
    upstreamUrl: recorder.url,
    keys: [
      { key: CONTRACTS_ONLY, plan: "core", allowlists: { contractAddresses: [CONTRACT] } },
      { key: METHODS_ONLY, plan: "core", allowlists: { methods: ["eth_call", "eth_getLogs"] } },
      { key: OPEN, plan: "core" },
    ],
  });
}, 60_000);
afterAll(async () => {
  await ng?.close();
  await recorder?.close();
  await anvil?.stop();
});

const url = (key: string) => `${ng.url}/v3/${key}`;
const request = (method: string, params: string, id = 1) => `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${params}}`;
const refusal = (where: string, key: string) =>
  `invalid argument ${where}: duplicate key "${key}": nodes differ on which of the two they read, so a key with a contract allowlist must send each key once`;

/** Params whose contracts JSON.parse reads as allowed, and that a node keeping the first duplicate runs elsewhere. */
const CASES: [string, string, string, string][] = [
  ["eth_call", `[{"to":"${OTHER}","to":"${CONTRACT}","data":"0x"},"latest"]`, "0 (transaction)", "to"],
  ["eth_call", `[{"t\\u006f":"${OTHER}","to":"${CONTRACT}"},"latest"]`, "0 (transaction)", "to"],
  ["eth_estimateGas", `[{"to":"${OTHER}","to":"${CONTRACT}"}]`, "0 (transaction)", "to"],
  ["eth_getLogs", `[{"address":"${OTHER}","address":"${CONTRACT}","fromBlock":"0x0"}]`, "0 (filter)", "address"],
  ["eth_call", `[{"to":"${CONTRACT}"},"latest",{"${CONTRACT}":{"code":"${CODE}","code":null}}]`, `2 (stateOverride.${CONTRACT})`, "code"],
  ["eth_call", `[{"to":"${CONTRACT}"},"latest",{"${CONTRACT}":{"code":"${CODE}"},"${CONTRACT}":{"balance":"0x1"}}]`, "2 (stateOverride)", CONTRACT],
  [
    "eth_call",
    `[{"to":"${CONTRACT}"},"latest",{"${CONTRACT}":{"movePrecompileToAddress":"${OTHER}","movePrecompileToAddress":null}}]`,
    `2 (stateOverride.${CONTRACT})`,
    "movePrecompileToAddress",
  ],
  [
    "eth_call",
    `[{"to":"${CONTRACT}","authorizationList":[{"chainId":"0x1","address":"${OTHER}","address":"${CONTRACT}","nonce":"0x0","yParity":"0x0","r":"0x1","s":"0x1"}]},"latest"]`,
    "0 (transaction.authorizationList[0])",
    "address",
  ],
];

describe("a key held to its contracts, params with a duplicate key", () => {
  it.each(CASES)("over HTTP: %s %s is refused -32602 naming the key, and the node sees nothing", async (method, params, where, key) => {
    const before = recorder.count(method);
    const reply = await post(url(CONTRACTS_ONLY), request(method, params));
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ jsonrpc: "2.0", id: 1, error: { code: -32602, message: refusal(where, key) } });
    expect(recorder.count(method)).toBe(before);
  });

  it("either order: the key's allowed contract last or first", async () => {
    const reply = await post(url(CONTRACTS_ONLY), request("eth_call", `[{"to":"${CONTRACT}","to":"${OTHER}"},"latest"]`));
    expect(reply.json.error).toEqual({ code: -32602, message: refusal("0 (transaction)", "to") });
  });

  it("in a batch, the call alone is refused", async () => {
    const before = recorder.count("eth_call");
    const reply = await post(url(CONTRACTS_ONLY), `[${request("eth_call", `[{"to":"${CONTRACT}","data":"0x"},"latest"]`, 1)},${request("eth_call", CASES[0]?.[1] as string, 2)}]`);
    expect(reply.status).toBe(200);
    expect(reply.json[0]).toEqual({ jsonrpc: "2.0", id: 1, result: "0x" });
    expect(reply.json[1].error).toEqual({ code: -32602, message: refusal("0 (transaction)", "to") });
    expect(recorder.count("eth_call")).toBe(before + 1);
  });

  it("over WebSocket, single and batch", async () => {
    const ws = new WebSocket(`${ng.wsUrl.replace(ng.key, CONTRACTS_ONLY)}`);
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    const send = (text: string) =>
      new Promise<unknown>((resolve) => {
        ws.once("message", (data: Buffer) => resolve(JSON.parse(data.toString("utf8"))));
        ws.send(text);
      });
    try {
      const before = recorder.count("eth_getLogs");
      expect(await send(request("eth_getLogs", CASES[3]?.[1] as string, 7))).toEqual({ jsonrpc: "2.0", id: 7, error: { code: -32602, message: refusal("0 (filter)", "address") } });
      expect(await send(`[${request("eth_getLogs", CASES[3]?.[1] as string, 8)}]`)).toEqual([{ jsonrpc: "2.0", id: 8, error: { code: -32602, message: refusal("0 (filter)", "address") } }]);
      expect(recorder.count("eth_getLogs")).toBe(before);
    } finally {
      ws.close();
    }
  });

  it("on the typed door's JsonRpcService.Call, which forwards params_json as written: INVALID_ARGUMENT", async () => {
    const before = recorder.count("eth_call");
    const client = connectClient(ng.url, JsonRpcService, CONTRACTS_ONLY, "connect");
    const err = await client.call({ method: "eth_call", paramsJson: CASES[0]?.[1] as string }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.InvalidArgument);
    expect(err?.rawMessage).toBe(refusal("0 (transaction)", "to"));
    expect(recorder.count("eth_call")).toBe(before);
  });

  it("params that hold each key once still pass, and a duplicate outside the params is not the params' concern", async () => {
    expect((await post(url(CONTRACTS_ONLY), request("eth_call", `[{"to":"${CONTRACT}","data":"0x"},"latest"]`))).json.result).toBe("0x");
    // The same key in sibling objects is no duplicate.
    const siblings = `[{"to":"${CONTRACT}"},"latest",{"${CONTRACT}":{"balance":"0x1","stateDiff":{}}},{"number":"0x1"}]`;
    expect((await post(url(CONTRACTS_ONLY), request("eth_call", siblings))).json.result).toBe("0x");
    // nodegate writes the envelope it sends itself: a duplicate "params" is read once, as JSON.parse reads it.
    const envelope = `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"${OTHER}"},"latest"],"params":[{"to":"${CONTRACT}"},"latest"]}`;
    expect((await post(url(CONTRACTS_ONLY), envelope)).json.result).toBe("0x");
  });

  it("keys without a contract allowlist are not scanned: their params go to the node as sent", async () => {
    for (const key of [OPEN, METHODS_ONLY]) {
      const params = CASES[0]?.[1] as string;
      const reply = await post(url(key), request("eth_call", params));
      expect(reply.json.result, key).toBe("0x");
      expect(recorder.requests.some((r) => r.method === "eth_call" && r.body.includes(params)), key).toBe(true);
    }
  });
});
