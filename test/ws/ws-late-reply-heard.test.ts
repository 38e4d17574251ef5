/**
 * A WebSocket node's reply to a call whose caller had left is still word from the node: README ("Failover and the
 * circuit breaker") counts "a late reply to a call whose caller had left" as having heard from it, so nodegate's
 * chain id question going unanswered meanwhile does not take the node for down. Against a small fake node that
 * never answers eth_chainId and answers eth_blockNumber late, once the question has come: the circuit stays closed
 * and the next caller is answered (with the reply not counted, the question's deadline opened the circuit and the
 * next caller was told calls were paused).
 */
import type { AddressInfo } from "node:net";
import { afterEach, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import { CallCancellation } from "../../src/call-signal.js";
import { Network } from "../../src/upstream/network.js";
import { resultText } from "../../src/upstream/reply.js";
import { WsUpstream } from "../../src/upstream/ws-upstream.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A node that never answers eth_chainId, and answers eth_blockNumber only once an eth_chainId has come. */
async function slowToAnswerNode() {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const seen: string[] = [];
  let chainIdAsked = false;
  const held: { socket: WebSocket; id: unknown }[] = [];
  const answer = (socket: WebSocket, id: unknown) => socket.send(JSON.stringify({ jsonrpc: "2.0", id, result: "0x2a" }));
  server.on("connection", (socket) => {
    socket.on("message", (data: Buffer) => {
      const request = JSON.parse(data.toString("utf8")) as { id: unknown; method: string };
      seen.push(request.method);
      if (request.method === "eth_chainId") {
        chainIdAsked = true;
        for (const h of held.splice(0)) answer(h.socket, h.id); // late: their callers have left
      } else if (chainIdAsked) answer(socket, request.id);
      else held.push({ socket, id: request.id });
    });
  });
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  );
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

it("a late reply to a call whose caller left counts as word from the node: the unanswered chain id question does not open its circuit", async () => {
  const node = await slowToAnswerNode();
  const ws = new WsUpstream({ url: node.url, label: "ws-node" });
  cleanups.push(() => ws.close());
  // upstreamTimeoutMs 1 s: the question waits min(5 s, 1 s) for its verdict. A long cooldown: one question only.
  const network = new Network({ name: "ethereum", family: "eth", upstreams: [ws], timeoutMs: 1000, breaker: { threshold: 5, cooldownMs: 60_000 } });

  const caller = new CallCancellation();
  const impatient = network.call("eth_blockNumber", "[]", { signal: caller.signal, idempotent: true });
  for (let waited = 0; !node.seen.includes("eth_blockNumber") && waited < 5000; waited += 10) await sleep(10);
  caller.abort(); // the caller gives up; nothing has been heard from the node since its call was sent
  await expect(impatient).rejects.toMatchObject({ grpcCode: 1 }); // Canceled

  // nodegate asks the node its chain id; the node answers the abandoned call instead, then nothing.
  for (let waited = 0; !node.seen.includes("eth_chainId") && waited < 5000; waited += 10) await sleep(10);
  expect(node.seen).toEqual(["eth_blockNumber", "eth_chainId"]);
  // The question's deadline passes (it leaves the upstream's waiting requests), and its verdict is given.
  for (let waited = 0; ws.pendingCount > 0 && waited < 5000; waited += 10) await sleep(10);
  expect(ws.pendingCount).toBe(0);
  await sleep(10);

  // The next caller is answered, not told that calls are paused.
  const patient = await network.call("eth_blockNumber", "[]", { idempotent: true }).then(resultText, (err: Error) => err.message);
  expect(patient).toBe('"0x2a"');
  expect(network.primaryCircuit).toBe("closed");
});
