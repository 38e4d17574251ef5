/**
 * How provider fronts (nginx, HAProxy, load balancers) end kept-alive connections, and what nodegate's HTTP/1.1
 * client makes of it (found from outside): a close that crosses a request on its way says nothing of the node, and
 * must neither open the circuit nor, for a call sent once more, land it on another connection being closed.
 */
import type net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { GatewayError } from "../../src/errors/gateway-error.js";
import { HttpUpstream } from "../../src/upstream/http-upstream.js";
import { Network } from "../../src/upstream/network.js";
import { resultText } from "../../src/upstream/reply.js";
import { onRequests, type RawNode, rawNode, resultReply } from "../support/raw-node.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const REQUEST_TIMEOUT_408 = "HTTP/1.1 408 Request Time-out\r\nconnection: close\r\ncontent-type: text/html\r\ncontent-length: 9\r\n\r\ntoo slow\n";

/**
 * A node whose front answers the first request on each connection (its connection number as the result) and meets
 * the second as `second` says: a reset, or a 408 and a close (HAProxy's answer to a request on a connection it is
 * timing out). Records each request's method and connection.
 */
async function oneRequestPerConnection(second: "reset" | "408"): Promise<RawNode & { requests: { method: string; connection: number }[] }> {
  const requests: { method: string; connection: number }[] = [];
  const node = await rawNode((socket: net.Socket, connection: number) => {
    let served = 0;
    onRequests(socket, (request) => {
      requests.push({ method: request.method, connection });
      if (++served === 1) socket.write(resultReply(request.id, `0x${connection}`));
      else if (second === "reset") socket.resetAndDestroy();
      else socket.end(REQUEST_TIMEOUT_408);
    });
  });
  cleanups.push(() => node.close());
  return Object.assign(node, { requests });
}

/** Calls one by one (batchSize 1): these fronts read each request as one call, as the pool's mechanics are pinned here. */
function upstreamFor(node: RawNode, connections: number): HttpUpstream {
  const upstream = new HttpUpstream({ url: node.url, label: "front", connections, batchSize: 1 });
  cleanups.push(() => upstream.close());
  return upstream;
}

const outcome = (answer: Promise<unknown>) =>
  answer.then(
    (r) => resultText(r as Parameters<typeof resultText>[0]),
    (e: unknown) => (e instanceof GatewayError ? `error ${e.code}: ${e.message}` : `thrown ${String(e)}`),
  );

it("a write on a kept-alive connection the front resets as it goes out: -32050 saying so, sent once, and the circuit stays closed", async () => {
  const node = await oneRequestPerConnection("reset");
  const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstreamFor(node, 1)], timeoutMs: 5000, breaker: { threshold: 1, cooldownMs: 60_000 } });
  expect(await outcome(network.call("eth_blockNumber", "[]", { idempotent: true }))).toBe('"0x0"');
  const write = await outcome(network.call("eth_sendRawTransaction", '["0x02"]'));
  expect(write).toBe(
    "error -32050: upstream unavailable: the node closed a kept-alive connection as eth_sendRawTransaction went out on it, before any reply; eth_sendRawTransaction is not sent again, as whether it took effect is unknown",
  );
  expect(node.requests.filter((r) => r.method === "eth_sendRawTransaction")).toHaveLength(1);
  // A front recycling its connections is no outage: with a threshold of 1, one counted would have opened the circuit.
  expect(network.primaryCircuit).toBe("closed");
  expect(network.lastOutageAt).toBe(Number.NEGATIVE_INFINITY);
  expect(await outcome(network.call("eth_blockNumber", "[]", { idempotent: true }))).toBe('"0x2"');
});

