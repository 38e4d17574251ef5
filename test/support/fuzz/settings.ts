/**
 * How hard the fuzz tests try. The suite runs a fixed seed with few runs, so
 * it is fast and the same every time; `npm run fuzz:long` sets FUZZ_RUNS
 * (and FUZZ_SEED, for a fresh search) for a long run.
 */
import type { Parameters } from "fast-check";

/** The seed of every fuzz property; FUZZ_SEED overrides it. */
export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20261122);

/** Runs per property: FUZZ_RUNS, or the property's in-suite default. */
export function fuzzRuns(inSuite: number): number {
  const runs = Number(process.env.FUZZ_RUNS);
  return Number.isInteger(runs) && runs > 0 ? runs : inSuite;
}

/** fast-check parameters for a property: seeded, bounded, and quiet unless it fails. */
export function fuzzParameters<T>(inSuite: number): Parameters<T> {
  return { seed: FUZZ_SEED, numRuns: fuzzRuns(inSuite), endOnFailure: true };
}

/** The per-test timeout for a fuzz property: generous for long runs. */
export function fuzzTimeoutMs(inSuite: number, msPerRun = 100): number {
  return Math.max(60_000, fuzzRuns(inSuite) * msPerRun);
}
