/**
 * Request log lines leave in batches, written asynchronously (src/observability/log.ts):
 * none may be lost or reordered when the process ends on its own, or stops
 * as nodegate does (flushLogs, then process.exit), with few lines gathered
 * or many batches still on their way to stdout.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
const run = promisify(execFile);

const SCRIPT = `
import { createLogger, flushLogs } from ${JSON.stringify(join(ROOT, "src/observability/log.ts"))};
const [count, end] = process.argv.slice(1);
const log = createLogger("info");
for (let i = 0; i < Number(count); i++) log.info({ door: "jsonrpc-http", method: "eth_chainId", i }, "request");
if (end === "stop") await flushLogs(log).then(() => process.exit(0));
`;

async function linesWritten(count: number, end: "stop" | "natural"): Promise<number[]> {
  const { stdout } = await run(process.execPath, ["--import", "tsx", "--input-type=module", "-e", SCRIPT, String(count), end], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  return stdout
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => (JSON.parse(l) as { i: number }).i);
}

describe("batched log lines", () => {
  for (const count of [1, 300, 20_000]) {
    for (const end of ["stop", "natural"] as const) {
      it(`writes all ${count} lines, in order, when the process ends (${end})`, async () => {
        expect(await linesWritten(count, end)).toEqual(Array.from({ length: count }, (_, i) => i));
      });
    }
  }
});
