/**
 * Some tests need programs from Debian packages (redis-server, protoc,
 * grpc_python_plugin, python3-grpcio). A developer without them sees those
 * tests skipped with the reason; CI sets NODEGATE_REQUIRE_SYSTEM_PACKAGES=1
 * (.ci/run installs the packages), and there a missing one fails instead.
 */
import { spawnSync } from "node:child_process";
import { describe, it } from "vitest";

export const REQUIRE_ENV = "NODEGATE_REQUIRE_SYSTEM_PACKAGES";

export interface Requirement {
  /** Why the tests cannot run here, or undefined when they can. */
  missing: string | undefined;
  /** True when the tests must be skipped (missing and not required). */
  skip: boolean;
}

/** Whether `command args` runs and exits 0 here. */
export function runs(command: string, args: string[]): boolean {
  const result = spawnSync(command, args, { stdio: "ignore", timeout: 10_000 });
  return result.error === undefined && result.status === 0;
}

/**
 * Checks each [what, command, args]; a failed check names the Debian package
 * to install. `required` says whether a missing one fails rather than skips.
 */
export function requirePackages(checks: [pkg: string, command: string, args: string[]][]): Requirement {
  const absent = checks.filter(([, command, args]) => !runs(command, args)).map(([pkg]) => pkg);
  const missing = absent.length === 0 ? undefined : `missing Debian packages: ${absent.join(", ")} (apt-get install -y ${absent.join(" ")})`;
  return { missing, skip: missing !== undefined && process.env[REQUIRE_ENV] !== "1" };
}

/** The title of the test that fails in CI when a package is missing. */
function requiredTitle(requirement: Requirement): string {
  return `system packages are installed (${REQUIRE_ENV}=1): ${requirement.missing ?? "all present"}`;
}

/**
 * A describe block that needs system packages: skipped where they are
 * missing and not required; where they are required (CI), one test that
 * fails naming them instead of the block's tests.
 */
export function describeRequiring(requirement: Requirement, title: string, body: () => void): void {
  describe.skipIf(requirement.skip)(title, () => {
    if (requirement.missing !== undefined) {
      it(requiredTitle(requirement), () => {
        throw new Error(requirement.missing);
      });
      return;
    }
    body();
  });
}
