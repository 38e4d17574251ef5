/**
 * Neither the client's key (nor its secret) nor the upstream provider's key
 * appears in any log line or any response, whatever happens: answers, node
 * errors, auth failures, bad params, upstream outages, on both front doors.
 * (One scenario, on purpose; the suite-wide scan in test/support/secret-scan.ts
 * checks everything every test saw.)
 */
import { ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type AnvilNode, freePort, startAnvil } from "../../src/embedded/anvil.js";
import { connectClient } from "../support/grpc-clients.js";
import { basic, post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type Answer, type ProgrammableUpstream, startProgrammableUpstream, type UpstreamRequest } from "../support/programmable-upstream.js";

const CLIENT_KEY = "client-key-must-not-leak-7f3a";
const CLIENT_SECRET = "client-secret-must-not-leak-91c";
const UPSTREAM_KEY = "upstream-provider-key-must-not-leak-c0de";

let anvil: AnvilNode;
let upstream: ProgrammableUpstream;
let answer: Answer;
/** When set, answers each request (the request's id is then at hand). */
let answerFor: ((request: UpstreamRequest) => Answer) | undefined;
let ng: TestNodegate;
let dead: TestNodegate;
const seen: string[] = [];

beforeAll(async () => {
  anvil = await startAnvil();
  upstream = await startProgrammableUpstream((r) => answerFor?.(r) ?? answer, `/v3/${UPSTREAM_KEY}`);
  ng = await startNodegate({ upstreamUrl: upstream.url, keys: [{ key: CLIENT_KEY, plan: "growth", secret: CLIENT_SECRET }], config: { upstreamTimeoutMs: 300 } });
  dead = await startNodegate({ upstreamUrl: `http://127.0.0.1:${await freePort()}/v3/${UPSTREAM_KEY}`, keys: [{ key: CLIENT_KEY, plan: "core" }] });
});
afterAll(async () => {
  await ng?.close();
  await dead?.close();
  await upstream?.close();
  await anvil?.stop();
});

async function native(target: TestNodegate, key: string, body: unknown, headers: Record<string, string> = basic(CLIENT_SECRET)) {
  const res = await post(`${target.url}/v3/${key}`, body, headers);
  seen.push(res.text, JSON.stringify([...res.headers]));
}

async function typed(target: TestNodegate, key: string, headers: Record<string, string> = basic(CLIENT_SECRET)) {
  try {
    const res = await connectClient(target.url, EthService, key, "grpc").getBlockByNumber({ block: { kind: { case: "number", value: 0n } } }, { headers });
    seen.push(JSON.stringify(res, (_, v) => (typeof v === "bigint" ? String(v) : v)));
  } catch (err) {
    const e = ConnectError.from(err);
    seen.push(e.message, JSON.stringify([...e.metadata]), JSON.stringify(e.details));
  }
}

it("no key or secret in any response or log line", async () => {
  answer = { forward: anvil.url };
  await native(ng, CLIENT_KEY, rpc("eth_getBlockByNumber", ["0x0", true]));
  await native(ng, CLIENT_KEY, [rpc("eth_chainId"), rpc("eth_nope"), { bad: true }]);
  await native(ng, CLIENT_KEY, rpc("eth_getBalance", ["0x12", "latest"]));
  await native(ng, CLIENT_KEY, rpc("eth_chainId"), basic("wrong secret"));
  await native(ng, `${CLIENT_KEY}x`, rpc("eth_chainId"));
  await native(ng, CLIENT_KEY, "{not json");
  await typed(ng, CLIENT_KEY);
  await typed(ng, CLIENT_KEY, basic("wrong"));
  answer = { error: { code: -32000, message: "node trouble", data: "0x00" } };
  await native(ng, CLIENT_KEY, rpc("eth_blockNumber"));
  await typed(ng, CLIENT_KEY);
  answer = { raw: "<html>bad gateway</html>", status: 502 };
  await native(ng, CLIENT_KEY, rpc("eth_blockNumber"));
  await typed(ng, CLIENT_KEY);
  answer = { delayMs: 1000, then: { result: "0x1" } };
  await native(ng, CLIENT_KEY, rpc("eth_blockNumber"));
  answer = { destroy: true };
  await typed(ng, CLIENT_KEY);
  await native(dead, CLIENT_KEY, rpc("eth_blockNumber"), {});
  await typed(dead, CLIENT_KEY, {});

  const logs = [...ng.logs, ...dead.logs].map((l) => JSON.stringify(l));
  expect(logs.length).toBeGreaterThan(10);
  expect(upstream.requests.length).toBeGreaterThan(3);
  const everything = [...seen, ...logs].join("\n");
  for (const secret of [CLIENT_KEY, CLIENT_SECRET, UPSTREAM_KEY]) {
    expect(everything).not.toContain(secret);
  }
  // The upstream did receive its key in the path: the test would see it if nodegate echoed it.
  expect(upstream.requests[0]?.path).toBe(`/v3/${UPSTREAM_KEY}`);
});

