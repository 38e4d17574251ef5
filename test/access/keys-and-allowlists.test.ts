/**
 * Keys, secrets and allowlists on both front doors, with the provider's
 * outcomes: 401 texts, 403 + -32002, and the matching gRPC statuses carrying
 * the same JSON-RPC code and message in their details.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { DEFAULT_PASS_THROUGH } from "../../src/config/config.js";
import { JsonRpcErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { connectClient } from "../support/grpc-clients.js";
import { basic, post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { startProgrammableUpstream } from "../support/programmable-upstream.js";
import { openWsCaller } from "../support/ws-calls.js";

const OPEN = "open-key-0000000001";
const SECRET_KEY = "secret-key-00000001";
const SECRET = "s3cr3t-value";
const METHODS_ONLY = "methods-key-0000001";
const CONTRACT = "0x1111111111111111111111111111111111111111";
const OTHER = "0x2222222222222222222222222222222222222222";
const CONTRACTS_ONLY = "contract-key-000001";
const ORIGIN_AND_AGENT = "origin-agent-key-01";
/** A contract allowlist written with a checksummed address, as users copy them from explorers. */
const CHECKSUMMED = "0x000000000000000000000000000000000000dEaD";
const CHECKSUMMED_ONLY = "checksum-key-000001";

let anvil: AnvilNode;
let ng: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  ng = await startNodegate({
    upstreamUrl: anvil.url,
    keys: [
      { key: OPEN, plan: "core" },
      { key: SECRET_KEY, plan: "growth", secret: SECRET },
      { key: METHODS_ONLY, plan: "core", allowlists: { methods: ["eth_chainId", "eth_getBlock*"] } },
      { key: CONTRACTS_ONLY, plan: "core", allowlists: { contractAddresses: [CONTRACT] } },
      { key: CHECKSUMMED_ONLY, plan: "core", allowlists: { contractAddresses: [CHECKSUMMED] } },
      { key: ORIGIN_AND_AGENT, plan: "core", allowlists: { origins: ["*.example.com", "https://app.test"], userAgents: ["good-agent"] } },
    ],
    // eth_getAccount reads any account's state; a configured pass-through method nodegate does not know.
    config: { passThrough: { methods: [...DEFAULT_PASS_THROUGH, "eth_getAccount"], allowWrites: false } },
  });
});
afterAll(async () => {
  await ng?.close();
  await anvil?.stop();
});

function url(key?: string): string {
  return key === undefined ? `${ng.url}/v3/` : `${ng.url}/v3/${key}`;
}

