#!/usr/bin/env node
// Adds lockfile entries for platform-specific optional dependencies that the
// registry mirror of this workplace does not serve (it answers 404 for, say,
// @foundry-rs/anvil-darwin-arm64), so `npm install` leaves them out of
// package-lock.json and `npm ci` then refuses the lockfile as out of sync.
// Each added entry carries the package's os/cpu (and libc), read from its
// name, so npm skips it on other platforms exactly as it would with a full
// lockfile. Run after changing dependencies: node scripts/complete-lockfile.mjs
import { readFileSync, writeFileSync } from "node:fs";

const LOCK = process.argv[2] ?? new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(LOCK, "utf8"));
const packages = lock.packages;

const OS = ["darwin", "linux", "win32", "freebsd", "openbsd", "netbsd", "android", "sunos", "aix", "openharmony"];
const CPU = { amd64: "x64", x64: "x64", arm64: "arm64", aarch64: "arm64", armv7: "arm", arm: "arm", ia32: "ia32", x86: "ia32", loong64: "loong64", ppc64: "ppc64", riscv64: "riscv64", s390x: "s390x", mips64el: "mips64el" };

function platformOf(name) {
  const parts = name.split("/").pop().split("-");
  const os = parts.find((p) => OS.includes(p));
  const cpuWord = parts.find((p) => p in CPU);
  const libc = parts.some((p) => p.startsWith("musl")) ? "musl" : parts.some((p) => p === "gnu" || p.startsWith("gnueabi")) ? "glibc" : undefined;
  return { os, cpu: cpuWord && CPU[cpuWord], libc };
}

let added = 0;
for (const [path, entry] of Object.entries(packages)) {
  for (const [dep, range] of Object.entries(entry.optionalDependencies ?? {})) {
    const base = path === "" ? "" : `${path}/`;
    if (packages[`${base}node_modules/${dep}`] || packages[`node_modules/${dep}`]) continue;
    const { os, cpu, libc } = platformOf(dep);
    if (!os || !cpu) continue; // not a platform package: leave it to npm
    packages[`node_modules/${dep}`] = {
      version: range.replace(/^[\^~=]/, ""),
      optional: true,
      os: [os],
      cpu: [cpu],
      ...(libc ? { libc: [libc] } : {}),
    };
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0)));
writeFileSync(LOCK, `${JSON.stringify(lock, null, 2)}\n`);
process.stdout.write(`complete-lockfile: added ${added} platform entries\n`);
