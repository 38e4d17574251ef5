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
import { type Answer, type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const CLIENT_KEY = "client-key-must-not-leak-7f3a";
const CLIENT_SECRET = "client-secret-must-not-leak-91c";
const UPSTREAM_KEY = "upstream-provider-key-must-not-leak-c0de";

let anvil: AnvilNode;
let upstream: ProgrammableUpstream;
let answer: Answer;
let ng: TestNodegate;
let dead: TestNodegate;
const seen: string[] = [];

beforeAll(async () => {
  anvil = await startAnvil();
  upstream = await startProgrammableUpstream(() => answer, `/v3/${UPSTREAM_KEY}`);
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
