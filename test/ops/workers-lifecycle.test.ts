/**
 * NODEGATE_WORKERS: what the group keeps across a worker's life and death
 * (found from outside, on a private clone with faults): /metrics counts
 * neither lost nor counted twice, one configuration for every worker however
 * its file changes later, the embedded node reached as configured, a worker
 * whose primary is gone finishing its drain whatever it is asked, and a
 * signal while starting leaving nothing behind.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client, request } from "undici";
import { connect } from "node:net";
import { type AnvilNode, freePort, startAnvil } from "../../src/embedded/anvil.js";
import { startProgrammableUpstream } from "../support/programmable-upstream.js";
import { processAlive, startWorkersPrimary, type WorkersPrimary } from "../support/workers-primary.js";
import { testTempDir } from "../support/temp-dir.js";

const KEY = "lifecycle-key-0123456789";
const COUNTED = 'nodegate_requests_total{door="jsonrpc-http",method="eth_chainId",outcome="ok"}';
let anvil: AnvilNode;

beforeAll(async () => {
  anvil = await startAnvil();
});
afterAll(async () => {
  await anvil?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const alive = processAlive;

function childrenOf(pid: number): number[] {
  const text = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
  return text === "" ? [] : text.split(/\s+/).map(Number);
}

/** Whether `pid` holds an established TCP connection on local port `port` (the server side of a client's), from /proc. */
function ownsConnectionTo(pid: number, port: number): boolean {
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  const inodes = new Set(
    readFileSync("/proc/net/tcp", "latin1")
      .split("\n")
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => f[1]?.endsWith(hexPort) && f[3] === "01")
      .map((f) => `socket:[${f[9]}]`),
  );
  return readdirSync(`/proc/${pid}/fd`).some((fd) => {
    try {
      return inodes.has(readlinkSync(`/proc/${pid}/fd/${fd}`));
    } catch {
      return false;
    }
  });
}

const commOf = (pid: number) => readFileSync(`/proc/${pid}/comm`, "utf8").trim();

/** A call on a connection of its own, so the primary hands each to the next worker. */
function post(port: number, body: unknown) {
  return request(`http://127.0.0.1:${port}/v3/${KEY}`, {
    method: "POST",
    headers: { "content-type": "application/json", connection: "close" },
    body: JSON.stringify(body),
    headersTimeout: 5000,
  }).then((r) => r.body.json() as Promise<unknown>);
}

async function scrape(port: number): Promise<number> {
  const res = await request(`http://127.0.0.1:${port}/metrics`, { headers: { connection: "close" }, headersTimeout: 10_000 });
  const line = (await res.body.text()).split("\n").find((l) => l.startsWith(`${COUNTED} `));
  return Number(line?.slice(COUNTED.length + 1) ?? 0);
}

/** Waits until the primary has replaced `victim`: it said so, and `count` workers listen again. */
async function replaced(primary: WorkersPrimary, victim: number, count: number): Promise<void> {
  for (let i = 0; i < 300 && !primary.stderr().includes(`worker ${victim} exited`); i++) await sleep(20);
  await expect.poll(() => primary.workerPids().filter((p) => p !== victim).length, { timeout: 15_000 }).toBe(count);
  // The replacement listens a while after its fork: a call answered on each of `count` fresh connections says so.
  await expect
    .poll(async () => (await Promise.all(Array.from({ length: count * 2 }, () => post(primary.port, { jsonrpc: "2.0", id: 0, method: "eth_chainId", params: [] }).catch(() => undefined)))).every(Boolean), {
      timeout: 15_000,
    })
    .toBe(true);
}

