/**
 * Soak: nodegate as a child process (started as npm start starts it, plus
 * its inspector on 127.0.0.1) in front of a local Anvil, all on 127.0.0.1,
 * under mixed calls on every front door at once (native HTTP with batches,
 * native WebSocket, gRPC, Connect binary and JSON) for SOAK_SECONDS (default 60). Every
 * answer is checked against its call (ids, and contents that only the right
 * answer has). nodegate's heap is read after full garbage collections every
 * 10 s from the end of a warm-up to shortly before the end, under the same
 * load; its RSS is sampled from /proc every second and reported. Prints a
 * table, and exits 1 when any call was lost, mismatched or failed, the heap
 * retained after garbage collection grew 3% or more after warm-up (along the
 * line fitted through the readings), or nodegate did not stop cleanly on
 * SIGTERM.
 *
 *   npm run soak                               # 60 s, 4 calls in flight per door
 *   SOAK_SECONDS=600 SOAK_CONCURRENCY=8 npm run soak
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import WebSocket from "ws";
import { type AnvilNode, freePort, startAnvil } from "../src/embedded/anvil.js";
import { connectDoor, type Door, grpcDoor, nativeHttpDoor, nativeWsDoor } from "./soak/doors.js";
import { type Chain, nextProbe } from "./soak/workload.js";

const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY ?? 4);
/** RSS is compared as medians over this many one-second samples, so one garbage collection does not decide. */
const RSS_WINDOW = 10;
// Node's heap (and so its RSS) grows to fit the load for a while; on a busy machine that takes longer.
// A short run still keeps two RSS windows after its warm-up.
const WARMUP_SECONDS = Number(process.env.SOAK_WARMUP_SECONDS ?? Math.min(Math.max(30, Math.round(SECONDS * 0.5)), Math.max(0, SECONDS - 2 * RSS_WINDOW)));
const CALL_TIMEOUT_MS = 10_000;
/** What survives a full garbage collection may grow this much from warm-up to the end (bounded caches settle). */
const HEAP_GROWTH_LIMIT = 0.03;
const HEAP_READING_BEFORE_END_SECONDS = 3;
const HEAP_READING_EVERY_SECONDS = 10;
const BLOCKS = 64;
const ACCOUNTS = 16;
const KEY = `soak-${randomBytes(8).toString("hex")}`;
const ROOT = join(import.meta.dirname, "..");