it("a call sent once more goes out on a new connection even when every place in the pool is taken", async () => {
  // One place: the read reuses connection 0, which is reset under it; the queued call must not take the new
  // connection before the read, else the read is sent again on that one once reused, and reset again.
  const node = await oneRequestPerConnection("reset");
  const upstream = upstreamFor(node, 1);
  expect(await outcome(upstream.call("eth_blockNumber", "[]", { timeoutMs: 5000, idempotent: true }))).toBe('"0x0"');
  const first = outcome(upstream.call("eth_getBalance", "[]", { timeoutMs: 5000, idempotent: true }));
  const queued = outcome(upstream.call("eth_chainId", "[]", { timeoutMs: 5000, idempotent: true }));
  expect(await first).toBe('"0x1"');
  expect(await queued).toBe('"0x2"');
  expect(node.requests).toEqual([
    { method: "eth_blockNumber", connection: 0 },
    { method: "eth_getBalance", connection: 0 },
    { method: "eth_getBalance", connection: 1 },
    { method: "eth_chainId", connection: 1 },
    { method: "eth_chainId", connection: 2 },
  ]);
});

it("a 408 on a kept-alive connection means the request was not taken: any call, a write too, is sent once more on a new connection", async () => {
  const node = await oneRequestPerConnection("408");
  const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstreamFor(node, 1)], timeoutMs: 5000, breaker: { threshold: 1, cooldownMs: 60_000 } });
  expect(await outcome(network.call("eth_blockNumber", "[]", { idempotent: true }))).toBe('"0x0"');
  expect(await outcome(network.call("eth_sendRawTransaction", '["0x02"]'))).toBe('"0x1"');
  expect(node.requests.map((r) => `${r.method}@${r.connection}`)).toEqual(["eth_blockNumber@0", "eth_sendRawTransaction@0", "eth_sendRawTransaction@1"]);
  expect(network.primaryCircuit).toBe("closed");
});

it("a 408 on a new connection is the front's answer: passed on, not sent again", async () => {
  const requests: string[] = [];
  const node = await rawNode((socket) => onRequests(socket, (request) => requests.push(request.method) && void socket.end(REQUEST_TIMEOUT_408)));
  cleanups.push(() => node.close());
  expect(await outcome(upstreamFor(node, 1).call("eth_blockNumber", "[]", { timeoutMs: 5000, idempotent: true }))).toBe("error -32052: upstream returned an invalid response: HTTP 408");
  expect(requests).toEqual(["eth_blockNumber"]);
});

it("a front that takes a few connections per client: networks[].upstreams[].connections holds nodegate's pool to it", async () => {
  // Found from outside: a front resetting connections past 8 per client failed most calls at c16 and opened the
  // circuit; the pool's 64 could not be lowered.
  const { startNodegate } = await import("../support/nodegate.js");
  const { post, rpc } = await import("../support/http.js");
  let open = 0;
  let most = 0;
  const node = await rawNode((socket) => {
    open++;
    most = Math.max(most, open);
    socket.on("close", () => open--);
    onRequests(socket, (request) => setTimeout(() => socket.write(resultReply(request.id, "0x1")), 20));
  });
  cleanups.push(() => node.close());
  const ng = await startNodegate({ upstreamUrl: node.url, keys: [{ key: "front-cap-key-01", plan: "growth" }], networks: [{ name: "ethereum", family: "eth", upstreams: [{ label: "capped", url: node.url, connections: 2 }] }] });
  cleanups.push(() => ng.close());
  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => post(`${ng.url}/v3/front-cap-key-01`, rpc("eth_getBalance", [`0x${"0".repeat(39)}${i.toString(16)}`, "latest"]))));
  expect(answers.map((a) => a.json.result)).toEqual(Array(12).fill("0x1"));
  expect(most).toBeLessThanOrEqual(2);
});

it("a hung node whose every connection is held is seen down: nodegate's chain id question that waited for a connection and went unanswered opens the circuit", async () => {
  // Found from outside: with the pool full of calls a hung node held, the question waited for a connection, ran out
  // with part of its deadline spent waiting (no outage, by itself), and the node was never seen down.
  const node = await rawNode((socket) => onRequests(socket, () => {}));
  cleanups.push(() => node.close());
  const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstreamFor(node, 1)], timeoutMs: 3000, breaker: { threshold: 5, cooldownMs: 60_000 } });
  const { CallCancellation } = await import("../../src/call-signal.js");
  const caller = new CallCancellation();
  const call = outcome(network.call("eth_getBalance", "[]", { idempotent: true, signal: caller.signal }));
  await new Promise((r) => setTimeout(r, 100));
  // The caller leaves: its connection reads on for the node's reply (up to 2 s), and the question waits for it.
  caller.abort();
  expect(await call).toBe("error -32603: request cancelled by the caller");
  for (let waited = 0; network.primaryCircuit === "closed" && waited < 8000; waited += 50) await new Promise((r) => setTimeout(r, 50));
  expect(network.primaryCircuit).toBe("open");
});

