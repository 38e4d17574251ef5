/**
 * How typed callers give their key and network, as polyglot clients do it:
 * a metadata key sent twice with one value (an interceptor and the caller's
 * own code both adding x-api-key) counts as that value; a base URL that
 * carries the native door's /v3/<KEY>, or a network name, is answered in the
 * caller's protocol with what to do instead, not a bare HTTP 404. Found from
 * outside (Python grpcio, buf curl, connect-es).
 */
import http from "node:http";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";

let anvil: AnvilNode;
let gate: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  gate = await startNodegate({ upstreamUrl: anvil.url });
});

afterAll(async () => {
  await gate?.close();
  await anvil?.stop();
});

/** A grpc-js ChainId call with `metadata` as given, repeats and all. */
function grpcChainId(metadata: [string, string][]): Promise<{ code: number; details: string } | "ok"> {
  const client = new grpc.Client(gate.address, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  for (const [k, v] of metadata) md.add(k, v);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      "/nodegate.eth.v1.EthService/ChainId",
      () => Buffer.alloc(0),
      (b: Buffer) => b,
      {},
      md,
      (err) => {
        client.close();
        resolve(err ? { code: err.code, details: err.details } : "ok");
      },
    );
  });
}

it("x-api-key and x-nodegate-network sent twice with one value count as that value, with two values are refused", async () => {
  expect(await grpcChainId([["x-api-key", gate.key], ["x-api-key", gate.key]])).toBe("ok");
  expect(await grpcChainId([["x-api-key", gate.key], ["x-nodegate-network", "ethereum"], ["x-nodegate-network", "ethereum"]])).toBe("ok");
  // Different values are refused saying so (found from outside, h89: two networks read as the unknown network
  // "ethereum, sepolia", two keys as an invalid one); the values are not echoed, a key may be among them.
  expect(await grpcChainId([["x-api-key", gate.key], ["x-api-key", "another-key-0123456789"]])).toEqual({
    code: grpc.status.UNAUTHENTICATED,
    details: "x-api-key metadata sent with 2 different values; send one key",
  });
  expect(await grpcChainId([["x-api-key", gate.key], ["x-nodegate-network", "ethereum"], ["x-nodegate-network", "sepolia"]])).toEqual({
    code: grpc.status.INVALID_ARGUMENT,
    details: "x-nodegate-network metadata sent with 2 different values; name one network (configured: ethereum)",
  });
});

it("a base URL holding the native door's /v3/<KEY> gets UNAUTHENTICATED saying where the key goes, on every protocol", async () => {
  const base = `${gate.url}/v3/${gate.key}`;
  const transports = [
    createConnectTransport({ baseUrl: base, httpVersion: "1.1" }),
    createConnectTransport({ baseUrl: base, httpVersion: "2" }),
    createGrpcTransport({ baseUrl: base }),
    createGrpcWebTransport({ baseUrl: base, httpVersion: "1.1" }),
  ];
  for (const transport of transports) {
    const err = await createClient(EthService, transport).chainId({}).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect([err?.code, err?.rawMessage]).toEqual([Code.Unauthenticated, "typed calls take the API key in the x-api-key metadata, not in the path: call /nodegate.eth.v1.EthService/ChainId at the server's root"]);
  }
  // Logged under the typed door with the status answered, and the key in the path is not logged.
  await expect.poll(() => gate.logs.filter((l) => l.method === "(unserved)" && l.status === "Unauthenticated").map((l) => l.door)).toEqual(["connect", "connect", "grpc", "grpc-web"]);
  expect(JSON.stringify(gate.logs)).not.toContain(`/v3/${gate.key}`);
});

