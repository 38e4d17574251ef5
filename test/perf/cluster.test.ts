/**
 * NODEGATE_WORKERS=N runs N worker processes on one port: connections are
 * shared among them, every worker answers, and stopping the primary stops
 * them all. Started as an operator would start it (src/main.ts).
 */
import { setMaxListeners } from "node:events";
import { readFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent, request } from "undici";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { startProgrammableUpstream } from "../support/programmable-upstream.js";
import { processAlive, startWorkersPrimary, type WorkersPrimary } from "../support/workers-primary.js";

const KEY = "cluster-key-0123456789";
let anvil: AnvilNode;
let nodegate: WorkersPrimary;

function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

const alive = processAlive;

beforeAll(async () => {
  anvil = await startAnvil();
  nodegate = await startWorkersPrimary({ NODEGATE_UPSTREAM_URL: anvil.url, NODEGATE_API_KEYS: `${KEY}:custom`, NODEGATE_WORKERS: "2", NODEGATE_LOG_LEVEL: "warn" });
}, 60_000);
afterAll(async () => {
  nodegate?.kill();
  await anvil?.stop();
});

describe.runIf(process.platform === "linux")("NODEGATE_WORKERS", () => {
  it("two workers share one port and both answer", async () => {
    const workers = nodegate.workerPids();
    expect(workers).toHaveLength(2);
    const before = workers.map(cpuTicks);
    // Many connections, so the primary hands some to each worker.
    const agent = new Agent({ connections: 32, pipelining: 0 });
    const calls = Array.from({ length: 400 }, (_, i) =>
      request(`http://127.0.0.1:${nodegate.port}/v3/${KEY}`, {
        method: "POST",
        headers: { "content-type": "application/json", connection: "close" },
        body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "eth_chainId", params: [] }),
        dispatcher: agent,
      }).then((r) => r.body.json() as Promise<{ id: number; result: string }>),
    );
    const replies = await Promise.all(calls);
    await agent.close();
    replies.forEach((r, i) => expect(r).toEqual({ jsonrpc: "2.0", id: i, result: "0x7a69" }));
    const after = workers.map(cpuTicks);
    after.forEach((ticks, i) => expect(ticks).toBeGreaterThan(before[i] as number));
  });

  it("every /metrics scrape counts the calls of both workers, whichever worker takes it", async () => {
    // Found from outside: each scrape showed only the worker that took the connection.
    const counted = 'nodegate_requests_total{door="jsonrpc-http",method="eth_chainId",outcome="ok"}';
    for (let i = 0; i < 4; i++) {
      // A new connection per scrape, so the scrapes land on both workers.
      const res = await request(`http://127.0.0.1:${nodegate.port}/metrics`, { headers: { connection: "close" } });
      const text = await res.body.text();
      const line = text.split("\n").find((l) => l.startsWith(`${counted} `));
      expect(line).toBe(`${counted} 400`);
    }
  });

  it("a worker that dies while /metrics scrapes are in flight does not take the primary down", async () => {
    // Found from outside: the primary answered the dead worker's scrape once prom-client gave up waiting for its
    // metrics (5 s), and the send to a closed channel threw in the primary, which took every worker with it.
    let scraping = true;
    const stop = new AbortController();
    // Eight loops' requests listen on it at once (undici adds its own listeners): not the leak Node warns of past ten.
    setMaxListeners(64, stop.signal);
    const outcomes: { at: number; outcome: string }[] = [];
    // Kept-alive connections, handed to the workers in turn: each worker always has scrapes of its own in flight.
    const agent = new Agent({ connections: 8, pipelining: 1 });
    const scrapeLoop = async () => {
      while (scraping) {
        await request(`http://127.0.0.1:${nodegate.port}/metrics`, { dispatcher: agent, signal: stop.signal })
          .then(async (res) => outcomes.push({ at: Date.now(), outcome: `${res.statusCode} ${(await res.body.text()).length > 0}` }))
          .catch((err: Error) => outcomes.push({ at: Date.now(), outcome: err.message }));
      }
    };
    const loops = Array.from({ length: 8 }, scrapeLoop);
    await new Promise((r) => setTimeout(r, 500));
    const [victim, other] = nodegate.workerPids() as [number, number];
    // While the other worker is stopped, every scrape waits for its metrics (prom-client gives up after 5 s), so the
    // victim surely has scrapes waiting in the primary when it is killed.
    process.kill(other, "SIGSTOP");
    await new Promise((r) => setTimeout(r, 1000));
    process.kill(victim, "SIGKILL");
    const killedAt = Date.now();
    await new Promise((r) => setTimeout(r, 200));
    process.kill(other, "SIGCONT");
    // Past prom-client's 5 s wait, when the primary answers the scrapes it was holding.
    await new Promise((r) => setTimeout(r, 7000));
    scraping = false;
    stop.abort();
    await Promise.all(loops);
    await agent.destroy();
    expect(alive(nodegate.primary.pid as number)).toBe(true);
    expect(nodegate.stderr()).not.toMatch(/ERR_IPC_CHANNEL_CLOSED|EPIPE/);
    const res = await request(`http://127.0.0.1:${nodegate.port}/v3/${KEY}`, {
      method: "POST",
      headers: { "content-type": "application/json", connection: "close" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    });
    expect(await res.body.json()).toEqual({ jsonrpc: "2.0", id: 1, result: "0x7a69" });
    // Scrapes went on being answered once the primary had given up on the dead worker's metrics. (A connection the
    // primary was handing to the worker as it died may hang: Node's cluster keeps it; that is not counted here.)
    expect(outcomes.filter((o) => o.at > killedAt + 6000 && o.outcome === "200 true").length).toBeGreaterThan(0);
  }, 20_000);

  it("a worker that dies is replaced, and the primary says so", async () => {
    // Found from outside: a worker crash and its replacement left no trace anywhere.
    const [victim] = nodegate.workerPids();
    process.kill(victim as number, "SIGKILL");
    for (let i = 0; i < 250 && !(nodegate.workerPids().length === 2 && !nodegate.workerPids().includes(victim as number)); i++) await new Promise((r) => setTimeout(r, 20));
    expect(nodegate.workerPids()).toHaveLength(2);
    expect(nodegate.workerPids()).not.toContain(victim);
    expect(nodegate.stderr()).toContain(`nodegate: worker ${victim} exited (SIGKILL); starting another`);
  });

  it("SIGTERM to the primary stops every worker", async () => {
    const workers = nodegate.workerPids();
    const exited = new Promise<number | null>((resolve) => nodegate.primary.once("exit", (code) => resolve(code)));
    nodegate.primary.kill("SIGTERM");
    expect(await exited).toBe(0);
    for (const pid of workers) {
      for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 20));
      expect(alive(pid)).toBe(false);
    }
  });
});

