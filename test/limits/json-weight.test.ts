/**
 * A request holding more arrays and objects than parsing it may cost is refused before it is parsed, on every
 * door that reads JSON, and nothing else waits on it. Found from outside: 5 MiB of `[[[…]]]` (within the body
 * limit) took JSON.parse seconds, and every other caller waited that long.
 */
import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { ServerReflection, ServerReflectionRequestSchema } from "../../gen/grpc/reflection/v1/reflection_pb.js";
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

/** One length-prefixed message: flag byte, big-endian length, the bytes. */
function envelope(message: Buffer, compressed = false): Buffer {
  const head = Buffer.alloc(5);
  head[0] = compressed ? 1 : 0;
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

/** A raw gRPC call over HTTP/2: its status, from the trailers or a trailers-only head. */
async function grpcCall(url: string, path: string, headers: Record<string, string>, body: Buffer): Promise<{ status?: string; message?: string }> {
  const session = http2.connect(url);
  try {
    return await new Promise((resolve, reject) => {
      const stream = session.request({ ":method": "POST", ":path": path, te: "trailers", ...headers });
      let head: http2.IncomingHttpHeaders = {};
      stream.on("response", (h) => (head = h));
      stream.on("trailers", (t) => (head = { ...head, ...t }));
      stream.on("error", reject);
      stream.resume();
      stream.on("close", () => resolve({ status: head["grpc-status"] as string | undefined, message: head["grpc-message"] as string | undefined }));
      stream.end(body);
    });
  } finally {
    session.close();
  }
}

describe("typed door (JSON in length-prefixed messages: gRPC, gRPC-Web and Connect streams)", () => {
  const blockNumberPath = `/${EthService.typeName}/${EthService.method.blockNumber.name}`;

  it("gRPC with the JSON codec: RESOURCE_EXHAUSTED before parsing, and the node sees nothing", async () => {
    const before = recorder.requests.length;
    const reply = await grpcCall(ng.url, blockNumberPath, { "content-type": "application/grpc+json", "x-api-key": ng.key }, envelope(Buffer.from(`{"unknown":${DEEP}}`)));
    expect(reply).toEqual({ status: "8", message: REFUSAL });
    expect(recorder.requests.length).toBe(before);
  });

  it("a compressed message is weighed once inflated", async () => {
    const compressed = gzipSync(Buffer.from(`{"unknown":${WIDE}}`));
    expect(compressed.length).toBeLessThan(100_000); // small on the wire: only its inflated size tells
    const reply = await grpcCall(ng.url, blockNumberPath, { "content-type": "application/grpc+json", "grpc-encoding": "gzip", "x-api-key": ng.key }, envelope(compressed, true));
    expect(reply).toEqual({ status: "8", message: REFUSAL });
  });

  it("a compressed Connect POST (left to Connect's handler) is weighed once inflated", async () => {
    const before = recorder.requests.length;
    const res = await fetch(`${ng.url}${blockNumberPath}`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip", "x-api-key": ng.key },
      body: gzipSync(Buffer.from(`{"unknown":${WIDE}}`)),
    });
    expect(await res.json()).toMatchObject({ code: "resource_exhausted", message: REFUSAL });
    expect(recorder.requests.length).toBe(before);
  });

  it("a unary call's second message is left to Connect, which refuses it, unread here: one body of many compressed messages is not inflated message by message (found from outside, h74)", async () => {
    const second = envelope(gzipSync(Buffer.from(`{"unknown":${WIDE}}`)), true);
    const reply = await grpcCall(ng.url, blockNumberPath, { "content-type": "application/grpc+json", "grpc-encoding": "gzip", "x-api-key": ng.key }, Buffer.concat([envelope(Buffer.from("{}")), second]));
    expect(reply.status).toBe("12");
    expect(reply.message).toContain("extra input message");
  });

  it("a bidi stream with the JSON codec (reflection) is answered as each message comes, before the client closes its side (found from outside, h74)", async () => {
    const client = createClient(ServerReflection, createGrpcTransport({ baseUrl: ng.url, useBinaryFormat: false }));
    let closeRequests!: () => void;
    const held = new Promise<void>((resolve) => (closeRequests = resolve));
    async function* requests() {
      yield create(ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "" } });
      await held; // the request side stays open until the answer has come
    }
    try {
      for await (const answer of client.serverReflectionInfo(requests())) {
        expect(answer.messageResponse.case).toBe("listServicesResponse");
        break;
      }
    } finally {
      closeRequests();
    }
  });

  it("gRPC-Web with the JSON codec (a route Connect serves: health): the status in the trailer frame", async () => {
    const res = await fetch(`${ng.url}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+json", "x-api-key": ng.key },
      body: envelope(Buffer.from(`{"service":"","unknown":${WIDE}}`)),
    });
    const text = Buffer.from(await res.arrayBuffer()).toString("latin1");
    expect(text).toContain("grpc-status: 8");
    expect(text).toContain("more%20than%20100000%20JSON");
  });

  it("a Connect server stream with the JSON codec: the end of the stream says RESOURCE_EXHAUSTED", async () => {
    const res = await fetch(`${ng.url}/${EthService.typeName}/${EthService.method.subscribeNewHeads.name}`, {
      method: "POST",
      headers: { "content-type": "application/connect+json", "x-api-key": ng.key },
      body: envelope(Buffer.from(`{"unknown":${DEEP}}`)),
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes[0]).toBe(2); // the end-of-stream message
    expect(JSON.parse(bytes.subarray(5).toString("utf8"))).toMatchObject({ error: { code: "resource_exhausted", message: REFUSAL } });
  });

  it.each(["grpc", "grpc-web"] as const)("ordinary JSON calls are served: connect-es over %s with the JSON codec", async (protocol) => {
    const client = connectClient(ng.url, EthService, ng.key, protocol, "json");
    const latest = await client.blockNumber(create(EthService.method.blockNumber.input));
    expect(latest.number).toBeGreaterThanOrEqual(0n);
    const block = await client.getBlockByNumber(create(EthService.method.getBlockByNumber.input, { block: { kind: { case: "number", value: 0n } } }));
    expect(block.block?.number).toBe(0n);
  });
});