it("a native path with a dot segment (/v3/./<KEY>) is not read as a typed call behind a prefix, and its answer does not quote the key", async () => {
  // Found from outside: "." passed for a package-qualified service, so the JSON-RPC POST got the typed door's 401
  // telling it to "call /./<KEY> at the server's root".
  // node:http sends the path as written (fetch would resolve the dot segment first).
  const post = (path: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request({ host: "127.0.0.1", port: gate.port, path, method: "POST", headers: { "content-type": "application/json" } }, (res) => {
        let text = "";
        res.on("data", (d: Buffer) => (text += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on("error", reject);
      req.end('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}');
    });
  for (const path of [`/v3/./${gate.key}`, `/./v3/${gate.key}`]) {
    const { status, text } = await post(path);
    expect(status, path).toBe(404);
    expect(text, path).not.toContain(gate.key);
    expect(text, path).not.toContain("server's root");
  }
});

it("a base URL holding a network name gets UNIMPLEMENTED pointing at x-nodegate-network", async () => {
  const err = await createClient(EthService, createGrpcTransport({ baseUrl: `${gate.url}/starknet` })).chainId({}).then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  expect(err?.code).toBe(Code.Unimplemented);
  expect(err?.rawMessage).toMatch(/not behind a path prefix; a network is named in the x-nodegate-network metadata/);
  // A plain request to such a path keeps its plain 404.
  expect((await fetch(`${gate.url}/starknet/nodegate.eth.v1.EthService/ChainId`)).status).toBe(404);
});

it("a Connect GET behind a prefix is answered in Connect's terms too", async () => {
  // Found from outside: it has no content type, and still got a bare "HTTP 404".
  const client = createClient(EthService, createConnectTransport({ baseUrl: `${gate.url}/v3/${gate.key}`, httpVersion: "1.1", useHttpGet: true }));
  const err = await client.chainId({}).then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  expect(err?.code).toBe(Code.Unauthenticated);
});


it("the README's curl example behind a prefix (JSON, no connect-protocol-version) gets the same word", async () => {
  // Found from outside: it got a plain-text 404.
  const res = await fetch(`${gate.url}/v3/${gate.key}/nodegate.eth.v1.EthService/ChainId`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  expect(res.status).toBe(401);
  expect(((await res.json()) as { message: string }).message).toMatch(/typed calls take the API key in the x-api-key metadata/);
  // A native call to a mistyped path still gets a plain 404, saying where nodegate's doors are (found from outside, h89:
  // a bare "not found" for /v4/<KEY> and for / said nothing).
  const mistyped = await fetch(`${gate.url}/v4/${gate.key}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  expect(mistyped.status).toBe(404);
  expect(await mistyped.text()).toMatch(/^not found: nodegate serves JSON-RPC at POST \/v3\/<KEY> .*typed calls at \/<package>\.<Service>\/<Method>/);
});

it("a typed path asked without a content type, with one no protocol takes, or by a GET without Connect's query: 415 saying what to send", async () => {
  // Found from outside (h89): Connect's handler answered these with an empty 415, counted as outcome Unknown.
  const path = `${gate.url}/nodegate.eth.v1.EthService/ChainId`;
  const answers = [
    // Bytes, so fetch adds no content type of its own.
    await fetch(path, { method: "POST", headers: { "x-api-key": gate.key }, body: Buffer.from("{}") }),
    await fetch(path, { method: "POST", headers: { "x-api-key": gate.key, "content-type": "text/plain" }, body: "{}" }),
    await fetch(path, { headers: { "x-api-key": gate.key } }),
  ];
  for (const res of answers) {
    expect(res.status).toBe(415);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toMatch(/^unsupported request \((no content-type|content-type "text\/plain"|a GET without the encoding and message query parameters)\): POST with content-type application\/json or application\/proto \(Connect\)/);
  }
  // Each protocol's own content type still reaches its RPC.
  const json = await fetch(path, { method: "POST", headers: { "x-api-key": gate.key, "content-type": "application/json; charset=utf-8" }, body: "{}" });
  expect(json.status).toBe(200);
  const get = await fetch(`${path}?encoding=json&message=%7B%7D`, { headers: { "x-api-key": gate.key } });
  expect(get.status).toBe(200);
});

/** A grpc-js call to `path` with an empty message: its status code and details. */
function grpcCall(path: string): Promise<{ code: number; details: string }> {
  const client = new grpc.Client(gate.address, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    client.makeUnaryRequest(path, () => Buffer.alloc(0), (b: Buffer) => b, {}, new grpc.Metadata(), (err) => {
      client.close();
      resolve({ code: err?.code ?? 0, details: err?.details ?? "" });
    });
  });
}

it("a base URL ending in a slash (//package.Service/Method, as Google's gRPC-Web client joins it) gets UNIMPLEMENTED saying where RPCs are, not a plain 404", async () => {
  expect(await grpcCall("//nodegate.eth.v1.EthService/ChainId")).toEqual({
    code: grpc.status.UNIMPLEMENTED,
    details: "typed calls are served at the server's root (/nodegate.eth.v1.EthService/ChainId), not behind a path prefix; a network is named in the x-nodegate-network metadata",
  });
});

it("a long RPC path is quoted cut in the answer's message: echoed whole, it passed clients' metadata limits", async () => {
  const long = `/${"a.".repeat(2000)}b/Method`;
  const { code, details } = await grpcCall(long);
  expect(code).toBe(grpc.status.UNIMPLEMENTED);
  expect(details).toBe(`unknown method ${long.slice(0, 200)}…`);
  const prefixed = await grpcCall(`/v3/x/${"c.".repeat(2000)}d/Method`);
  expect(prefixed.code).toBe(grpc.status.UNAUTHENTICATED);
  expect(prefixed.details.length).toBeLessThan(400);
});

it("an unknown RPC is answered once its request has arrived, as served RPCs are: curl, answered while still sending, waited for its idle timeout", async () => {
  const session = http2.connect(gate.url);
  try {
    const req = session.request({ ":method": "POST", ":path": "/nodegate.eth.v1.NoSuchService/Method", "content-type": "application/grpc" }, { endStream: false });
    let status: string | undefined;
    const answered = new Promise<void>((resolve) => req.on("response", (headers) => resolve(void (status = String(headers["grpc-status"])))));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(status).toBeUndefined();
    req.end(Buffer.alloc(5));
    await answered;
    expect(status).toBe(String(grpc.status.UNIMPLEMENTED));
  } finally {
    session.close();
  }
});
