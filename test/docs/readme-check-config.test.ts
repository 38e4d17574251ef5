/**
 * The README's check-config example shows what the command prints: found
 * from outside, its line number had drifted from the example file.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
const VARIABLES = ["PROVIDER_KEY", "PARTNER_URL", "CLIENT_KEY_1", "CLIENT_KEY_2", "CLIENT_SECRET_2"];

function checkConfig(env: Record<string, string>): { status: number | null; output: string } {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !VARIABLES.includes(name) && !name.startsWith("NODEGATE_")));
  const r = spawnSync(process.execPath, ["--import", "tsx", "src/main.ts", "check-config", "examples/nodegate.example.yaml"], { cwd: ROOT, env: { ...clean, ...env }, encoding: "utf8" });
  return { status: r.status, output: `${r.stdout}${r.stderr}`.trim() };
}

it("the README's check-config lines are what the command prints", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const block = /npm start -- check-config examples\/nodegate\.example\.yaml\n((?:# .*\n)+)/.exec(readme)?.[1] ?? "";
  const [failure, , valid] = block.split("\n").map((line) => line.replace(/^# /, ""));
  expect(failure).toMatch(/^nodegate: examples\/nodegate\.example\.yaml:\d+:\d+: /);
  const missing = checkConfig({});
  expect([missing.status, missing.output]).toEqual([2, failure]);
  const set = checkConfig({ PROVIDER_KEY: "pk", PARTNER_URL: "https://partner.example/", CLIENT_KEY_1: "client-key-0001", CLIENT_KEY_2: "client-key-0002", CLIENT_SECRET_2: "s3cret" });
  expect([set.status, set.output]).toEqual([0, valid]);
});
