/**
 * Temporary directories for tests (configuration files, certificates): made
 * under the run's own directory, which the global setup removes when the run
 * ends, so runs leave nothing behind in the system's temp directory.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const TEST_TMP_ENV = "NODEGATE_TEST_TMP";

export function testTempDir(prefix: string): string {
  return mkdtempSync(join(process.env[TEST_TMP_ENV] ?? tmpdir(), prefix));
}
