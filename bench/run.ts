/**
 * nodegate's benchmark (`npm run bench`, or `npm run bench -- --quick`).
 *
 * Starts on 127.0.0.1, for a bounded time: a canned JSON-RPC upstream (and
 * slow copies of it with a fixed service time), Anvil, a reference
 * pass-through proxy in front of each, and nodegate in front of each (as a
 * separate process; also as two workers). Drives every target in interleaved
 * rounds at several concurrencies, then checks the cache and coalescing.
 * Prints tables with ratios to the reference proxy and the issue's targets
 * with verdicts, and writes everything to .bench/results-<timestamp>.json.
 * See bench/README.md for how to read it.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { cannedResults } from "./bodies.js";
import { blockCall, cacheableCalls, type CallSpec, cannedBlockNumbers, ethCall, logsCall, smallCall } from "./calls.js";
import { connectClient, grpcClient, jsonRpcClient, run } from "./load.js";
import { type CellResult, measureCells, type Target, type Timing } from "./matrix.js";
import { rssBytes, rssSampler } from "./proc-stats.js";
import { type Service, startBenchAnvil, startCannedUpstream, startIdleGrpcServer, startNodegate, startRefProxy, stopAll } from "./processes.js";
import { cellTables, type Verdict, verdictTable } from "./report.js";

const quick = process.argv.includes("--quick");
/** --only=canned,anvil,rss,cache,coalescing runs just those parts (for working on one figure). */
const only = process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length).split(",");
const runs = (part: string) => only === undefined || only.includes(part);
const KEY = "bench-key-0123456789abcdef";
const timing: Timing = quick ? { rounds: 1, warmMs: 100, measureMs: 300 } : { rounds: 2, warmMs: 150, measureMs: 700 };
const slowTiming: Timing = quick ? { rounds: 1, warmMs: 200, measureMs: 600 } : { rounds: 2, warmMs: 300, measureMs: 1500 };
/**
 * Before any cell is measured, every target serves every call of its table for this long (at
 * WARMUP_CONCURRENCY), so V8 has compiled the hot paths of every process (the proxies, the
 * upstream, this load generator) as it has in a process that has been serving for a while. Each
 * cell's own warm-up (a fraction of a second) is too short for that: measured cold, a process
 * spends several times its steady CPU per call, and the first cells (the c1 latencies) read that.
 */
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? (quick ? 600 : 1500));
const WARMUP_CONCURRENCY = 8;
const concurrencies = quick ? [1, 64] : [1, 16, 64];
/** 64 calls of 10,000 logs in flight take seconds to drain on the slow doors: the quick run stops at 16. */
const logsConcurrencies = quick ? [1, 16] : concurrencies;
const RSS_CONCURRENCY = 16;
/** The small-call table's gRPC server that does no work: the grpc-js client's ceiling (bench/idle-grpc-server.ts). */
const IDLE_GRPC_TARGET = "grpc-idle-server";
const COALESCE_CALLERS = 64;

const log = (line: string) => process.stdout.write(`${line}\n`);

function targetsFor(upstream: Service, ref: Service, ng: Service, spec: CallSpec, extra: Service[] = [], idleGrpc?: Service): Target[] {
  const native = (s: Service, name: string): Target => ({ name, pids: s.pids, client: (c) => jsonRpcClient(`${s.url}/v3/${KEY}`, spec.json, c) });
  const grpc = (s: Service, name: string): Target => ({ name, pids: s.pids, client: () => grpcClient(`127.0.0.1:${s.port}`, spec.procedure, spec.proto, KEY) });
  return [
    { name: "direct", pids: upstream.pids, client: (c) => jsonRpcClient(upstream.url, spec.json, c) },
    { name: "ref-proxy", pids: ref.pids, client: (c) => jsonRpcClient(ref.url, spec.json, c) },
    native(ng, "native"),
    grpc(ng, "grpc"),
    { name: "connect", pids: ng.pids, client: (c) => connectClient(ng.url, spec.procedure, spec.proto, KEY, c) },
    ...extra.map((s) => native(s, `native-${s.name}`)),
    ...(idleGrpc === undefined ? [] : [grpc(idleGrpc, IDLE_GRPC_TARGET)]),
  ];
}