async function anvilRpc(anvil: AnvilNode, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(anvil.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  const answer = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
  return answer.result;
}

/** Mines blocks and funds accounts with distinct balances; reads back what the checks need. */
async function prepareChain(anvil: AnvilNode): Promise<Chain> {
  await anvilRpc(anvil, "anvil_mine", [`0x${BLOCKS.toString(16)}`]);
  const hashes: string[] = [];
  for (let n = 0; n <= BLOCKS; n++) hashes.push(((await anvilRpc(anvil, "eth_getBlockByNumber", [`0x${n.toString(16)}`, false])) as { hash: string }).hash);
  const accounts = Array.from({ length: ACCOUNTS }, (_, i) => ({ address: `0x${randomBytes(20).toString("hex")}`, wei: 10n ** 18n + BigInt(i) * 7919n }));
  for (const a of accounts) await anvilRpc(anvil, "anvil_setBalance", [a.address, `0x${a.wei.toString(16)}`]);
  return { hashes, accounts };
}

async function startNodegate(anvil: AnvilNode, port: number): Promise<{ child: ChildProcess; inspector: string }> {
  // The inspector (127.0.0.1, a free port) is how the soak collects garbage in nodegate before reading its heap.
  const child = spawn(process.execPath, ["--inspect=127.0.0.1:0", "--import", "tsx", join(ROOT, "src/main.ts")], {
    cwd: ROOT,
    env: { ...process.env, NODEGATE_UPSTREAM_URL: anvil.url, NODEGATE_PORT: String(port), NODEGATE_HOST: "127.0.0.1", NODEGATE_API_KEYS: `${KEY}:custom`, NODEGATE_LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let errors = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => {
    const text = d.toString();
    errors += text;
    // The inspector's own lines are expected; anything else nodegate writes there is shown.
    for (const line of text.split("\n")) if (line && !/^(Debugger listening on|Debugger ending on|For help, see|Debugger attached|Waiting for the debugger)/.test(line)) process.stderr.write(`${line}\n`);
  });
  for (let i = 0; i < 400 && !output.includes("nodegate is running"); i++) await new Promise((r) => setTimeout(r, 50));
  if (!output.includes("nodegate is running")) throw new Error(`nodegate did not start:\n${output}`);
  const inspector = /Debugger listening on (ws:\/\/\S+)/.exec(errors)?.[1];
  if (inspector === undefined) throw new Error("nodegate's inspector did not start");
  return { child, inspector };
}

/** When the heap is read: from the end of the warm-up every HEAP_READING_EVERY_SECONDS, the last shortly before the end. */
function heapReadingTimes(): number[] {
  const last = Math.max(WARMUP_SECONDS + 1, SECONDS - HEAP_READING_BEFORE_END_SECONDS);
  const times: number[] = [];
  for (let t = WARMUP_SECONDS; t < last; t += HEAP_READING_EVERY_SECONDS) times.push(t);
  times.push(last);
  return times;
}

const retained = (h: HeapFigures) => h.heapUsed + h.external;

/**
 * Growth of the retained heap from the first reading to the last, read off the
 * least-squares line through all readings rather than from the two ends: one
 * reading catches whichever calls happen to be in flight (a block of full
 * transactions more or less moves it by a percent), while a leak raises them all.
 */
function retainedGrowth(readings: readonly HeapReading[]): number {
  const n = readings.length;
  const meanT = readings.reduce((sum, r) => sum + r.t, 0) / n;
  const meanY = readings.reduce((sum, r) => sum + retained(r), 0) / n;
  let covariance = 0;
  let variance = 0;
  for (const r of readings) {
    covariance += (r.t - meanT) * (retained(r) - meanY);
    variance += (r.t - meanT) ** 2;
  }
  const slope = variance === 0 ? 0 : covariance / variance;
  const first = readings[0] as HeapReading;
  const last = readings[n - 1] as HeapReading;
  const atFirst = meanY + slope * (first.t - meanT);
  return (slope * (last.t - first.t)) / atFirst;
}

interface HeapReading extends HeapFigures {
  /** Seconds since the load started. */
  t: number;
}

interface HeapFigures {
  /** V8 heap in use after a full garbage collection, bytes. */
  heapUsed: number;
  /** Memory of JS objects held outside the V8 heap (Buffers), bytes. */
  external: number;
}

/**
 * nodegate's heap right after full garbage collections, through its inspector.
 * RSS alone cannot tell a leak from a heap that is still growing to fit the
 * load (it kept rising for over a minute on this machine before levelling off);
 * what survives a full collection can.
 */
async function heapAfterGc(inspector: string): Promise<HeapFigures> {
  const socket = new WebSocket(inspector);
  await once(socket, "open");
  let next = 0;
  const pending = new Map<number, (result: unknown) => void>();
  socket.on("message", (data) => {
    const message = JSON.parse(data.toString()) as { id?: number; result?: unknown };
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
  });
  const send = (method: string, params: object = {}) =>
    new Promise<unknown>((resolve) => {
      const id = ++next;
      pending.set(id, resolve);
      socket.send(JSON.stringify({ id, method, params }));
    });
  const read = async (): Promise<HeapFigures> => {
    await send("HeapProfiler.collectGarbage");
    const answer = (await send("Runtime.evaluate", { expression: "JSON.stringify(process.memoryUsage())", returnByValue: true })) as { result: { value: string } };
    const usage = JSON.parse(answer.result.value) as { heapUsed: number; external: number };
    return { heapUsed: usage.heapUsed, external: usage.external };
  };
  try {
    // Calls in flight hold memory too: the smallest of three readings is the retained part.
    const readings = [await read(), await read(), await read()];
    return { heapUsed: Math.min(...readings.map((r) => r.heapUsed)), external: Math.min(...readings.map((r) => r.external)) };
  } finally {
    socket.close();
  }
}

/** VmRSS of a process, in bytes. */
function rssOf(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : Number.NaN;
}

interface DoorStats {
  calls: number;
  ok: number;
  mismatched: number;
  errors: number;
  lost: number;
  latenciesMs: number[];
  sample?: string;
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number);
}

const median = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 50);
const mib = (b: number) => `${(b / 1048576).toFixed(1)} MiB`;

async function runDoor(door: Door, chain: Chain, until: number, stats: DoorStats): Promise<void> {
  const worker = async () => {
    while (Date.now() < until) {
      const probe = nextProbe(chain);
      const started = performance.now();
      let timer: NodeJS.Timeout | undefined;
      const verdict = await Promise.race([
        door.call(probe).catch((err: unknown) => ({ outcome: "error" as const, calls: 1, detail: (err as Error).message })),
        new Promise<undefined>((resolve) => {
          timer = setTimeout(() => resolve(undefined), CALL_TIMEOUT_MS);
        }),
      ]);
      clearTimeout(timer);
      if (verdict === undefined) {
        stats.calls++;
        stats.lost++;
        continue;
      }
      stats.latenciesMs.push(performance.now() - started);
      stats.calls += verdict.calls;
      if (verdict.outcome === "ok") stats.ok += verdict.calls;
      else {
        if (verdict.outcome === "mismatch") stats.mismatched += verdict.calls;
        else stats.errors += verdict.calls;
        stats.sample ??= verdict.detail;
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

async function main(): Promise<void> {
  const anvil = await startAnvil();
  const chain = await prepareChain(anvil);
  const port = await freePort();
  const { child, inspector } = await startNodegate(anvil, port);
  const pid = child.pid as number;
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const base = `http://127.0.0.1:${port}`;
  const doors: Door[] = [
    nativeHttpDoor(`${base}/v3/${KEY}`, chain, () => nextProbe(chain)),
    await nativeWsDoor(`ws://127.0.0.1:${port}/ws/v3/${KEY}`, chain),
    grpcDoor(`127.0.0.1:${port}`, KEY, chain),
    connectDoor(base, KEY, chain, "binary"),
    connectDoor(base, KEY, chain, "json"),
  ];
  const stats = doors.map((): DoorStats => ({ calls: 0, ok: 0, mismatched: 0, errors: 0, lost: 0, latenciesMs: [] }));

  process.stdout.write(`soak: ${SECONDS} s, ${CONCURRENCY} calls in flight per door, warm-up ${WARMUP_SECONDS} s, nodegate pid ${pid} on 127.0.0.1:${port}, upstream Anvil\n`);
  const started = Date.now();
  const samples: { t: number; rss: number }[] = [];
  const sampler = setInterval(() => samples.push({ t: (Date.now() - started) / 1000, rss: rssOf(pid) }), 1000);
  const progress = setInterval(() => {
    const done = stats.reduce((n, s) => n + s.calls, 0);
    process.stdout.write(`  ${Math.round((Date.now() - started) / 1000)} s: ${done} calls, RSS ${mib(rssOf(pid))}\n`);
  }, 10_000);
  const until = started + SECONDS * 1000;
  // Every heap reading is taken under the same load, from the end of the warm-up to shortly before the end.
  const at = (seconds: number) =>
    new Promise<HeapReading>((resolve, reject) => setTimeout(() => heapAfterGc(inspector).then((h) => resolve({ t: seconds, ...h }), reject), seconds * 1000));
  const heapReadings = Promise.all(heapReadingTimes().map(at));
  await Promise.all(doors.map((door, i) => runDoor(door, chain, until, stats[i] as DoorStats)));
  const heap = await heapReadings;
  const elapsed = (Date.now() - started) / 1000;
  clearInterval(sampler);
  clearInterval(progress);
  samples.push({ t: elapsed, rss: rssOf(pid) });

  for (const door of doors) await door.close();
  child.kill("SIGTERM");
  const exitCode = await exited;
  await anvil.stop();

  // Report.
  const rows = doors.map((door, i) => {
    const s = stats[i] as DoorStats;
    const sorted = [...s.latenciesMs].sort((a, b) => a - b);
    return [door.name, s.calls, s.ok, s.mismatched, s.errors, s.lost, (s.calls / elapsed).toFixed(0), percentile(sorted, 50).toFixed(2), percentile(sorted, 99).toFixed(2)];
  });
  const total = stats.reduce((t, s) => ({ calls: t.calls + s.calls, ok: t.ok + s.ok, mismatched: t.mismatched + s.mismatched, errors: t.errors + s.errors, lost: t.lost + s.lost }), {
    calls: 0,
    ok: 0,
    mismatched: 0,
    errors: 0,
    lost: 0,
  });
  rows.push(["total", total.calls, total.ok, total.mismatched, total.errors, total.lost, (total.calls / elapsed).toFixed(0), "", ""]);
  const header = ["door", "calls", "ok", "mismatched", "errors", "lost", "calls/s", "p50 ms", "p99 ms"];
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells: (string | number)[]) => cells.map((v, c) => (c === 0 ? String(v).padEnd(widths[c] as number) : String(v).padStart(widths[c] as number))).join("  ");
  process.stdout.write(`\n${line(header)}\n${rows.map(line).join("\n")}\n`);
  for (const [i, s] of stats.entries()) if (s.sample) process.stdout.write(`  first problem on ${doors[i]?.name}: ${s.sample}\n`);

  const heapGrowth = retainedGrowth(heap);
  const warmHeap = heap[0] as HeapReading;
  const endHeap = heap[heap.length - 1] as HeapReading;
  process.stdout.write(
    `\nnodegate heap after full GC: ${mib(warmHeap.heapUsed)} + ${mib(warmHeap.external)} external at ${warmHeap.t} s, ` +
      `${mib(endHeap.heapUsed)} + ${mib(endHeap.external)} external at ${endHeap.t} s; ` +
      `heap + external at each reading: ${heap.map((h) => mib(retained(h))).join(", ")}\n` +
      `growth along the line fitted through the ${heap.length} readings: ${(heapGrowth * 100).toFixed(1)}% (limit ${HEAP_GROWTH_LIMIT * 100}%)\n`,
  );
  const warm = samples.filter((x) => x.t >= WARMUP_SECONDS).slice(0, RSS_WINDOW).map((x) => x.rss);
  const end = samples.slice(-RSS_WINDOW).map((x) => x.rss);
  const warmRss = median(warm);
  const endRss = median(end);
  const growth = (endRss - warmRss) / warmRss;
  const after = samples.filter((x) => x.t >= WARMUP_SECONDS).map((x) => x.rss);
  process.stdout.write(
    `nodegate RSS (for information): ${mib(warmRss)} after warm-up (median of ${warm.length} samples from ${WARMUP_SECONDS} s), ${mib(endRss)} at the end (median of the last ${end.length}), ` +
      `growth ${(growth * 100).toFixed(1)}%; range after warm-up ${mib(Math.min(...after))} to ${mib(Math.max(...after))}; peak ${mib(Math.max(...samples.map((x) => x.rss)))}\n`,
  );
  process.stdout.write(`nodegate exit code after SIGTERM: ${exitCode}\n`);

  const problems = [
    total.lost > 0 ? `${total.lost} calls lost` : "",
    total.mismatched > 0 ? `${total.mismatched} answers did not match their calls` : "",
    total.errors > 0 ? `${total.errors} calls failed` : "",
    !(heapGrowth < HEAP_GROWTH_LIMIT) ? `the heap after full GC grew ${(heapGrowth * 100).toFixed(1)}% after warm-up` : "",
    exitCode !== 0 ? `nodegate exited with ${exitCode}` : "",
    SECONDS < 60 ? `ran ${SECONDS} s, less than the 60 s a soak needs` : "",
  ].filter(Boolean);
  process.stdout.write(problems.length === 0 ? "\nPASS\n" : `\nFAIL: ${problems.join("; ")}\n`);
  process.exitCode = problems.length === 0 ? 0 : 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`soak: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