describe.runIf(process.platform === "linux")("NODEGATE_WORKERS: /metrics counts", () => {
  let primary: WorkersPrimary;
  beforeAll(async () => {
    primary = await startWorkersPrimary({ NODEGATE_PORT: String(await freePort()), NODEGATE_UPSTREAM_URL: anvil.url, NODEGATE_API_KEYS: `${KEY}:custom`, NODEGATE_WORKERS: "3", NODEGATE_LOG_LEVEL: "warn" });
  }, 60_000);
  afterAll(() => {
    for (const pid of primary?.workerPids() ?? []) if (alive(pid)) process.kill(pid, "SIGCONT");
    primary?.kill();
  });

  it("a worker stopped by SIGTERM leaves every count it made in the sums, those since the last scrape too", async () => {
    const before = await scrape(primary.port);
    for (let i = 0; i < 30; i++) await post(primary.port, { jsonrpc: "2.0", id: i, method: "eth_chainId", params: [] });
    const [victim] = primary.workerPids();
    process.kill(victim as number, "SIGTERM");
    for (let i = 0; i < 300 && alive(victim as number); i++) await sleep(20);
    for (let i = 0; i < 300 && !primary.stderr().includes(`worker ${victim} exited`); i++) await sleep(20);
    // 20 of the 30 went to the others on average; before the fix only the victim's counts as of the last scrape stayed.
    expect(await scrape(primary.port)).toBe(before + 30);
    await replaced(primary, victim as number, 3);
  }, 60_000);

  it("a worker that dies while a scrape waits for another is not counted twice (the next scrape's counters never go back)", async () => {
    // The scrapes go on one connection, so they land on a worker that is neither stopped nor killed.
    const client = new Client(`http://127.0.0.1:${primary.port}`, { headersTimeout: 10_000 });
    const scrapeOn = async () => {
      const res = await client.request({ path: "/metrics", method: "GET" });
      const line = (await res.body.text()).split("\n").find((l) => l.startsWith(`${COUNTED} `));
      return Number(line?.slice(COUNTED.length + 1) ?? 0);
    };
    const stopped: number[] = [];
    try {
      for (let i = 0; i < 30; i++) await post(primary.port, { jsonrpc: "2.0", id: i, method: "eth_chainId", params: [] });
      const baseline = await scrapeOn(); // every worker's totals as of now are known to the primary
      const workers = primary.workerPids();
      const scraper = workers.find((pid) => ownsConnectionTo(pid, primary.port));
      expect(scraper).toBeDefined();
      const [victim, sleeper] = workers.filter((pid) => pid !== scraper);
      process.kill(sleeper as number, "SIGSTOP"); // the scrape waits its whole second for this one
      stopped.push(sleeper as number);
      const during = scrapeOn();
      await sleep(300);
      process.kill(victim as number, "SIGKILL");
      const first = await during;
      for (let i = 0; i < 300 && !primary.stderr().includes(`worker ${victim} exited`); i++) await sleep(20);
      const second = await scrapeOn();
      expect(first).toBeGreaterThanOrEqual(baseline);
      expect(second).toBeGreaterThanOrEqual(first);
    } finally {
      for (const pid of stopped) process.kill(pid, "SIGCONT");
      await client.close();
    }
  }, 60_000);
});

describe.runIf(process.platform === "linux")("NODEGATE_WORKERS: one configuration", () => {
  it("a replacement worker serves with the configuration its primary checked, whatever the file says by then", async () => {
    const dir = testTempDir("nodegate-workers-");
    const file = join(dir, "nodegate.yaml");
    writeFileSync(file, "limits:\n  maxBatchSize: 5\n");
    // A fixed port, as in production: with port 0, a worker that starts after every listener is gone gets another.
    const primary = await startWorkersPrimary({ NODEGATE_PORT: String(await freePort()), NODEGATE_CONFIG: file, NODEGATE_UPSTREAM_URL: anvil.url, NODEGATE_API_KEYS: `${KEY}:custom`, NODEGATE_WORKERS: "2", NODEGATE_LOG_LEVEL: "warn" });
    try {
      const batchOfFour = () => post(primary.port, [1, 2, 3, 4].map((id) => ({ jsonrpc: "2.0", id, method: "eth_chainId", params: [] })));
      // A smaller batch limit, then a file that no longer loads: each replacement still serves as its sibling does.
      for (const changed of ["limits:\n  maxBatchSize: 3\n", "bogus: 1\n"]) {
        writeFileSync(file, changed);
        const [victim] = primary.workerPids();
        process.kill(victim as number, "SIGKILL");
        await replaced(primary, victim as number, 2);
        const replies = (await Promise.all(Array.from({ length: 8 }, batchOfFour))) as { result?: string }[][];
        for (const reply of replies) expect(reply.map((r) => r.result)).toEqual(["0x7a69", "0x7a69", "0x7a69", "0x7a69"]);
      }
      expect(primary.stderr()).not.toContain("bogus");
    } finally {
      primary.kill();
    }
  }, 90_000);
});

