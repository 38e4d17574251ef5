/**
 * Http1Pool behind a front that caps connections per client at the pool's own `connections` (the README's advice)
 * and counts a closed connection as gone a little after it closed (as fronts do: the close crosses the network, and
 * the front's count follows its own events). A caller leaving cuts its connection; the pool's replacement reaches
 * the front before the front counts the old one gone, and is refused (a reset, or HTTP 429). Found from outside: a
 * queued call then failed with that refusal (-32050), although the node was fine, and each refusal handed its place
 * to the next queued call, refused in turn, until the circuit opened.
 */
import http from "node:http";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Http1Pool } from "../../src/upstream/http1-pool.js";
import { type CappingFront, type FrontRefusal, startCappingFront } from "../support/capping-front.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/**
 * A JSON-RPC node answering `slow` after slowMs and anything else at once; counts requests by method. `kill` stops it
 * (nothing listens on its port), `start` listens on that port again.
 */
async function node(slowMs: number): Promise<{ port: number; seen: Record<string, number>; kill(): Promise<void>; start(): Promise<void> }> {
  const seen: Record<string, number> = {};
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c));
    req.on("end", () => {
      const { id, method } = JSON.parse(body) as { id: number; method: string };
      seen[method] = (seen[method] ?? 0) + 1;
      setTimeout(() => res.end(JSON.stringify({ jsonrpc: "2.0", id, result: method })), method === "slow" ? slowMs : 0);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  const kill = async () => {
    if (!server.listening) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  };
  closers.push(kill);
  return { port, seen, kill, start: () => new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve)) };
}

/** The front, closed after the test. */
async function front(nodePort: number, cap: number, refusal: FrontRefusal, lagMs: number): Promise<CappingFront> {
  const f = await startCappingFront(`http://127.0.0.1:${nodePort}/`, cap, refusal, lagMs);
  closers.push(() => f.close());
  return f;
}

function pool(url: URL, connections: number): Http1Pool {
  const p = new Http1Pool({ url, connections, headers: { "content-type": "application/json" }, keepAliveMs: 30_000 });
  closers.push(() => p.close());
  return p;
}

const body = (method: string) => JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: [] });
/** The call's outcome: the node's result, `HTTP <status>`, or the error's code. */
const outcome = (p: Http1Pool, method: string, repeatable = true) =>
  p.request(body(method), repeatable).reply.then(
    (reply) => (reply.statusCode === 200 ? (JSON.parse(Buffer.concat(reply.chunks).toString()) as { result: string }).result : `HTTP ${reply.statusCode}`),
    (err: unknown) => (err as { code?: string }).code ?? String(err),
  );

