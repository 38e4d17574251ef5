/**
 * CPU time and memory of processes by pid, read from /proc (Linux). Works for
 * any process (nodegate, the reference proxy, Anvil). Elsewhere the figures
 * are reported as unavailable.
 */
import { readFileSync } from "node:fs";

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** User + system CPU milliseconds used so far by the processes, or NaN when unknown. */
export function cpuMs(pids: readonly number[]): number {
  let total = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
      // Fields after the command name (which may contain spaces) start after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      total += ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
    } catch {
      return Number.NaN;
    }
  }
  return total;
}

/** Resident set size in bytes, summed over the processes, or NaN when unknown. */
export function rssBytes(pids: readonly number[]): number {
  let total = 0;
  for (const pid of pids) {
    try {
      const statm = readFileSync(`/proc/${pid}/statm`, "latin1").split(" ");
      total += Number(statm[1]) * 4096;
    } catch {
      return Number.NaN;
    }
  }
  return total;
}

/** Samples RSS every `everyMs` until stopped; reports the peak seen. */
export function rssSampler(pids: readonly number[], everyMs = 25): { stop(): number } {
  let peak = rssBytes(pids);
  const timer = setInterval(() => {
    const now = rssBytes(pids);
    if (now > peak) peak = now;
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      const now = rssBytes(pids);
      return now > peak ? now : peak;
    },
  };
}
