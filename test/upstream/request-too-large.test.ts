/**
 * A request larger than the node takes (Anvil answers one over about 2 MiB
 * with -32600 and closes the connection without reading the rest; its
 * answer is often lost with the reset, even when asked directly): the
 * caller gets the node's -32600, or, when the reset lost it, nodegate's
 * -32600 saying the node refused the request's size; never "upstream
 * unavailable", and it is not an outage. Against a real Anvil.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AnvilNode, freePort, startAnvil } from "../../src/embedded/anvil.js";
import { post, rpc } from "../support/http.js";
import { startProgrammableUpstream } from "../support/programmable-upstream.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";

let anvil: AnvilNode;
let ng: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  ng = await startNodegate({ upstreamUrl: anvil.url });
}, 60_000);
afterAll(async () => {
  await ng?.close();
  await anvil?.stop();
});

it("a 5 MB eth_call is refused as too large, never as an outage, and the circuit stays closed", async () => {
  // Found from outside: 3 to 5 of 10 such calls got -32050 "upstream unavailable: connection closed", counted as outages.
  const data = `0x${"ab".repeat(2_550_000)}`;
  const messages: string[] = [];
  for (let i = 0; i < 10; i++) {
    const reply = await post(ng.rpcUrl, rpc("eth_call", [{ to: "0x00000000000000000000000000000000000c0de1", data }, "latest"], i));
    expect(reply.json.id).toBe(i);
    expect(reply.json.error?.code, JSON.stringify(reply.json.error)).toBe(-32600);
    messages.push(reply.json.error.message);
  }
  for (const message of messages) expect(message).toMatch(/^(?:Invalid request|request too large for the node: the node closed the connection without answering a \d+-byte request \(nodes refuse requests over their own size limit\))$/);
  const network = ng.gateway.networks()[0];
  expect(network?.primaryCircuit).toBe("closed");
  expect((await post(ng.rpcUrl, rpc("eth_chainId", []))).json.result).toBe("0x7a69");
});

it("a large request to a node that is down is still an outage (-32050), not 'too large'", async () => {
  const down = await startNodegate({ upstreamUrl: `http://127.0.0.1:${await freePort()}` });
  try {
    const data = `0x${"ab".repeat(1_000_000)}`;
    const reply = await post(down.rpcUrl, rpc("eth_call", [{ to: "0x00000000000000000000000000000000000c0de1", data }, "latest"]));
    expect(reply.json.error?.code).toBe(-32050);
    expect(reply.json.error?.message).toMatch(/^upstream unavailable: connection refused/);
  } finally {
    await down.close();
  }
});

it("a node front's 413 (nginx past its body limit) is the caller's -32600, not an outage: other keys' calls go on and readiness holds", async () => {
  // Found from outside: each 413 was -32052 "invalid response" and an outage, so one client's large calls opened the
  // circuit for every key and took the replica out of readiness.
  const front = await startProgrammableUpstream((r) =>
    r.body.length > 100_000 ? { raw: "<html><body><h1>413 Request Entity Too Large</h1></body></html>", status: 413, headers: { "content-type": "text/html" } } : { forward: anvil.url },
  );
  const behind = await startNodegate({ upstreamUrl: front.url, config: { circuitBreaker: { threshold: 2, cooldownMs: 60_000 } } });
  try {
    const data = `0x${"ab".repeat(100_000)}`;
    for (let i = 0; i < 4; i++) {
      const reply = await post(behind.rpcUrl, rpc("eth_call", [{ to: "0x00000000000000000000000000000000000c0de1", data }, "latest"], i));
      expect(reply.status).toBe(413);
      expect(reply.json.error).toEqual({ code: -32600, message: "request too large for the node: HTTP 413 (nodes refuse requests over their own size limit)" });
    }
    expect(behind.gateway.networks()[0]?.primaryCircuit).toBe("closed");
    expect((await post(behind.rpcUrl, rpc("eth_chainId", []))).json.result).toBe("0x7a69");
    expect((await fetch(`${behind.url}/readyz`)).status).toBe(200);
  } finally {
    await behind.close();
    await front.close();
  }
});