describe("Http1Pool behind a front capping connections per client", () => {
  /**
   * Two slow calls hold both connections of a pool behind a lagging front; `queue` queues calls behind them, and the slow
   * calls' callers leave: one connection reads its reply to the end, the other closes. The queued calls' outcomes.
   */
  async function queuedAsCallersLeave(refusal: FrontRefusal, queue: (p: Http1Pool) => Promise<string>[]) {
    const n = await node(800);
    const f = await front(n.port, 2, refusal, 60);
    const p = pool(new URL(f.url), 2);
    const slow = [p.request(body("slow"), true), p.request(body("slow"), true)];
    for (const s of slow) s.reply.catch(() => {});
    await sleep(50);
    const queued = queue(p);
    await sleep(100);
    slow[0]?.cancel(new Error("caller left"), 2000);
    slow[1]?.cancel(new Error("caller left"), 2000);
    return { outcomes: await Promise.all(queued), seen: n.seen, refused: f.refused() };
  }

  it.each(["reset", "429"] as const)("callers leaving cut their connections; the queued calls wait for connections the front takes (refusing by %s), and are answered", async (refusal) => {
    const { outcomes, seen, refused } = await queuedAsCallersLeave(refusal, (p) => [0, 1, 2, 3, 4].map(() => outcome(p, "fast")));
    expect(outcomes).toEqual(["fast", "fast", "fast", "fast", "fast"]);
    expect(refused).toBeGreaterThanOrEqual(1);
    // Each call reached the node once.
    expect(seen).toEqual({ slow: 2, fast: 5 });
  });

  it.each(["reset", "429"] as const)("a write queued there (refused by %s) waits for a connection already open rather than take the replacement, and reaches the node once", async (refusal) => {
    const { outcomes, seen } = await queuedAsCallersLeave(refusal, (p) => [outcome(p, "write", false), outcome(p, "fast"), outcome(p, "write", false), outcome(p, "fast")]);
    expect(outcomes).toEqual(["write", "fast", "write", "fast"]);
    expect(seen).toEqual({ slow: 2, fast: 2, write: 2 });
  });

  it("a write kept off new connections while the front may count a closed one takes a new one once that time is over, if none freed", async () => {
    const n = await node(5000);
    const f = await front(n.port, 2, "reset", 0);
    const p = pool(new URL(f.url), 2);
    const held = outcome(p, "slow");
    const cut = p.request(body("slow"), true);
    cut.reply.catch(() => {});
    await sleep(50);
    cut.cancel(new Error("caller left"));
    const started = performance.now();
    expect(await outcome(p, "write", false)).toBe("write");
    const ms = performance.now() - started;
    expect(ms).toBeGreaterThan(1500);
    expect(ms).toBeLessThan(3000);
    expect(f.refused()).toBe(0);
    void held;
  });

  it.each(["reset", "429"] as const)("a front refusing every connection (by %s) still fails a call at once when nodegate closed none of its own", async (refusal) => {
    const n = await node(0);
    const f = await front(n.port, 2, refusal, 0);
    f.refuseAll(true);
    const p = pool(new URL(f.url), 2);
    const started = performance.now();
    expect(await outcome(p, "fast")).toBe(refusal === "reset" ? "ECONNRESET" : "HTTP 429");
    expect(performance.now() - started).toBeLessThan(100);
  });

  it("the provider's own 429 (a JSON-RPC error) on a new connection right after nodegate closed one is its answer, at once", async () => {
    const n = await node(1000);
    const f = await front(n.port, 2, "429json", 0);
    const p = pool(new URL(f.url), 2);
    const cut = p.request(body("slow"), true);
    cut.reply.catch(() => {});
    await sleep(50);
    cut.cancel(new Error("caller left"));
    f.refuseAll(true);
    const started = performance.now();
    expect(await outcome(p, "fast")).toBe("HTTP 429");
    expect(performance.now() - started).toBeLessThan(100);
    expect(f.refused()).toBe(1);
  });

  it("a write right after nodegate closed every connection of its own waits for the front's count rather than take a connection it refuses, and reaches the node once", async () => {
    // Found from outside: after the idle sweep (or callers leaving) closed both connections, a write took a new one at
    // once, the front still counting the closed ones refused it, and the write failed, never sent.
    const n = await node(5000);
    const f = await front(n.port, 2, "reset", 300);
    const p = pool(new URL(f.url), 2);
    const cut = [p.request(body("slow"), true), p.request(body("slow"), true)];
    for (const c of cut) c.reply.catch(() => {});
    await sleep(50);
    for (const c of cut) c.cancel(new Error("caller left"));
    const started = performance.now();
    expect(await outcome(p, "write", false)).toBe("write");
    expect(performance.now() - started).toBeGreaterThan(300);
    expect(f.refused()).toBe(0);
    expect(n.seen.write).toBe(1);
  });

  it.each([1, 2])("a front refusing every connection right after nodegate closed %i of its 2: below the cap the refusal is the node's, at it a read is tried again for a few hundred ms only; a write is not sent again", async (cuts) => {
    const n = await node(1000);
    const f = await front(n.port, 2, "429", 0);
    const p = pool(new URL(f.url), 2);
    const cut = Array.from({ length: cuts }, () => p.request(body("slow"), true));
    for (const c of cut) c.reply.catch(() => {});
    await sleep(50);
    for (const c of cut) c.cancel(new Error("caller left"));
    f.refuseAll(true);
    const started = performance.now();
    const timed = (call: Promise<string>) => call.then((result) => [result, performance.now() - started] as const);
    const [[read, readMs], [write, writeMs]] = await Promise.all([timed(outcome(p, "fast")), timed(outcome(p, "write", false))]);
    expect([read, write]).toEqual(["HTTP 429", "HTTP 429"]);
    if (cuts === 1) {
      // One closed and one new make 2, which a front capping at 2 takes: its refusal is the node's, passed on at once.
      expect(readMs).toBeLessThan(100);
      expect(writeMs).toBeLessThan(100);
      expect(f.refused()).toBe(2);
    } else {
      // At the cap, with no other connection to the node open: the refusal may as well be a node gone down just after
      // nodegate's own closes, so the read is asked again only while its next try comes within 500 ms of the closes
      // (after 50, 100 and 200 ms holds: ~350 ms, not ~2 s, which held back its caller and failover); the write waits
      // for the front's count (2 s after the closes), is refused once, and is not sent again.
      expect(readMs).toBeGreaterThan(300);
      expect(readMs).toBeLessThan(600);
      expect(writeMs).toBeGreaterThan(1500);
      expect(writeMs).toBeLessThan(2500);
      expect(f.refused()).toBe(5);
    }
    expect(n.seen.write).toBeUndefined();
    // Those refusals, whose connections the front closed, are not nodegate's own closes: 2 s after its own, a refused call fails at once again.
    await sleep(2100 - (performance.now() - started));
    const again = performance.now();
    expect(await outcome(p, "fast")).toBe("HTTP 429");
    expect(performance.now() - again).toBeLessThan(100);
  });
});

