/**
 * The execution-apis conformance fixtures: 90 recorded request/response pairs
 * (ethereum/execution-apis tests/, CC0), vendored unedited in
 * test/fixtures/execution-apis so the suite runs from any clone. A test checks
 * the copy against the shared original when that is present.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export const CONFORMANCE_DIR = join(import.meta.dirname, "../fixtures/execution-apis");
/** The shared original, beside the project in the development workspace. */
export const SHARED_CONFORMANCE_DIR = join(import.meta.dirname, "../../../shared/conformance/execution-apis");

export interface ConformanceCase {
  file: string;
  method: string;
  request: { params?: unknown };
  response: { result?: unknown; error?: { code: number; message: string; data?: unknown } };
}

export function conformanceCases(dir = CONFORMANCE_DIR): ConformanceCase[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".jsonl"))
    .sort()
    .flatMap((f) =>
      readFileSync(join(dir, f), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as ConformanceCase),
    );
}