async function jsonRpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  const body = (await res.json()) as { result?: unknown; error?: unknown };
  if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}

async function upstreamCounts(upstream: Service): Promise<Record<string, number>> {
  return (await (await fetch(`${upstream.url}/stats`)).json()) as Record<string, number>;
}

/** 128 Anvil blocks of 20 transfers each, and a contract whose call returns a word. */
async function prepareAnvil(anvil: Service): Promise<{ blocks: number[]; callee: string }> {
  const [from] = (await jsonRpc(anvil.url, "eth_accounts", [])) as string[];
  await jsonRpc(anvil.url, "evm_setAutomine", [false]);
  const blocks: number[] = [];
  for (let b = 0; b < 128; b++) {
    const batch = Array.from({ length: 20 }, (_, i) => ({
      jsonrpc: "2.0",
      id: i,
      method: "eth_sendTransaction",
      params: [{ from, to: `0x${(0x5000 + b * 20 + i).toString(16).padStart(40, "0")}`, value: "0x1" }],
    }));
    await fetch(anvil.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(batch) });
    await jsonRpc(anvil.url, "evm_mine", []);
    blocks.push(b + 1);
  }
  await jsonRpc(anvil.url, "evm_setAutomine", [true]);
  const callee = "0x00000000000000000000000000000000000c0de1";
  // PUSH1 42 PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN: every call answers one word.
  await jsonRpc(anvil.url, "anvil_setCode", [callee, "0x602a60005260206000f3"]);
  return { blocks, callee };
}

/** CPU of a plain JSON.parse + JSON.stringify of a body, in this process, microseconds. */
function parseStringifyCpuUs(body: string): number {
  for (let i = 0; i < 3; i++) JSON.stringify(JSON.parse(body));
  const iterations = quick ? 5 : 15;
  const before = process.cpuUsage();
  for (let i = 0; i < iterations; i++) JSON.stringify(JSON.parse(body));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / iterations;
}