async function typedError(key: string | undefined, headers: Record<string, string> = {}, call = "chainId"): Promise<ConnectError> {
  const client = connectClient(ng.url, EthService, key ?? "", "grpc");
  try {
    const fn = (client as unknown as Record<string, (r: object, o: object) => Promise<unknown>>)[call] as (r: object, o: object) => Promise<unknown>;
    await fn({ address: Buffer.from(OTHER.slice(2), "hex") }, { headers });
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("expected the typed call to fail");
}

function detail(err: ConnectError) {
  const [d] = err.findDetails(JsonRpcErrorSchema);
  return d ? { code: Number(d.code), message: d.message } : undefined;
}

describe("API keys", () => {
  it("a missing key: 401 'project id required in the url' / UNAUTHENTICATED naming the x-api-key metadata", async () => {
    const native = await post(url(), rpc("eth_chainId"));
    expect(native.status).toBe(401);
    expect(native.json.error.message).toBe("project id required in the url");
    const typed = await typedError(undefined);
    expect(typed.code).toBe(Code.Unauthenticated);
    // Found from outside: the typed door pointed gRPC callers at a URL they do not have.
    expect(detail(typed)).toEqual({ code: native.json.error.code, message: "project id required in the x-api-key metadata" });
  });

  it("an unknown key: 401 'invalid project id' / UNAUTHENTICATED", async () => {
    const native = await post(url("not-a-key-at-all"), rpc("eth_chainId"));
    expect(native.status).toBe(401);
    expect(native.json.error.message).toBe("invalid project id");
    const typed = await typedError("not-a-key-at-all");
    expect(typed.code).toBe(Code.Unauthenticated);
    expect(detail(typed)?.message).toBe("invalid project id");
  });

  it("a known key answers on both doors", async () => {
    const native = await post(url(OPEN), rpc("eth_chainId"));
    expect(native.json.result).toBe("0x7a69");
    const typed = await connectClient(ng.url, EthService, OPEN, "grpc").chainId({});
    expect(typed.chainId).toBe(31337n);
  });
});

describe("API key secret (HTTP Basic, empty user)", () => {
  it("is required when the key has one", async () => {
    const missing = await post(url(SECRET_KEY), rpc("eth_chainId"));
    expect(missing.status).toBe(401);
    expect(missing.json.error.message).toBe("invalid project id or project secret");
    const wrong = await post(url(SECRET_KEY), rpc("eth_chainId"), basic("wrong"));
    expect(wrong.status).toBe(401);
    const typed = await typedError(SECRET_KEY, basic("wrong"));
    expect(typed.code).toBe(Code.Unauthenticated);
    expect(detail(typed)?.message).toBe("invalid project id or project secret");
  });

  it("lets the right secret through on both doors", async () => {
    const ok = await post(url(SECRET_KEY), rpc("eth_chainId"), basic(SECRET));
    expect(ok.json.result).toBe("0x7a69");
    const typed = await connectClient(ng.url, EthService, SECRET_KEY, "grpc").chainId({}, { headers: basic(SECRET) });
    expect(typed.chainId).toBe(31337n);
  });
});

describe("allowlists", () => {
  it("methods: listed (and prefix-matched) methods pass, others get 403 -32002 / PERMISSION_DENIED", async () => {
    expect((await post(url(METHODS_ONLY), rpc("eth_chainId"))).json.result).toBe("0x7a69");
    expect((await post(url(METHODS_ONLY), rpc("eth_getBlockByNumber", ["latest", false]))).json.result.number).toBe("0x0");
    const rejected = await post(url(METHODS_ONLY), rpc("eth_getBalance", [OTHER, "latest"]));
    expect(rejected.status).toBe(403);
    expect(rejected.json.error).toEqual({ code: -32002, message: "rejected due to project ID settings" });
    const typed = await typedError(METHODS_ONLY, {}, "getBalance");
    expect(typed.code).toBe(Code.PermissionDenied);
    expect(detail(typed)).toEqual({ code: -32002, message: "rejected due to project ID settings" });
  });

  it("a rejected member of a batch is rejected alone", async () => {
    const res = await post(url(METHODS_ONLY), [rpc("eth_chainId", [], 1), rpc("eth_blockNumber", [], 2)]);
    expect(res.status).toBe(200);
    expect(res.json[0].result).toBe("0x7a69");
    expect(res.json[1].error.code).toBe(-32002);
  });

  it("contract addresses apply to methods that take an address, and only to them", async () => {
    expect((await post(url(CONTRACTS_ONLY), rpc("eth_getBalance", [CONTRACT, "latest"]))).json.result).toBe("0x0");
    expect((await post(url(CONTRACTS_ONLY), rpc("eth_getBalance", [OTHER, "latest"]))).json.error.code).toBe(-32002);
    expect((await post(url(CONTRACTS_ONLY), rpc("eth_call", [{ to: CONTRACT, data: "0x" }, "latest"]))).json.result).toBe("0x");
    expect((await post(url(CONTRACTS_ONLY), rpc("eth_call", [{ to: OTHER }, "latest"]))).json.error.code).toBe(-32002);
    expect((await post(url(CONTRACTS_ONLY), rpc("eth_getLogs", [{ address: [CONTRACT, OTHER] }]))).json.error.code).toBe(-32002);
    expect((await post(url(CONTRACTS_ONLY), rpc("eth_getLogs", [{ address: CONTRACT }]))).json.result).toEqual([]);
    // A method without an address param is not restricted by this list.
    expect((await post(url(CONTRACTS_ONLY), rpc("eth_chainId"))).json.result).toBe("0x7a69");
    const typed = await typedError(CONTRACTS_ONLY, {}, "getBalance");
    expect(typed.code).toBe(Code.PermissionDenied);
  });

  it("a contract allowlist entry in checksummed case matches the address in any case", async () => {
    // Found by a mutation audit: every test address was lower case, so comparing as written passed.
    for (const address of [CHECKSUMMED.toLowerCase(), CHECKSUMMED, `0x${CHECKSUMMED.slice(2).toUpperCase()}`]) {
      expect((await post(url(CHECKSUMMED_ONLY), rpc("eth_getBalance", [address, "latest"]))).json.result, address).toBe("0x0");
    }
    expect((await post(url(CHECKSUMMED_ONLY), rpc("eth_getBalance", [OTHER, "latest"]))).json.error.code).toBe(-32002);
  });

  it("native eth_subscribe is held to the key's allowlists: its method list, and the addresses of a logs filter", async () => {
    // Found by a mutation audit: dropping the check on the native WebSocket passed every test.
    const subscribe = async (key: string, params: unknown[]) => {
      const ws = await openWsCaller(`${ng.wsUrl.replace(ng.key, key)}`);
      try {
        return await ws.call("eth_subscribe", params);
      } finally {
        await ws.close();
      }
    };
    expect((await subscribe(METHODS_ONLY, ["newHeads"])).error).toEqual({ code: -32002, message: "rejected due to project ID settings" });
    expect((await subscribe(CONTRACTS_ONLY, ["logs", { address: OTHER }])).error).toEqual({ code: -32002, message: "rejected due to project ID settings" });
    expect((await subscribe(CONTRACTS_ONLY, ["logs", { address: CONTRACT }])).result).toMatch(/^0x[0-9a-f]+$/);
  });

  it("contract addresses cover what a call overrides, and calls nodegate cannot read are refused", async () => {
    // Found from outside: a state override ran any code, or named any account, and eth_simulateV1 and
    // eth_createAccessList ran calls against any contract, all with a key held to one contract.
    const call = (overrides: Record<string, unknown>) => post(url(CONTRACTS_ONLY), rpc("eth_call", [{ to: CONTRACT, data: "0x" }, "latest", overrides]));
    expect((await call({ [CONTRACT]: { balance: "0x1" } })).json.result).toBe("0x");
    expect((await call({ [OTHER]: { balance: "0x1" } })).json.error.code).toBe(-32002);
    // PUSH20 OTHER BALANCE ... : the allowed contract's code replaced by code that reads another account.
    expect((await call({ [CONTRACT]: { code: `0x73${OTHER.slice(2)}315f5260205ff3` } })).json.error.code).toBe(-32002);
    expect((await call({ [CONTRACT]: { movePrecompileToAddress: OTHER } })).json.error.code).toBe(-32002);
    // geth reads keys case-insensitively: "TO" after "to" would call OTHER there.
    const upper = await post(url(CONTRACTS_ONLY), `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"${CONTRACT}","TO":"${OTHER}"},"latest"]}`);
    expect(upper.json.error.code).toBe(-32002);
    // Go folds "ſ" to "s": geth would read "addreſſ" as address. Keys nodegate does not model are refused to such a key.
    for (const extra of ["Address", "addre\u017f\u017f"]) {
      const logs = await post(url(CONTRACTS_ONLY), `{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"address":"${CONTRACT}","${extra}":"${OTHER}"}]}`);
      expect(logs.json.error.code).toBe(-32002);
    }
    // An EIP-7702 authorization names the contract whose code runs.
    const delegated = rpc("eth_call", [{ to: CONTRACT, authorizationList: [{ chainId: "0x1", address: OTHER, nonce: "0x0", yParity: "0x0", r: "0x1", s: "0x1" }] }, "latest"]);
    expect((await post(url(CONTRACTS_ONLY), delegated)).json.error.code).toBe(-32002);
    // ... also when the other contract hides in a key of the authorization nodegate does not model.
    const hidden = rpc("eth_call", [{ to: CONTRACT, authorizationList: [{ chainId: "0x1", address: CONTRACT, Address: OTHER, nonce: "0x0", yParity: "0x0", r: "0x1", s: "0x1" }] }, "latest"]);
    expect((await post(url(CONTRACTS_ONLY), hidden)).json.error.code).toBe(-32002);
    const estimate = await post(url(CONTRACTS_ONLY), rpc("eth_estimateGas", [{ to: CONTRACT }, "latest", { [OTHER]: { nonce: "0x1" } }]));
    expect(estimate.json.error.code).toBe(-32002);
    expect((await post(url(CONTRACTS_ONLY), rpc("eth_createAccessList", [{ to: OTHER }, "latest"]))).json.error.code).toBe(-32002);
    const simulate = rpc("eth_simulateV1", [{ blockStateCalls: [{ calls: [{ to: OTHER }] }] }, "latest"]);
    expect((await post(url(CONTRACTS_ONLY), simulate)).json.error.code).toBe(-32002);
    // Nor methods nodegate does not know to be free of addresses; those that are pass.
    expect((await post(url(CONTRACTS_ONLY), rpc("eth_getAccount", [OTHER, "latest"]))).json.error.code).toBe(-32002);
    expect((await post(url(CONTRACTS_ONLY), rpc("web3_clientVersion"))).json.result).toMatch(/anvil/i);
    expect((await post(url(CONTRACTS_ONLY), rpc("eth_coinbase"))).json.result).toMatch(/^0x[0-9a-f]{40}$/);
    // A key without the list runs them.
    expect((await post(url(OPEN), rpc("eth_createAccessList", [{ to: OTHER }, "latest"]))).json.result).toHaveProperty("accessList");
    // The typed door reads the same overrides.
    const typed = connectClient(ng.url, EthService, CONTRACTS_ONLY, "connect");
    const refused = await typed
      .call({
        transaction: { to: Buffer.from(CONTRACT.slice(2), "hex") },
        stateOverride: { accounts: [{ address: Buffer.from(OTHER.slice(2), "hex"), override: {} }] },
      })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(refused?.code).toBe(Code.PermissionDenied);
  });

  it("origins and user agents are ANDed; entries within a type are ORed", async () => {
    const both = { origin: "https://dapp.example.com", "user-agent": "good-agent/1.0" };
    expect((await post(url(ORIGIN_AND_AGENT), rpc("eth_chainId"), both)).json.result).toBe("0x7a69");
    expect((await post(url(ORIGIN_AND_AGENT), rpc("eth_chainId"), { ...both, origin: "https://app.test" })).json.result).toBe("0x7a69");
    const badOrigin = await post(url(ORIGIN_AND_AGENT), rpc("eth_chainId"), { ...both, origin: "https://evil.org" });
    expect(badOrigin.status).toBe(403);
    expect(badOrigin.json.error.code).toBe(-32002);
    const badAgent = await post(url(ORIGIN_AND_AGENT), rpc("eth_chainId"), { ...both, "user-agent": "curl/8" });
    expect(badAgent.status).toBe(403);
    const wrongScheme = await post(url(ORIGIN_AND_AGENT), rpc("eth_chainId"), { ...both, origin: "http://app.test" });
    expect(wrongScheme.status).toBe(403);
    // Origin and user agent belong to the request, not a call: a batch from a refused origin is refused whole, one error per id.
    const badOriginBatch = await post(url(ORIGIN_AND_AGENT), [rpc("eth_chainId", [], 1), rpc("eth_chainId", [], 2)], { ...both, origin: "https://evil.org" });
    expect(badOriginBatch.status).toBe(403);
    expect(badOriginBatch.json.map((a: { id: number; error: { code: number } }) => [a.id, a.error.code])).toEqual([[1, -32002], [2, -32002]]);
    const typed = await typedError(ORIGIN_AND_AGENT, { origin: "https://evil.org", "user-agent": "good-agent" });
    expect(typed.code).toBe(Code.PermissionDenied);
  });
});

describe("a key held to its contracts, on a Starknet network", () => {
  it("may call the Starknet methods that name no contract, and is refused those that do", async () => {
    // Found from outside: starknet_chainId, starknet_blockNumber and the like were refused to such a key (only
    // Ethereum's address-free methods were listed), where the README says methods that name no account pass.
    const starknet = await startProgrammableUpstream(() => ({ result: "0x534e5f5345504f4c4941" }));
    const both = await startNodegate({
      upstreamUrl: anvil.url,
      keys: [{ key: CONTRACTS_ONLY, plan: "core", allowlists: { contractAddresses: [CONTRACT] } }],
      networks: [
        { name: "ethereum", family: "eth", upstreams: [{ label: "anvil", url: anvil.url }] },
        { name: "starknet", family: "starknet", upstreams: [{ label: "fixture", url: starknet.url }] },
      ],
    });
    try {
      const call = (method: string, params: unknown[] = []) => post(`${both.url}/starknet/v3/${CONTRACTS_ONLY}`, rpc(method, params));
      for (const method of ["starknet_chainId", "starknet_blockNumber", "starknet_getTransactionReceipt", "starknet_getBlockWithTxHashes"]) {
        expect((await call(method)).json, method).toEqual({ jsonrpc: "2.0", id: 1, result: "0x534e5f5345504f4c4941" });
      }
      // These name a contract (or, for a write, an account, which is a contract on Starknet) that nodegate does not read.
      for (const method of ["starknet_call", "starknet_getStorageAt", "starknet_getEvents", "starknet_getNonce", "starknet_estimateFee"]) {
        expect((await call(method)).json.error?.code, method).toBe(-32002);
      }
    } finally {
      await both.close();
      await starknet.close();
    }
  });
});
