/**
 * Compiles the test contracts from test/contracts with solc-js (no binary
 * download). solc-js takes seconds per process, and every test file is its
 * own process, so the output is cached on disk by a hash of the input.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Abi, Hex } from "viem";

export interface Artifact {
  abi: Abi;
  bytecode: Hex;
}

let cache: Map<string, Artifact> | undefined;

export function compileContracts(): Map<string, Artifact> {
  if (cache) return cache;
  const dir = join(import.meta.dirname, "../contracts");
  const input = {
    language: "Solidity",
    sources: { "Probe.sol": { content: readFileSync(join(dir, "Probe.sol"), "utf8") } },
    settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } } },
  };
  const output = JSON.parse(cachedCompile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  cache = new Map();
  for (const file of Object.values(output.contracts)) {
    for (const [name, c] of Object.entries(file)) cache.set(name, { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` });
  }
  return cache;
}

const require = createRequire(import.meta.url);

/** solc's output for an input, from the disk cache when an earlier process compiled the same input. */
function cachedCompile(input: string): string {
  // Loading solc-js itself takes a while, so a cache hit does not load it.
  const solcVersion = (require("solc/package.json") as { version: string }).version;
  const key = createHash("sha256").update(solcVersion).update(input).digest("hex");
  const dir = join(tmpdir(), "nodegate-solc-cache");
  const file = join(dir, `${key}.json`);
  try {
    return readFileSync(file, "utf8");
  } catch {
    // not compiled yet
  }
  const solc = require("solc") as typeof import("solc").default;
  const output = solc.compile(input);
  mkdirSync(dir, { recursive: true });
  // Write then rename, so a process running alongside never reads half a file.
  const partial = `${file}.${process.pid}`;
  writeFileSync(partial, output);
  renameSync(partial, file);
  return output;
}

export function artifact(name: string): Artifact {
  const a = compileContracts().get(name);
  if (!a) throw new Error(`no contract ${name}`);
  return a;
}