it("a node that quotes its URL (its key) in what it answers: nodegate's messages and logs leave the key out", async () => {
  // A nodegate of its own: the first test left its node's circuit open, and this one's must not open (threshold high).
  const echoing = await startNodegate({
    upstreamUrl: upstream.url,
    keys: [{ key: CLIENT_KEY, plan: "growth", secret: CLIENT_SECRET }],
    config: { circuitBreaker: { threshold: 1000, cooldownMs: 1000 } },
  });
  const texts: string[] = [];
  const nativeText = async (body: unknown) => {
    const res = await post(`${echoing.url}/v3/${CLIENT_KEY}`, body, basic(CLIENT_SECRET));
    texts.push(res.text);
  };
  const typedText = async () => {
    const err = ConnectError.from(
      await connectClient(echoing.url, EthService, CLIENT_KEY, "grpc")
        .getBlockByNumber({ block: { kind: { case: "number", value: 0n } } }, { headers: basic(CLIENT_SECRET) })
        .then(
          () => new Error("answered"),
          (e: unknown) => e,
        ),
    );
    texts.push(err.rawMessage, JSON.stringify(err.details));
  };
  const echoes = (r: UpstreamRequest) => `/v3/${UPSTREAM_KEY}?id=${String(r.id)}`;
  try {
    // A provider refusing its key, and saying which.
    answerFor = (r) => ({ raw: JSON.stringify({ jsonrpc: "2.0", id: r.id, error: { code: -32002, message: `invalid project id ${echoes(r)}` } }), status: 401 });
    await nativeText(rpc("eth_blockNumber"));
    await typedText();
    // A node error quoting it in its message and data.
    answerFor = (r) => ({ error: { code: -32000, message: `no route for ${echoes(r)}`, data: { url: echoes(r) } } });
    await nativeText(rpc("eth_blockNumber"));
    await typedText();
    // A reply whose id, or whose whole text, is the request line.
    answerFor = (r) => ({ raw: JSON.stringify({ jsonrpc: "2.0", id: echoes(r), result: "0x1" }) });
    await nativeText(rpc("eth_blockNumber"));
    answerFor = (r) => ({ raw: `POST ${echoes(r)} HTTP/1.1 not understood` });
    await nativeText(rpc("eth_blockNumber"));
    // A result the typed door cannot decode, quoted in its -32053.
    answerFor = (r) => ({ result: { number: `0xzz${echoes(r)}` } });
    await typedText();
  } finally {
    answerFor = undefined;
    await echoing.close();
  }
  const logs = echoing.logs.map((l) => JSON.stringify(l));
  const everything = [...texts, ...logs].join("\n");
  expect(texts.filter((t) => t.includes("<redacted>")).length).toBeGreaterThanOrEqual(5);
  expect(everything).not.toContain(UPSTREAM_KEY);
  // The rest of what the node said is still there for the caller to read.
  expect(texts[0]).toContain("invalid project id /v3/<redacted>?id=");
});
