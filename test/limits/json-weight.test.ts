/**
 * A request holding more arrays and objects than parsing it may cost is refused before it is parsed, on every
 * door that reads JSON, and nothing else waits on it. Found from outside: 5 MiB of `[[[…]]]` (within the body
 * limit) took JSON.parse seconds, and every other caller waited that long.
 */
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { MAX_JSON_CONTAINERS } from "../../src/codec/json-weight.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { connectClient } from "../support/grpc-clients.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

let anvil: AnvilNode;
let recorder: ProgrammableUpstream;
let ng: TestNodegate;

// 2.5 million arrays deep, and 1.6 million side by side: each about 5 MB, under the 5 MiB body limit.
const DEEP = `${"[".repeat(2_500_000)}${"]".repeat(2_500_000)}`;
const WIDE = `[${Array(1_600_000).fill("[]").join(",")}]`;
const REFUSAL = `invalid request: the request holds more than ${MAX_JSON_CONTAINERS} JSON arrays and objects`;

beforeAll(async () => {
  anvil = await startAnvil();
  recorder = await startProgrammableUpstream(() => ({ forward: anvil.url }));
  ng = await startNodegate({ upstreamUrl: recorder.url });
}, 60_000);
afterAll(async () => {
  await ng?.close();
  await recorder?.close();
  await anvil?.stop();
});

describe("native door", () => {
  it.each([
    ["nested", DEEP],
    ["side by side", WIDE],
  ])("over HTTP: %s arrays get 413 and -32600 before parsing, and the node sees nothing", async (_label, params) => {
    const before = recorder.requests.length;
    const reply = await post(ng.rpcUrl, `{"jsonrpc":"2.0","id":7,"method":"eth_call","params":${params}}`);
    expect(reply.status).toBe(413);
    expect(reply.json).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32600, message: REFUSAL } });
    expect(recorder.requests.length).toBe(before);
    const chainId = await post(ng.rpcUrl, rpc("eth_chainId"));
    expect(chainId.json.result).toBe("0x7a69");
  });

  it("brackets inside strings are not counted: a long string of them is read as the string it is", async () => {
    const reply = await post(ng.rpcUrl, `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[],"note":"${"[{".repeat(500_000)}"}`);
    expect(reply.status).toBe(200);
    expect(reply.json.result).toBe("0x7a69");
  });

  it("over WebSocket: the message is answered -32600, and the connection goes on serving", async () => {
    const socket = new WebSocket(ng.wsUrl, { perMessageDeflate: false });
    try {
      await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
      const answers: unknown[] = [];
      socket.on("message", (data: Buffer) => answers.push(JSON.parse(data.toString("utf8"))));
      socket.send(`{"jsonrpc":"2.0","id":7,"method":"eth_call","params":${DEEP}}`);
      socket.send(JSON.stringify(rpc("eth_chainId", [], 8)));
      for (let i = 0; i < 500 && answers.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
      expect(answers).toContainEqual({ jsonrpc: "2.0", id: null, error: { code: -32600, message: REFUSAL } });
      expect(answers).toContainEqual({ jsonrpc: "2.0", id: 8, result: "0x7a69" });
    } finally {
      socket.terminate();
    }
  });
});

describe("typed door (Connect JSON)", () => {
  const connectJson = async (path: string, body: string, key = ng.key) => {
    const res = await fetch(`${ng.url}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": key }, body });
    return { status: res.status, body: (await res.json()) as { code?: string; message?: string } };
  };

  it("a method of the table: RESOURCE_EXHAUSTED before parsing", async () => {
    const reply = await connectJson(`/${EthService.typeName}/${EthService.method.blockNumber.name}`, `{"unknown":${DEEP}}`);
    expect(reply.status).toBe(429);
    expect(reply.body).toMatchObject({ code: "resource_exhausted", message: REFUSAL });
  });

  it("a route Connect itself serves (health): RESOURCE_EXHAUSTED before parsing", async () => {
    const reply = await connectJson("/grpc.health.v1.Health/Check", `{"service":"","unknown":${WIDE}}`);
    expect(reply.status).toBe(429);
    expect(reply.body).toMatchObject({ code: "resource_exhausted", message: REFUSAL });
  });

  it("JsonRpcService.Call: params_json is weighed before it is parsed", async () => {
    const reply = await connectJson("/nodegate.jsonrpc.v1.JsonRpcService/Call", JSON.stringify({ method: "eth_call", paramsJson: DEEP }));
    expect(reply.status).toBe(429);
    expect(reply.body).toMatchObject({ code: "resource_exhausted", message: REFUSAL });
  });

  it("the door goes on serving", async () => {
    const client = connectClient(ng.url, EthService, ng.key);
    expect((await client.blockNumber(create(EthService.method.blockNumber.input))).number).toBeGreaterThanOrEqual(0n);
  });
});