describe("while the node's circuit rests, a call its kept-alive connection dropped is not sent again", () => {
  const TOO_MANY = 'HTTP/1.1 429 Too Many Requests\r\nretry-after: 30\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n';
  /**
   * A node that answers eth_blockNumber, answers eth_chainId with a 429 asking for 30 s, and meets eth_getBalance on a
   * kept-alive connection (its second request there) as `drop` says, once `dropNow` resolves: a reset, or HAProxy's 408.
   */
  async function pausingNode(drop: "reset" | "408", dropNow: Promise<void>): Promise<RawNode & { requests: string[] }> {
    const requests: string[] = [];
    const node = await rawNode((socket: net.Socket, connection: number) => {
      onRequests(socket, (request) => {
        requests.push(`${request.method}@${connection}`);
        if (request.method === "eth_chainId") socket.write(TOO_MANY);
        else if (request.method === "eth_getBalance") void dropNow.then(() => (drop === "reset" ? socket.resetAndDestroy() : socket.end(REQUEST_TIMEOUT_408)));
        else socket.write(resultReply(request.id, `0x${connection}`));
      });
    });
    cleanups.push(() => node.close());
    return Object.assign(node, { requests });
  }

  for (const [drop, params] of [["reset", "[]"], ["408", "[]"], ["reset", `["0x${"ab".repeat(600_000)}"]`]] as const) {
    it(`a ${drop}${params.length > 2 ? " of a 1.2 MB request" : ""}: the caller is told at once (-32050), and the paused node is not asked again`, async () => {
      // Found from outside: a read in flight when a provider's 429 paused its circuit for 6 s was reset on its kept-alive
      // connection, sent once more to the paused node, held there, and its caller waited out upstreamTimeoutMs.
      let dropNow!: () => void;
      const node = await pausingNode(drop, new Promise<void>((r) => (dropNow = r)));
      const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstreamFor(node, 2)], timeoutMs: 5000, breaker: { threshold: 5, cooldownMs: 1000 } });
      expect(await outcome(network.call("eth_blockNumber", "[]", { idempotent: true }))).toBe('"0x0"');
      // A large request is told so too: whether the node closed on its size is not known, as it was not sent again.
      const read = outcome(network.call("eth_getBalance", params, { idempotent: true }));
      while (!node.requests.includes("eth_getBalance@0")) await new Promise((r) => setTimeout(r, 5));
      expect(await outcome(network.call("eth_chainId", "[]", { idempotent: true }))).toBe("error -32050: upstream unavailable: HTTP 429");
      expect(network.primaryCircuit).toBe("open");
      dropNow();
      expect(await read).toBe(
        "error -32050: upstream unavailable: the node closed a kept-alive connection as eth_getBalance went out on it, before any reply, while calls to it are paused (its circuit is open); eth_getBalance was not sent again",
      );
      expect(node.requests).toEqual(["eth_blockNumber@0", "eth_getBalance@0", "eth_chainId@1"]);
    });
  }

  it("with the circuit closed, the same drop is sent once more as before", async () => {
    const node = await pausingNode("reset", Promise.resolve());
    const upstream = upstreamFor(node, 1);
    const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstream], timeoutMs: 5000, breaker: { threshold: 5, cooldownMs: 1000 } });
    expect(await outcome(network.call("eth_blockNumber", "[]", { idempotent: true }))).toBe('"0x0"');
    // Sent again on connection 1, where it is its first request, which the node drops too, as a fresh reset.
    expect(await outcome(network.call("eth_getBalance", "[]", { idempotent: true }))).toMatch(/^error -32050: upstream unavailable: connection reset/);
    expect(node.requests).toEqual(["eth_blockNumber@0", "eth_getBalance@0", "eth_getBalance@1"]);
  });
});