describe.runIf(process.platform === "linux")("NODEGATE_WORKERS, /metrics when a worker dies", () => {
  // A primary of its own, started with both workers listening: the other tests leave workers starting.
  let primary: WorkersPrimary;
  beforeAll(async () => {
    primary = await startWorkersPrimary({ NODEGATE_UPSTREAM_URL: anvil.url, NODEGATE_API_KEYS: `${KEY}:custom`, NODEGATE_WORKERS: "2", NODEGATE_LOG_LEVEL: "warn" });
  }, 60_000);
  afterAll(() => primary?.kill());

  it("a worker's death neither fails the scrapes while its replacement starts nor takes its counts out of the sums", async () => {
    // Found from outside: while a replacement started, every scrape waited 5 s and answered 503, and once the dead
    // worker was gone the summed counters went back (296 to 172), which Prometheus reads as a reset.
    const counted = 'nodegate_requests_total{door="jsonrpc-http",method="eth_chainId",outcome="ok"}';
    const scrape = async () => {
      const res = await request(`http://127.0.0.1:${primary.port}/metrics`, { headers: { connection: "close" } });
      const line = (await res.body.text()).split("\n").find((l) => l.startsWith(`${counted} `));
      return { status: res.statusCode, value: Number(line?.slice(counted.length + 1)) };
    };
    // Both workers answer calls (new connections are handed out in turn), and a scrape reads them all.
    for (let i = 0; i < 40; i++) {
      await request(`http://127.0.0.1:${primary.port}/v3/${KEY}`, {
        method: "POST",
        headers: { "content-type": "application/json", connection: "close" },
        body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "eth_chainId", params: [] }),
      }).then((r) => r.body.text());
    }
    const before = await scrape();
    expect(before.status).toBe(200);
    const [victim] = primary.workerPids();
    process.kill(victim as number, "SIGKILL");
    // A connection the primary hands to the worker before it sees the death hangs (Node's cluster): wait until it has.
    for (let i = 0; i < 250 && !primary.stderr().includes(`worker ${victim} exited`); i++) await new Promise((r) => setTimeout(r, 20));
    // Through the replacement's start: it is forked half a second after the death and takes a while to listen.
    const seen: { status: number; value: number }[] = [];
    for (let i = 0; i < 20; i++) {
      seen.push(await scrape());
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const s of seen) {
      expect(s.status).toBe(200);
      expect(s.value).toBeGreaterThanOrEqual(before.value);
    }
  }, 30_000);
});

