/**
 * A Connect GET's answer names in Vary what it depends on, for HTTP caches:
 * the key's allowlists may screen the origin (always named) and the user
 * agent (named when some key's allowlist screens it). Found from outside: the
 * same URL and key answered 200 or 403 by origin under one Vary.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";

let anvil: AnvilNode;
const gates: TestNodegate[] = [];

beforeAll(async () => {
  anvil = await startAnvil();
});

afterAll(async () => {
  await Promise.all(gates.map((g) => g.close()));
  await anvil?.stop();
});

const chainIdGet = (g: TestNodegate, headers: Record<string, string>) =>
  fetch(`${g.url}/nodegate.eth.v1.EthService/ChainId?connect=v1&encoding=json&message=%7B%7D`, { headers: { "x-api-key": g.key, ...headers } });

it("names origin always, and user-agent only when some key screens user agents", async () => {
  const plain = await startNodegate({ upstreamUrl: anvil.url });
  gates.push(plain);
  const answer = await chainIdGet(plain, {});
  expect(answer.status).toBe(200);
  expect(answer.headers.get("vary")).toBe("accept-encoding, x-api-key, authorization, x-nodegate-network, origin");

  const screening = await startNodegate({ upstreamUrl: anvil.url, keys: [{ key: "ua-screened-key-012345", plan: "growth", allowlists: { userAgents: ["my-service/"] } }] });
  gates.push(screening);
  const allowed = await chainIdGet(screening, { "user-agent": "my-service/1.0" });
  const refused = await chainIdGet(screening, { "user-agent": "curl/8" });
  expect([allowed.status, refused.status]).toEqual([200, 403]);
  for (const res of [allowed, refused]) expect(res.headers.get("vary")).toBe("accept-encoding, x-api-key, authorization, x-nodegate-network, origin, user-agent");
});
