/**
 * NODEGATE_WORKERS=N runs N worker processes on one port: connections are
 * shared among them, every worker answers, and stopping the primary stops
 * them all. Started as an operator would start it (src/main.ts).
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent, request } from "undici";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { startWorkersPrimary, type WorkersPrimary } from "../support/workers-primary.js";

const KEY = "cluster-key-0123456789";
let anvil: AnvilNode;
let nodegate: WorkersPrimary;

function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

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
