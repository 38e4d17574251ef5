/**
 * The run's shared setup: a directory for the secret scan's records, one for
 * the tests' temporary files (removed at the end), and at the end of the run
 * the scan itself (see test/support/secret-scan.ts), which
 * fails the run when any secret appears in anything nodegate produced.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SCAN_DIR_ENV, scanRecords } from "../support/secret-scan.js";
import { TEST_TMP_ENV } from "../support/temp-dir.js";

export default async function setup(): Promise<() => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), "nodegate-secret-scan-"));
  process.env[SCAN_DIR_ENV] = dir;
  const temp = mkdtempSync(join(tmpdir(), "nodegate-test-"));
  process.env[TEST_TMP_ENV] = temp;
  return async () => {
    rmSync(temp, { recursive: true, force: true });
    try {
      const { secrets, texts, hits } = scanRecords(dir);
      if (hits.length > 0) {
        const lines = hits.slice(0, 20).map((h) => `  ${h.what} in ${h.file} (${h.source}): ${JSON.stringify(h.context)}`);
        throw new Error(`secret scan: ${hits.length} hit(s) of ${secrets} secrets in ${texts} texts:\n${lines.join("\n")}`);
      }
      process.stdout.write(`secret scan: ${secrets} secrets, ${texts} texts seen by the tests, no hit\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}