async function main(): Promise<void> {
  const started = Date.now();
  log(`nodegate benchmark${quick ? " (--quick)" : ""}: ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? "?"}), Node ${process.version}, load average ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  const canned = cannedResults();
  const logsBody = `{"jsonrpc":"2.0","id":1,"result":${canned.logs10k}}`;
  // The reference is measured around each 10k-log cell too (the machine's load drifts); the mean is the yardstick.
  const parseSamples = [parseStringifyCpuUs(logsBody)];
  log(`reference: JSON.parse + JSON.stringify of the 10,000-log body (${(logsBody.length / 1048576).toFixed(2)} MiB): ${((parseSamples[0] as number) / 1000).toFixed(1)} ms CPU`);

  const [fast, slow, coalesceUpstream, anvil] = await Promise.all([
    startCannedUpstream("canned"),
    startCannedUpstream("canned-5ms", 5),
    startCannedUpstream("canned-100ms", 100),
    startBenchAnvil("anvil"),
  ]);
  const [refFast, refAnvil, ngFast, ngWorkers, ngAnvil, ngSlow, ngCoalesce] = await Promise.all([
    startRefProxy("ref-canned", fast.url),
    startRefProxy("ref-anvil", anvil.url),
    startNodegate("nodegate", { upstreamUrl: fast.url, key: KEY }),
    startNodegate("2-workers", { upstreamUrl: fast.url, key: KEY, workers: 2 }),
    startNodegate("nodegate-anvil", { upstreamUrl: anvil.url, key: KEY }),
    startNodegate("nodegate-5ms", { upstreamUrl: slow.url, key: KEY }),
    startNodegate("nodegate-100ms", { upstreamUrl: coalesceUpstream.url, key: KEY }),
  ]);
  const idleGrpc = await startIdleGrpcServer("idle-grpc");
  const { blocks: anvilBlocks, callee } = runs("anvil") ? await prepareAnvil(anvil) : { blocks: [1], callee: "0x00000000000000000000000000000000000c0de1" };
  log(`processes up in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  const results: CellResult[] = [];
  const matrix: { upstream: Service; ref: Service; ng: Service; upstreamName: string; specs: { spec: CallSpec; timing: Timing; workers: boolean; idleGrpc?: boolean }[] }[] = [
    {
      upstream: fast,
      ref: refFast,
      ng: ngFast,
      upstreamName: "canned",
      specs: [
        { spec: smallCall(), timing, workers: true, idleGrpc: true },
        { spec: blockCall(cannedBlockNumbers(), "eth_getBlockByNumber(n, true), 150 txs (163 KiB)"), timing, workers: true },
        { spec: logsCall(), timing: slowTiming, workers: false },
        { spec: ethCall("0x00000000000000000000000000000000000c0de1"), timing, workers: false },
      ],
    },
    {
      upstream: anvil,
      ref: refAnvil,
      ng: ngAnvil,
      upstreamName: "anvil",
      specs: [
        { spec: smallCall(), timing, workers: false },
        { spec: blockCall(anvilBlocks, "eth_getBlockByNumber(n, true), 20 txs"), timing, workers: false },
        { spec: ethCall(callee), timing, workers: false },
      ],
    },
  ];
  const warmupStarted = Date.now();
  for (const section of matrix) {
    if (!runs(section.upstreamName)) continue;
    for (const { spec, workers, idleGrpc: withIdleGrpc } of section.specs) {
      for (const target of targetsFor(section.upstream, section.ref, section.ng, spec, workers ? [ngWorkers] : [], withIdleGrpc ? idleGrpc : undefined)) {
        const client = target.client(WARMUP_CONCURRENCY);
        const warm = await run(client, WARMUP_CONCURRENCY, spec.name === "logs" ? WARMUP_MS * 2 : WARMUP_MS, 50_000_000);
        await client.close();
        if (warm.errors > 0) log(`  warm-up ${section.upstreamName} ${spec.name} ${target.name}: ${warm.errors} errors (${warm.firstError ?? "?"})`);
      }
    }
  }
  log(`warm-up: every target served every call for ${WARMUP_MS} ms (10k logs: ${WARMUP_MS * 2} ms) at concurrency ${WARMUP_CONCURRENCY}, in ${((Date.now() - warmupStarted) / 1000).toFixed(0)} s`);

  for (const section of matrix) {
    if (!runs(section.upstreamName)) continue;
    for (const { spec, timing: t, workers, idleGrpc: withIdleGrpc } of section.specs) {
      for (const c of spec.name === "logs" ? logsConcurrencies : concurrencies) {
        if (spec.name === "logs") parseSamples.push(parseStringifyCpuUs(logsBody));
        const cells = await measureCells(section.upstreamName, `${spec.name}: ${spec.label}`, c, targetsFor(section.upstream, section.ref, section.ng, spec, workers ? [ngWorkers] : [], withIdleGrpc ? idleGrpc : undefined), t);
        results.push(...cells);
        if (spec.name === "logs") parseSamples.push(parseStringifyCpuUs(logsBody));
        const brief = cells.map((r) => `${r.target} ${r.rps.toFixed(0)}/s`).join(", ");
        log(`  ${section.upstreamName} ${spec.name} c${c}: ${brief}`);
      }
    }
  }

  const parseUs = parseSamples.reduce((a, b) => a + b, 0) / parseSamples.length;
  log(`reference, mean of ${parseSamples.length} measurements: ${(parseUs / 1000).toFixed(1)} ms CPU (from ${(Math.min(...parseSamples) / 1000).toFixed(1)} to ${(Math.max(...parseSamples) / 1000).toFixed(1)})`);

  // Peak RSS growth per in-flight 10,000-log request on the gRPC door, in a nodegate of its own
  // (one that served the matrix keeps the memory it grew to, so growth would not show).
  let baseline = Number.NaN;
  let peak = Number.NaN;
  let perInFlight = Number.NaN;
  if (runs("rss")) {
    const logs = logsCall();
    const ngRss = await startNodegate("nodegate-rss", { upstreamUrl: fast.url, key: KEY });
    const warm = grpcClient(`127.0.0.1:${ngRss.port}`, logs.procedure, logs.proto, KEY);
    await run(warm, 1, 1500, 3); // compiled code, pools and buffers in place: what a serving process has
    await warm.close();
    await ngRss.ask?.("gc");
    await new Promise((r) => setTimeout(r, 300));
    baseline = rssBytes(ngRss.pids);
    const sampler = rssSampler(ngRss.pids, 10);
    const grpcLoad = grpcClient(`127.0.0.1:${ngRss.port}`, logs.procedure, logs.proto, KEY);
    const rssRun = await run(grpcLoad, RSS_CONCURRENCY, quick ? 1500 : 3000, 7);
    await grpcLoad.close();
    peak = sampler.stop();
    await ngRss.stop();
    perInFlight = (peak - baseline) / RSS_CONCURRENCY;
    log(`  rss: baseline ${(baseline / 1048576).toFixed(0)} MiB, peak ${(peak / 1048576).toFixed(0)} MiB with ${RSS_CONCURRENCY} gRPC 10k-log calls in flight (${rssRun.ok} answered)`);
  }

  // Cache: repeated final reads against an upstream with a 5 ms service time.
  const cacheResults: (CellResult & { upstreamCallsWhileMeasured: number })[] = [];
  for (const spec of runs("cache") ? cacheableCalls() : []) {
    // The first call of each door fills the cache: stored answers are keyed by the params text the node is sent, and
    // the typed door's encoding of these params is not the native text (eth_getLogs' address as a list, say).
    const fillNative = jsonRpcClient(`${ngSlow.url}/v3/${KEY}`, spec.json, 1);
    await fillNative.send(0);
    await fillNative.close();
    const fillGrpc = grpcClient(`127.0.0.1:${ngSlow.port}`, spec.procedure, spec.proto, KEY);
    await fillGrpc.send(0);
    await fillGrpc.close();
    const doors: Target[] = [
      { name: "native", pids: ngSlow.pids, client: (c) => jsonRpcClient(`${ngSlow.url}/v3/${KEY}`, spec.json, c) },
      { name: "grpc", pids: ngSlow.pids, client: () => grpcClient(`127.0.0.1:${ngSlow.port}`, spec.procedure, spec.proto, KEY) },
    ];
    // The same warm-up as the tables above get, for the same reason: measured cold, a hit read V8 compiling the
    // answer's path (this process has served none of these calls): the 163 KiB block's gRPC hit read 1.45 ms in a
    // full run, and about 0.3 ms in a client that had made calls for a few seconds first.
    for (const door of doors) {
      const client = door.client(WARMUP_CONCURRENCY);
      await run(client, WARMUP_CONCURRENCY, WARMUP_MS);
      await client.close();
    }
    const before = await upstreamCounts(slow);
    const cells = await measureCells("canned-5ms", `${spec.name}: ${spec.label}`, 1, doors, timing);
    const after = await upstreamCounts(slow);
    const reached = Object.keys(after).reduce((n, k) => n + ((after[k] ?? 0) - (before[k] ?? 0)), 0) - ((after["eth_getBlockByNumber(finalized)"] ?? 0) - (before["eth_getBlockByNumber(finalized)"] ?? 0));
    const direct = await measureCells("canned-5ms", `${spec.name}: ${spec.label}`, 1, [{ name: "direct", pids: slow.pids, client: (c) => jsonRpcClient(slow.url, spec.json, c) }], { ...timing, rounds: 1 });
    for (const cell of [...direct, ...cells]) cacheResults.push({ ...cell, upstreamCallsWhileMeasured: cell.target === "direct" ? Number.NaN : reached });
    log(`  cache ${spec.name}: ${[...direct, ...cells].map((r) => `${r.target} p50 ${r.p50.toFixed(3)} ms`).join(", ")}; upstream calls while nodegate was measured: ${reached}`);
  }

  // Coalescing: N identical calls at once reach the upstream once.
  const coalescing: { call: string; upstreamMs: number; callers: number; upstreamCalls: number; failed: number }[] = [];
  const warm = Buffer.from('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}');
  for (const [upstream, ng, ms] of runs("coalescing") ? ([[slow, ngSlow, 5], [coalesceUpstream, ngCoalesce, 100]] as const) : []) {
    const hash = `0x${(ms === 5 ? "c5" : "c6").repeat(32)}`;
    const cases: [string, string, unknown[], string][] = [
      ["latest block, full transactions (never cached)", "eth_getBlockByNumber", ["latest", true], "eth_getBlockByNumber(latest)"],
      ["a final block by hash, first time", "eth_getBlockByHash", [hash, true], "eth_getBlockByHash"],
      ["the same block by hash again (from the cache)", "eth_getBlockByHash", [hash, true], "eth_getBlockByHash"],
    ];
    for (const [label, method, params, counted] of cases) {
      const body = Buffer.from(JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }));
      const client = jsonRpcClient(`${ng.url}/v3/${KEY}`, [warm, body], COALESCE_CALLERS);
      await Promise.all(Array.from({ length: COALESCE_CALLERS }, () => client.send(0))); // opens the connections
      const before = (await upstreamCounts(upstream))[counted] ?? 0;
      const oks = await Promise.all(Array.from({ length: COALESCE_CALLERS }, () => client.send(1)));
      const calls = ((await upstreamCounts(upstream))[counted] ?? 0) - before;
      await client.close();
      coalescing.push({ call: label, upstreamMs: ms, callers: COALESCE_CALLERS, upstreamCalls: calls, failed: oks.filter((ok) => !ok).length });
    }
  }
  const cacheStats = await ngSlow.ask?.("stats");

  // Verdicts against the issue's targets.
  const v: Verdict[] = [];
  const ratio = (call: string, target: string, c: number, upstream = "canned") => {
    const row = results.filter((r) => r.upstream === upstream && r.call.startsWith(`${call}:`));
    const t = row.find((r) => r.target === target && r.concurrency === c);
    const ref = row.find((r) => r.target === "ref-proxy" && r.concurrency === c);
    return t && ref ? t.rps / ref.rps : Number.NaN;
  };
  const cell = (call: string, target: string, c: number) => {
    const row = results.find((r) => r.upstream === "canned" && r.call.startsWith(`${call}:`) && r.target === target && r.concurrency === c);
    return row;
  };
  const maxC = concurrencies[concurrencies.length - 1] as number;
  const r1 = ratio("small", "native", maxC);
  v.push({ target: `native small call req/s vs ref-proxy, c${maxC}`, measured: `${r1.toFixed(2)}x`, want: ">= 1.0x", met: r1 >= 1.0 });
  const nativeC1 = cell("small", "native", 1);
  const directC1 = cell("small", "direct", 1);
  const overhead = nativeC1 && directC1 ? nativeC1.p50 - directC1.p50 : Number.NaN;
  v.push({ target: "native small call p50 overhead over direct, c1", measured: `${overhead.toFixed(3)} ms`, want: "<= 0.15 ms", met: overhead <= 0.15 });
  const refC1 = cell("small", "ref-proxy", 1);
  const refOverhead = refC1 && directC1 ? refC1.p50 - directC1.p50 : Number.NaN;
  v.push({ target: "  (for scale: ref-proxy's own p50 overhead over direct, c1)", measured: `${refOverhead.toFixed(3)} ms`, want: "(info)", met: undefined });
  for (const call of ["block", "logs"]) {
    for (const c of call === "logs" ? logsConcurrencies : concurrencies) {
      const r = ratio(call, "native", c);
      v.push({ target: `native ${call} req/s vs ref-proxy, c${c}`, measured: `${r.toFixed(2)}x`, want: ">= 0.8x", met: r >= 0.8 });
    }
  }
  for (const c of concurrencies) {
    const r = ratio("small", "grpc", c);
    v.push({ target: `gRPC small call req/s vs ref-proxy, c${c}`, measured: `${r.toFixed(2)}x`, want: ">= 0.8x", met: r >= 0.8 });
    const g = cell("small", "grpc", c);
    const ref = cell("small", "ref-proxy", c);
    if (g && ref) {
      v.push({
        target: "  (server CPU/req gRPC vs ref-proxy; client CPU/req grpc-js vs undici)",
        measured: `${(g.cpuUsPerRequest / ref.cpuUsPerRequest).toFixed(2)}x; ${(g.clientCpuUsPerRequest / ref.clientCpuUsPerRequest).toFixed(2)}x`,
        want: "(info)",
        met: undefined,
      });
    }
    const idle = ratio("small", IDLE_GRPC_TARGET, c);
    v.push({ target: "  (the grpc-js client's ceiling: a gRPC server doing no work, req/s vs ref-proxy)", measured: `${idle.toFixed(2)}x`, want: "(info)", met: undefined });
  }
  // The Connect protocol has no target in #7; its rows say how the lean Connect lane compares.
  for (const call of ["small", "block", "logs"]) {
    const ratios = (call === "logs" ? logsConcurrencies : concurrencies).map((c) => `c${c} ${ratio(call, "connect", c).toFixed(2)}x`);
    v.push({ target: `Connect (binary) ${call} req/s vs ref-proxy`, measured: ratios.join(", "), want: "(no target)", met: undefined });
  }
  for (const c of logsConcurrencies) {
    const g = cell("logs", "grpc", c);
    const x = g ? g.cpuUsPerRequest / parseUs : Number.NaN;
    v.push({
      target: `gRPC 10k logs CPU/request vs parse+stringify, c${c}`,
      measured: `${((g?.cpuUsPerRequest ?? Number.NaN) / 1000).toFixed(1)} ms = ${x.toFixed(2)}x`,
      want: "<= 1.5x",
      met: x <= 1.5,
    });
  }
  const rssX = perInFlight / logsBody.length;
  v.push({ target: `gRPC 10k logs peak RSS growth per in-flight request (c${RSS_CONCURRENCY})`, measured: `${(perInFlight / 1048576).toFixed(1)} MiB = ${rssX.toFixed(2)}x JSON`, want: "<= 3x JSON size", met: rssX <= 3 });
  for (const r of cacheResults.filter((x) => x.target === "native" || x.target === "grpc")) {
    v.push({ target: `cache hit p50, ${r.target === "grpc" ? "gRPC" : "native"}, ${r.call.split(":")[0]} (upstream 5 ms)`, measured: `${r.p50.toFixed(3)} ms, ${r.upstreamCallsWhileMeasured} upstream calls`, want: "< 1 ms", met: r.p50 < 1 && r.upstreamCallsWhileMeasured === 0 });
  }
  for (const c of coalescing) {
    const want = c.call.includes("from the cache") ? 0 : 1;
    v.push({
      target: `${c.callers} identical concurrent calls: ${c.call}, upstream ${c.upstreamMs} ms`,
      measured: `${c.upstreamCalls} upstream call(s)${c.failed ? `, ${c.failed} failed` : ""}`,
      want: String(want),
      met: c.upstreamCalls === want && c.failed === 0,
    });
  }
  const w = ratio("small", "native-2-workers", maxC);
  const w1 = ratio("small", "native", maxC);
  v.push({ target: `2 workers (NODEGATE_WORKERS=2), small call c${maxC}, vs ref-proxy (1 worker: ${w1.toFixed(2)}x)`, measured: `${w.toFixed(2)}x`, want: "(no target)", met: undefined });

  log(cellTables(results));
  log("\ncache (upstream with a 5 ms service time; concurrency 1)");
  log(cellTables(cacheResults));
  log(`\nnodegate-5ms cache counters: ${JSON.stringify(cacheStats?.stats ?? {})}`);
  log("\ntargets");
  log(verdictTable(only === undefined ? v : v.filter((x) => !x.measured.includes("NaN"))));
  const elapsed = (Date.now() - started) / 1000;
  log(`\nfinished in ${elapsed.toFixed(0)} s; load average now ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`);

  mkdirSync(".bench", { recursive: true });
  const file = `.bench/results-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
  writeFileSync(
    file,
    JSON.stringify(
      {
        when: new Date().toISOString(),
        quick,
        machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadAverageAtEnd: os.loadavg() },
        timing: { timing, slowTiming, concurrencies, logsConcurrencies },
        reference: { parseStringifyLogsCpuUs: parseUs, samplesUs: parseSamples, logsBodyBytes: logsBody.length },
        results,
        rss: { concurrency: RSS_CONCURRENCY, baselineBytes: baseline, peakBytes: peak, perInFlightBytes: perInFlight },
        cache: cacheResults,
        coalescing,
        cacheStats: cacheStats?.stats,
        verdicts: v,
        elapsedSeconds: elapsed,
      },
      null,
      2,
    ),
  );
  log(`results written to ${file}`);
}

const watchdog = setTimeout(
  () => {
    process.stderr.write("benchmark: time limit reached, stopping\n");
    void stopAll().then(() => process.exit(3));
  },
  (quick ? 6 : 20) * 60_000,
);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => void stopAll().then(() => process.exit(130)));
}
main()
  .catch((err: unknown) => {
    process.stderr.write(`benchmark failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    clearTimeout(watchdog);
    await stopAll();
  });
