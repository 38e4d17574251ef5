/** Formats the benchmark's figures: tables with ratios to the reference proxy, and the targets with verdicts. */
import type { CellResult } from "./matrix.js";

export interface Verdict {
  target: string;
  measured: string;
  want: string;
  met: boolean | undefined;
}

function fixed(n: number, digits: number): string {
  return Number.isFinite(n) ? n.toFixed(digits) : "-";
}

function pad(cells: string[][]): string {
  const widths = cells[0]?.map((_, c) => Math.max(...cells.map((r) => (r[c] ?? "").length))) ?? [];
  return cells.map((r) => r.map((v, c) => (c === 0 ? v.padEnd(widths[c] as number) : v.padStart(widths[c] as number))).join("  ")).join("\n");
}

/** One table per upstream and call: a row per target and concurrency. */
export function cellTables(results: CellResult[]): string {
  const out: string[] = [];
  const groups = new Map<string, CellResult[]>();
  for (const r of results) {
    const k = `${r.upstream} | ${r.call}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  for (const [title, rows] of groups) {
    const header = ["target", "conc", "req/s", "x ref", "p50 ms", "p99 ms", "+p50 vs direct", "CPU us/req", "client us/req", "peak RSS MiB", "errors"];
    const lines = [header];
    for (const r of rows) {
      const ref = rows.find((x) => x.concurrency === r.concurrency && x.target === "ref-proxy");
      const direct = rows.find((x) => x.concurrency === r.concurrency && x.target === "direct");
      lines.push([
        r.target,
        String(r.concurrency),
        fixed(r.rps, 0),
        ref ? fixed(r.rps / ref.rps, 2) : "-",
        fixed(r.p50, 3),
        fixed(r.p99, 3),
        direct && r.target !== "direct" ? `${r.p50 - direct.p50 >= 0 ? "+" : ""}${fixed(r.p50 - direct.p50, 3)}` : "",
        fixed(r.cpuUsPerRequest, 0),
        fixed(r.clientCpuUsPerRequest, 0),
        fixed(r.peakRssMiB, 0),
        r.errors ? `${r.errors} (${(r.firstError ?? "").slice(0, 60)})` : "0",
      ]);
    }
    out.push(`\n${title}\n${pad(lines)}`);
  }
  return out.join("\n");
}

export function verdictTable(verdicts: Verdict[]): string {
  const lines = [["target", "measured", "want", "met"]];
  for (const v of verdicts) lines.push([v.target, v.measured, v.want, v.met === undefined ? "n/a" : v.met ? "yes" : "NO"]);
  return pad(lines);
}

export function find(results: CellResult[], upstream: string, call: string, target: string, concurrency: number): CellResult | undefined {
  return results.find((r) => r.upstream === upstream && r.call === call && r.target === target && r.concurrency === concurrency);
}