describe.runIf(process.platform === "linux")("NODEGATE_WORKERS, the primary lost", () => {
  it("each worker answers the calls it holds, then stops", async () => {
    // Found from outside: with the primary killed, Node's cluster ended the workers at once: calls in flight got an
    // empty reply and WebSockets 1006, though the workers have a drain for exactly this.
    const slow = await startProgrammableUpstream((r) => (r.method === "eth_getBalance" ? { delayMs: 1500, then: { result: "0x7a69" } } : { forward: anvil.url }));
    const primary = await startWorkersPrimary({ NODEGATE_UPSTREAM_URL: slow.url, NODEGATE_API_KEYS: `${KEY}:custom`, NODEGATE_WORKERS: "2", NODEGATE_LOG_LEVEL: "warn" });
    try {
      const workers = primary.workerPids();
      const calls = Array.from({ length: 4 }, (_, i) =>
        request(`http://127.0.0.1:${primary.port}/v3/${KEY}`, {
          method: "POST",
          headers: { "content-type": "application/json", connection: "close" },
          body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "eth_getBalance", params: [`0x${String(i + 1).padStart(40, "0")}`, "latest"] }),
        }).then(
          async (res) => ((await res.body.json()) as { result?: string }).result ?? "no result",
          (err: Error) => err.message,
        ),
      );
      for (let i = 0; i < 100 && slow.count("eth_getBalance") < 4; i++) await new Promise((r) => setTimeout(r, 20));
      expect(slow.count("eth_getBalance")).toBe(4);
      primary.primary.kill("SIGKILL");
      expect(await Promise.all(calls)).toEqual(["0x7a69", "0x7a69", "0x7a69", "0x7a69"]);
      for (const pid of workers) {
        for (let i = 0; i < 250 && alive(pid); i++) await new Promise((r) => setTimeout(r, 20));
        expect(alive(pid)).toBe(false);
      }
    } finally {
      primary.kill();
      await slow.close();
    }
  }, 30_000);
});

describe.runIf(process.platform === "linux")("NODEGATE_WORKERS, every worker lost at once", () => {
  it("the primary stays and starts new workers on the same port", async () => {
    // Found from outside: with no worker left, the only thing keeping the primary alive was the unref'd timer that
    // starts the next worker, so it exited with code 0 and the port stayed dark. A fixed port, as in production:
    // with port 0, workers that start after every listener is gone would get a new one.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port: free } = probe.address() as AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    const primary = await startWorkersPrimary({ NODEGATE_UPSTREAM_URL: anvil.url, NODEGATE_API_KEYS: `${KEY}:custom`, NODEGATE_WORKERS: "2", NODEGATE_LOG_LEVEL: "warn", NODEGATE_PORT: String(port) });
    try {
      const before = primary.workerPids();
      for (const pid of before) process.kill(pid, "SIGKILL");
      const chainId = () =>
        request(`http://127.0.0.1:${port}/v3/${KEY}`, {
          method: "POST",
          headers: { "content-type": "application/json", connection: "close" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
        }).then(
          async (res) => ((await res.body.json()) as { result?: string }).result,
          (err: Error) => err.message,
        );
      await expect.poll(chainId, { timeout: 20_000, interval: 200 }).toBe("0x7a69");
      expect(alive(primary.primary.pid as number)).toBe(true);
      const after = primary.workerPids();
      expect(after).toHaveLength(2);
      for (const pid of before) expect(after).not.toContain(pid);
    } finally {
      primary.kill();
    }
  }, 60_000);
});
