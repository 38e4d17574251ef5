/**
 * One benchmark cell: a target (direct, reference proxy, nodegate's doors)
 * driven with one call at one concurrency, measured in interleaved rounds
 * (A B C A B C ...) so drift of a shared machine hits every target alike.
 */
import { type LoadClient, percentile, run } from "./load.js";
import { cpuMs, rssSampler } from "./proc-stats.js";

export interface Target {
  name: string;
  /** A fresh client for one measurement. */
  client(concurrency: number): LoadClient;
  /** The processes whose CPU and memory are this target's cost (the proxy hop; the upstream for direct). */
  pids: number[];
}

export interface CellResult {
  upstream: string;
  call: string;
  concurrency: number;
  target: string;
  ok: number;
  errors: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  /** CPU of the target's processes per successful request, microseconds. */
  cpuUsPerRequest: number;
  /** Highest RSS of the target's processes while measured, MiB. */
  peakRssMiB: number;
  /** CPU of the load generator (this process) per successful request, microseconds: a heavier client leaves less of the machine to the rest. */
  clientCpuUsPerRequest: number;
  firstError?: string;
}

export interface Timing {
  rounds: number;
  warmMs: number;
  measureMs: number;
}

interface Accumulated {
  ok: number;
  errors: number;
  seconds: number;
  cpu: number;
  clientCpu: number;
  latencies: Float64Array[];
  peakRss: number;
  firstError?: string;
}

export async function measureCells(upstream: string, call: string, concurrency: number, targets: Target[], timing: Timing): Promise<CellResult[]> {
  const acc = new Map<string, Accumulated>(targets.map((t) => [t.name, { ok: 0, errors: 0, seconds: 0, cpu: 0, clientCpu: 0, latencies: [], peakRss: 0 }]));
  let offset = 0;
  for (let round = 0; round < timing.rounds; round++) {
    for (const target of targets) {
      const client = target.client(concurrency);
      try {
        await run(client, concurrency, timing.warmMs, offset);
        offset += 100_003;
        const sampler = rssSampler(target.pids);
        const cpuBefore = cpuMs(target.pids);
        const clientBefore = process.cpuUsage();
        const result = await run(client, concurrency, timing.measureMs, offset);
        const clientUsed = process.cpuUsage(clientBefore);
        const cpu = cpuMs(target.pids) - cpuBefore;
        const peak = sampler.stop();
        offset += 100_003;
        const a = acc.get(target.name) as Accumulated;
        a.ok += result.ok;
        a.errors += result.errors;
        a.seconds += result.seconds;
        a.cpu += cpu;
        a.clientCpu += (clientUsed.user + clientUsed.system) / 1000;
        a.latencies.push(result.latencies);
        a.peakRss = Math.max(a.peakRss, peak);
        if (result.firstError !== undefined) a.firstError ??= result.firstError;
      } finally {
        await client.close();
      }
    }
  }
  return targets.map((t) => {
    const a = acc.get(t.name) as Accumulated;
    const all = new Float64Array(a.latencies.reduce((n, l) => n + l.length, 0));
    let at = 0;
    for (const l of a.latencies) {
      all.set(l, at);
      at += l.length;
    }
    all.sort();
    return {
      upstream,
      call,
      concurrency,
      target: t.name,
      ok: a.ok,
      errors: a.errors,
      seconds: a.seconds,
      rps: a.ok / a.seconds,
      p50: percentile(all, 50),
      p99: percentile(all, 99),
      cpuUsPerRequest: a.ok > 0 ? (a.cpu * 1000) / a.ok : Number.NaN,
      peakRssMiB: a.peakRss / 1048576,
      clientCpuUsPerRequest: a.ok > 0 ? (a.clientCpu * 1000) / a.ok : Number.NaN,
      ...(a.firstError === undefined ? {} : { firstError: a.firstError }),
    };
  });
}