describe("Http1Pool after its idle sweep closed every connection, behind a front counting them a while yet", () => {
  const IDLE_MS = 200;
  function idlePool(url: string): Http1Pool {
    const p = new Http1Pool({ url: new URL(url), connections: 2, headers: { "content-type": "application/json" }, keepAliveMs: IDLE_MS });
    closers.push(() => p.close());
    return p;
  }
  /** Both connections made and idle; resolves once the sweep (`swept`) closed them, else once they are idle past their limit, unswept. */
  async function idleClosed(p: Http1Pool, swept: boolean): Promise<void> {
    expect(await Promise.all([outcome(p, "warm"), outcome(p, "warm")])).toEqual(["warm", "warm"]);
    if (!swept) {
      // The sweep runs 1 s after the first connection went idle; past IDLE_MS the next call closes them itself.
      await sleep(IDLE_MS + 300);
      expect(p.ownCloseAt).toBe(Number.NEGATIVE_INFINITY);
      return;
    }
    while (p.ownCloseAt === Number.NEGATIVE_INFINITY) await sleep(2);
  }

  it.each([
    ["reset", 100, true],
    ["reset", 250, true],
    ["429", 250, true],
    ["reset", 250, false],
  ] as const)("a read sent at once (front refusing by %s, lag %i ms, swept: %s) waits for the front's count and is answered", async (refusal, lagMs, swept) => {
    const n = await node(0);
    const f = await front(n.port, 2, refusal, lagMs);
    const p = idlePool(f.url);
    await idleClosed(p, swept);
    const started = performance.now();
    expect(await Promise.all([outcome(p, "fast"), outcome(p, "fast")])).toEqual(["fast", "fast"]);
    expect(f.refused()).toBeGreaterThanOrEqual(1);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(n.seen.fast).toBe(2);
  });

  /** A pool whose idle sweep closed its connections to a node (behind a front counting them 250 ms yet, or not), then the node killed. */
  async function killedAfterSweep(behindFront: boolean) {
    const n = await node(0);
    const f = behindFront ? await front(n.port, 2, "reset", 250) : undefined;
    const p = idlePool(f?.url ?? `http://127.0.0.1:${n.port}/`);
    await idleClosed(p, true);
    await n.kill();
    return { n, p, started: performance.now() };
  }

  // The bounds below tell a call tried again for a front's lag (hundreds of ms) from one answered at once; they leave
  // room for a loaded machine, so the no-front bounds do not tell apart the one 50 ms retry this change removed.
  it.each([true, false])("a node killed for good just after (behind the front: %s): reads are told within a few hundred ms, and later ones at once", async (behindFront) => {
    const { p, started } = await killedAfterSweep(behindFront);
    const timed = (call: Promise<string>) => call.then((result) => [result, Math.round(performance.now() - started)] as const);
    const told = await Promise.all([0, 1, 2, 3].map(() => timed(outcome(p, "fast"))));
    for (const [result, ms] of told) {
      // Behind the front, a refusal like its cap's (a reset), or its close once the node behind refused it, tried again
      // within 500 ms of the sweep; else refused outright, at once.
      expect(result).toMatch(behindFront ? /^(ECONNRESET|ENODECLOSED)$/ : /^ECONNREFUSED$/);
      expect(ms).toBeLessThan(behindFront ? 600 : 200);
    }
    await sleep(2100 - (performance.now() - started));
    const again = performance.now();
    expect(await outcome(p, "fast")).toMatch(/^E/);
    expect(performance.now() - again).toBeLessThan(200);
  });

  it.each([true, false])("a node restarted 300 ms after (behind the front: %s): a read sent as it went down is answered once it is back (behind the front, whose refusals are tried again), or told at once (its port refusing the connection); reads after it are answered at once", async (behindFront) => {
    const { n, p, started } = await killedAfterSweep(behindFront);
    setTimeout(() => void n.start(), 300);
    const [result, ms] = await outcome(p, "fast").then((r) => [r, performance.now() - started] as const);
    expect(result).toBe(behindFront ? "fast" : "ECONNREFUSED");
    expect(ms).toBeLessThan(behindFront ? 600 : 200);
    await sleep(400 - (performance.now() - started));
    const after = performance.now();
    expect(await outcome(p, "fast")).toBe("fast");
    expect(performance.now() - after).toBeLessThan(200);
  });
});
