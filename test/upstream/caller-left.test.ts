/**
 * A caller that leaves while its call is at the node (a client's timeout, a
 * closed tab) or whose own deadline passes there (grpc-timeout) no longer
 * costs an upstream connection: the
 * connection reads the node's reply to its end, discards it, and carries the
 * next call. Counted as the node sees it: connections closed (before, one per
 * caller that left). Found from outside by a soak: 693 new upstream connections in
 * 45 s of aborted calls against 1 without aborts, each a TCP and TLS
 * handshake to a remote provider. Replies too large or too slow still close
 * their connection (Http1Pool's own tests cover those bounds).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { connectClient } from "../support/grpc-clients.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

let anvil: AnvilNode;
let node: ProgrammableUpstream;
let ng: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  // Anvil answers at once; a provider takes a while, long enough for a caller to give up.
  node = await startProgrammableUpstream(() => ({ delayMs: 150, then: { forward: anvil.url } }));
  ng = await startNodegate({ upstreamUrl: node.url });
});
afterAll(async () => {
  await ng?.close();
  await node?.close();
  await anvil?.stop();
});

it("callers that leave mid-call do not make nodegate close an upstream connection for each", async () => {
  const closedBefore = node.closedConnections;
  for (let i = 0; i < 10; i++) {
    const left = fetch(ng.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(rpc("eth_getBalance", [`0x${(i + 1).toString(16).padStart(40, "0")}`, "latest"])), signal: AbortSignal.timeout(40) });
    await expect(left).rejects.toThrow();
    // The node's reply comes after the caller left; the next call starts once it has.
    await node.arrived("eth_getBalance", JSON.stringify([`0x${(i + 1).toString(16).padStart(40, "0")}`, "latest"]));
    await new Promise((r) => setTimeout(r, 200));
  }
  await new Promise((r) => setTimeout(r, 300)); // the last reply has come
  expect(node.closedConnections).toBe(closedBefore);
  const res = await fetch(ng.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(rpc("eth_getBalance", ["0x0000000000000000000000000000000000000001", "latest"], 7)) });
  expect(await res.json()).toEqual({ jsonrpc: "2.0", id: 7, result: "0x0" });
  expect(node.count("eth_getBalance")).toBe(11);
});

it("calls whose gRPC deadline passes at the node do not either", async () => {
  const client = connectClient(ng.url, EthService, ng.key, "grpc");
  const closedBefore = node.closedConnections;
  const calls = node.count("eth_getBalance");
  for (let i = 0; i < 5; i++) {
    const address = new Uint8Array(20).fill(0x20 + i);
    const err = await client.getBalance({ address }, { timeoutMs: 40 }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.DeadlineExceeded);
    for (let k = 0; k < 100 && node.count("eth_getBalance") < calls + i + 1; k++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 200));
  }
  expect((await client.getBalance({ address: new Uint8Array(20) })).balance).toBeDefined();
  expect(node.count("eth_getBalance")).toBe(calls + 6);
  expect(node.closedConnections).toBe(closedBefore);
});

it("nor calls whose own deadline (connect-timeout-ms) passes at the node while the caller still waits", async () => {
  const closedBefore = node.closedConnections;
  const calls = node.count("eth_getBalance");
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`${ng.url}/${EthService.typeName}/GetBalance`, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-protocol-version": "1", "connect-timeout-ms": "40", "x-api-key": ng.key },
      body: JSON.stringify({ address: Buffer.from(new Uint8Array(20).fill(0x40 + i)).toString("base64") }),
    });
    expect(((await res.json()) as { code: string }).code).toBe("deadline_exceeded");
    for (let k = 0; k < 100 && node.count("eth_getBalance") < calls + i + 1; k++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 200));
  }
  await new Promise((r) => setTimeout(r, 300)); // the last reply has come
  expect(node.count("eth_getBalance")).toBe(calls + 5);
  expect(node.closedConnections).toBe(closedBefore);
});