describe.runIf(process.platform === "linux")("NODEGATE_WORKERS: a large configuration", () => {
  it("a file over 128 KiB (3,000 keys) starts with workers, and each serves its keys", async () => {
    // Found from outside: the file's text went to each worker in an environment variable, which Linux caps at 128 KiB;
    // a file check-config called valid failed to start with "spawn E2BIG".
    const dir = testTempDir("nodegate-workers-");
    const file = join(dir, "nodegate.yaml");
    const keys = Array.from({ length: 3000 }, (_, i) => `  - key: large-config-key-${String(i).padStart(6, "0")}-abcdefghijklmnop\n    plan: growth\n`);
    writeFileSync(file, `keys:\n${keys.join("")}`);
    expect(readFileSync(file).length).toBeGreaterThan(128 * 1024);
    const primary = await startWorkersPrimary({ NODEGATE_CONFIG: file, NODEGATE_UPSTREAM_URL: anvil.url, NODEGATE_WORKERS: "2", NODEGATE_LOG_LEVEL: "warn" });
    try {
      const last = "large-config-key-002999-abcdefghijklmnop";
      const call = () =>
        request(`http://127.0.0.1:${primary.port}/v3/${last}`, {
          method: "POST",
          headers: { "content-type": "application/json", connection: "close" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
        }).then((r) => r.body.json());
      // Each connection goes to the next worker: both serve the file's last key.
      for (const reply of await Promise.all([call(), call(), call(), call()])) expect(reply).toMatchObject({ result: "0x7a69" });
    } finally {
      primary.kill();
    }
  }, 60_000);
});

describe.runIf(process.platform === "linux")("NODEGATE_WORKERS: the embedded Anvil", () => {
  it("NODEGATE_UPSTREAM_TRANSPORT=ws: the workers reach it over its WebSocket, as one process does", async () => {
    const primary = await startWorkersPrimary({ NODEGATE_UPSTREAM_URL: "", NODEGATE_UPSTREAM_TRANSPORT: "ws", NODEGATE_API_KEYS: `${KEY}:custom`, NODEGATE_WORKERS: "2", NODEGATE_LOG_LEVEL: "warn" });
    try {
      expect(primary.stdout).toMatch(/embedded Anvil at ws:\/\//);
      expect(await post(primary.port, { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] })).toMatchObject({ result: "0x7a69" });
      const children = childrenOf(primary.primary.pid as number);
      const node = children.find((pid) => commOf(pid) === "anvil") as number;
      // Each worker was given the node's WebSocket address and no HTTP one: what it answered, it asked over the WebSocket.
      const workers = children.filter((pid) => commOf(pid) === "node");
      expect(workers).toHaveLength(2);
      for (const pid of workers) {
        const env = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
        expect(env).toContain(`NODEGATE_UPSTREAM_WS_URL=ws://127.0.0.1:${readFileSync(`/proc/${node}/cmdline`, "utf8").split("\0")[4]}`);
        expect(env.filter((e) => e.startsWith("NODEGATE_UPSTREAM_URL="))).toEqual(["NODEGATE_UPSTREAM_URL="]);
      }
      // With the node gone there is nothing to serve: the group says so, drains and exits 1 (found from outside: it went
      // on answering "calls are paused" with nothing naming the cause).
      const exited = new Promise((resolve) => primary.primary.once("exit", resolve));
      process.kill(node, "SIGKILL");
      expect(await Promise.race([exited, sleep(30_000).then(() => "still running after 30 s")])).toBe(1);
      expect(primary.stderr()).toContain("nodegate: the embedded Anvil exited (signal SIGKILL): stopping");
    } finally {
      primary.kill();
    }
  }, 60_000);

  it("a SIGTERM while the workers start stops them and the embedded Anvil, and the primary exits 0", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      env: { ...process.env, NODEGATE_UPSTREAM_URL: "", NODEGATE_PORT: "0", NODEGATE_WORKERS: "2", NODEGATE_LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
    let seen: number[] = [];
    try {
      // Once the node runs and the first worker is forked, before any listens. This loop once gave up after 5 s and
      // sent the SIGTERM anyway: on a loaded machine (3 test files at once and a helper's npm ci) the primary then
      // died of the signal (exit code null, which a SIGTERM 300 ms after the spawn also gives: before main.ts runs,
      // no handler is set). That is not the case this test is about, so it waits longer and checks it got there.
      const started = (p: number[]) => p.some((q) => commOf(q) === "anvil") && p.some((q) => commOf(q) !== "anvil");
      for (let i = 0; i < 3000 && !started(seen); i++) {
        await sleep(10);
        seen = childrenOf(child.pid as number);
      }
      expect(started(seen), `children seen: ${seen.map(commOf).join(", ")}`).toBe(true);
      child.kill("SIGTERM");
      const [code] = await once(child, "exit");
      expect(code).toBe(0);
      for (const pid of seen) {
        for (let i = 0; i < 300 && alive(pid); i++) await sleep(20);
        expect(alive(pid)).toBe(false);
      }
      expect(stderr).not.toMatch(/EPIPE|Unhandled/);
    } finally {
      for (const pid of seen) if (alive(pid)) process.kill(pid, "SIGKILL");
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  }, 60_000);
});

describe.runIf(process.platform === "linux")("NODEGATE_WORKERS: a worker whose primary is gone", () => {
  it("answers a scrape with its own metrics and goes on draining", async () => {
    const slow = await startProgrammableUpstream((r) => (r.method === "eth_getBalance" ? { delayMs: 3000, then: { result: "0x7a69" } } : { forward: anvil.url }));
    const primary = await startWorkersPrimary({ NODEGATE_UPSTREAM_URL: slow.url, NODEGATE_API_KEYS: `${KEY}:custom`, NODEGATE_WORKERS: "2", NODEGATE_LOG_LEVEL: "info" });
    let logged = "";
    primary.primary.stdout?.on("data", (chunk: Buffer) => (logged += chunk.toString()));
    const workers = primary.workerPids();
    // One raw connection: a second request on it is read while the first is answered (Node reads pipelined requests).
    const socket = connect(primary.port, "127.0.0.1");
    let received = "";
    socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")));
    socket.on("error", () => {});
    const closed = once(socket, "close");
    try {
      const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [`0x${"11".repeat(20)}`, "latest"] });
      socket.write(`POST /v3/${KEY} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
      for (let i = 0; i < 100 && slow.count("eth_getBalance") < 1; i++) await sleep(20);
      primary.primary.kill("SIGKILL");
      await sleep(1000); // the worker has seen its channel close, and drains
      socket.write("GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n");
      await closed;
      // The call's answer came (before the fix the scrape's send to the closed channel ended the worker, and the call
      // got nothing); then the scrape's, from this worker's own registry, or none: a draining worker may end the
      // connection after the answer it owes.
      expect(received).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*"result":"0x7a69"/);
      const scrape = received.indexOf("HTTP/1.1", 10);
      if (scrape >= 0) expect(received.slice(scrape)).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*nodegate_requests_total/);
      // Each worker's lines say which worker wrote them.
      await expect.poll(() => logged.split("\n").filter((l) => l.includes('"msg":"stopped"')).length, { timeout: 10_000 }).toBe(2);
      const stoppedBy = logged.split("\n").filter((l) => l.includes('"msg":"stopped"')).map((l) => (JSON.parse(l) as { pid?: number }).pid);
      expect(stoppedBy.sort()).toEqual([...workers].sort());
    } finally {
      socket.destroy();
      primary.kill();
      await slow.close();
    }
  }, 60_000);
});

describe.runIf(process.platform === "linux")("NODEGATE_WORKERS: a stop while the workers start", () => {
  // Found from outside: a signal between the first and the last worker listening made the primary exit 0 at once, while
  // the worker already listening still drained the calls it had been handed, left to itself (under a supervisor that
  // ends the group with its main process, those calls were cut). Worker 2 is held before it listens by a preloaded
  // module (test/support/hold-worker-start.mjs), so the window is as long as the test needs; worker 1 holds a call.
  type Trigger = { signals: NodeJS.Signals[] } | { worker2Exits: number } | { hung: true };
  const cases: [string, Trigger, number][] = [
    ["SIGTERM", { signals: ["SIGTERM"] }, 0],
    ["SIGINT", { signals: ["SIGINT"] }, 0],
    ["SIGHUP", { signals: ["SIGHUP"] }, 0],
    ["SIGTERM, then SIGINT during the drain", { signals: ["SIGTERM", "SIGINT"] }, 0],
    ["worker 2 failing to start (exit 3)", { worker2Exits: 3 }, 1],
    ["SIGTERM with a worker that never exits (killed after drainMs + 3 s)", { hung: true }, 1],
  ];
  it.each(cases)("%s: every worker drains and exits, then the primary, with the code a stop once all listen gives", async (_name, trigger, expectedCode) => {
    const slow = await startProgrammableUpstream((r) => (r.method === "eth_getBalance" ? { delayMs: 1500, then: { result: "0x2a" } } : { result: "0x7a69" }));
    const dir = testTempDir("nodegate-workers-");
    const release = join(dir, "release");
    const config = join(dir, "nodegate.yaml");
    writeFileSync(config, "drainMs: 500\n");
    const port = await freePort();
    const child = spawn(process.execPath, ["--import", "tsx", "--import", "./test/support/hold-worker-start.mjs", "src/main.ts"], {
      env: {
        ...process.env,
        NODEGATE_PORT: String(port),
        NODEGATE_UPSTREAM_URL: slow.url,
        NODEGATE_API_KEYS: `${KEY}:custom`,
        NODEGATE_WORKERS: "2",
        NODEGATE_LOG_LEVEL: "warn",
        NODEGATE_TEST_HOLD_WORKER: "2",
        NODEGATE_TEST_HOLD_FILE: release,
        NODEGATE_TEST_HOLD_EXIT: "worker2Exits" in trigger ? String(trigger.worker2Exits) : "",
        ...("hung" in trigger ? { NODEGATE_CONFIG: config } : {}),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? `signal ${signal}`)));
    let workers: number[] = [];
    try {
      // Worker 1 listens; worker 2 is held, so the banner (printed once all listen) has not come.
      await expect
        .poll(() => request(`http://127.0.0.1:${port}/healthz`, { headers: { connection: "close" } }).then((r) => r.body.text().then(() => r.statusCode), () => 0), { timeout: 20_000, interval: 50 })
        .toBe(200);
      workers = childrenOf(child.pid as number);
      expect(workers).toHaveLength(2);
      // Settled either way at once, so a call cut (the hung case, or a failure) is no unhandled rejection.
      const call = post(port, { jsonrpc: "2.0", id: 7, method: "eth_getBalance", params: [`0x${"aa".repeat(20)}`, "latest"] }).catch((err: unknown) => err);
      for (let i = 0; i < 250 && slow.count("eth_getBalance") < 1; i++) await sleep(20);
      expect(slow.count("eth_getBalance")).toBe(1);
      expect(stdout).not.toContain("workers:");
      if ("signals" in trigger) {
        for (const [i, signal] of trigger.signals.entries()) {
          if (i > 0) await sleep(100);
          child.kill(signal);
        }
      } else if ("worker2Exits" in trigger) {
        writeFileSync(release, "");
      } else {
        for (const pid of workers) process.kill(pid, "SIGSTOP");
        child.kill("SIGTERM");
      }
      const code = await Promise.race([exited, sleep(20_000).then(() => "still running 20 s after the stop")]);
      // Checked as the primary exits: none of its workers outlives it.
      const outlived = workers.filter(alive);
      expect({ code, outlived }).toEqual({ code: expectedCode, outlived: [] });
      if ("hung" in trigger) {
        expect(stderr).toContain("nodegate: a worker still running 3500 ms after SIGTERM was killed\n");
      } else {
        // The call the listening worker was handed got its answer before the group was gone.
        expect(await call).toMatchObject({ id: 7, result: "0x2a" });
      }
      if ("worker2Exits" in trigger) expect(stderr).toMatch(/nodegate: a worker exited with code 3 before listening \(its own message is above\)\n$/);
      else expect(stderr).not.toContain("before listening");
    } finally {
      for (const pid of workers) {
        if (!alive(pid)) continue;
        process.kill(pid, "SIGKILL");
        process.kill(pid, "SIGCONT");
      }
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await slow.close();
    }
  }, 40_000);
});
