#!/usr/bin/env node
// Fails when gen/ differs from what `buf generate` makes from proto/ (gen/ is committed, never edited).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const out = mkdtempSync(join(tmpdir(), "nodegate-gen-"));
function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}
try {
  execFileSync(join(root, "node_modules/.bin/buf"), ["generate", "-o", out], { cwd: root, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, PATH: `${join(root, "node_modules/.bin")}:${process.env.PATH}` } });
  const fresh = new Map(files(join(out, "gen")).map((p) => [relative(join(out, "gen"), p), readFileSync(p, "utf8")]));
  const committed = new Map(files(join(root, "gen")).map((p) => [relative(join(root, "gen"), p), readFileSync(p, "utf8")]));
  const problems = [];
  for (const [name, text] of fresh) {
    if (!committed.has(name)) problems.push(`missing: gen/${name}`);
    else if (committed.get(name) !== text) problems.push(`differs: gen/${name}`);
  }
  for (const name of committed.keys()) if (!fresh.has(name)) problems.push(`not generated from proto/: gen/${name}`);
  if (problems.length) {
    console.error(`gen/ is not what 'buf generate' makes from proto/ (run npm run generate):\n  ${problems.join("\n  ")}`);
    process.exit(1);
  }
  console.log(`gen/ matches proto/ (${fresh.size} files)`);
} finally {
  rmSync(out, { recursive: true, force: true });
}
