/**
 * The outcome label of nodegate_requests_total stays bounded whatever codes a
 * node answers with: codes outside JSON-RPC's server-error range and nodegate's
 * code table count as "other_error" (found from outside: each new code a
 * node sent made a new series). The log line keeps the node's code.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { outcomeLabel } from "../../src/jsonrpc/answer-log.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

let node: ProgrammableUpstream;
let gate: TestNodegate;

beforeAll(async () => {
  let next = 100001;
  node = await startProgrammableUpstream(() => ({ error: { code: next++, message: "odd" } }));
  gate = await startNodegate({ upstreamUrl: node.url });
});

afterAll(async () => {
  await gate?.close();
  await node?.close();
});

it("keeps JSON-RPC's own codes, its server-error range and the code table's; folds the rest", () => {
  expect(["ok", "Canceled", "-32700", "-32602", "-32000", "-32099", "3", "4444", "20", "1000"].map(outcomeLabel)).toEqual(["ok", "Canceled", "-32700", "-32602", "-32000", "-32099", "3", "4444", "20", "1000"]);
  // The rest of the reserved range too (found from outside: about 700 more series per method).
  expect(["100001", "-1", "-32769", "7", "-31999", "-32768", "-32100", "-32650"].map(outcomeLabel)).toEqual(Array(8).fill("other_error"));
});

it("a node's own codes count as other_error, and are logged as sent", async () => {
  for (const code of [100001, 100002, 100003]) {
    const res = await post(gate.rpcUrl, rpc("eth_getCode", [`0x${"11".repeat(20)}`, "latest"], code));
    expect(res.json.error.code).toBe(code);
  }
  const metrics = await (await fetch(`${gate.url}/metrics`)).text();
  expect(metrics).toContain('nodegate_requests_total{door="jsonrpc-http",method="eth_getCode",outcome="other_error"} 3');
  expect(metrics).not.toMatch(/outcome="10000\d"/);
  await expect.poll(() => gate.logs.filter((l) => l.msg === "request" && l.method === "eth_getCode").map((l) => l.outcome)).toEqual(["100001", "100002", "100003"]);
});
