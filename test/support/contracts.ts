/** Compiles the test contracts from test/contracts with solc-js (no binary download). */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import solc from "solc";
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
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
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

export function artifact(name: string): Artifact {
  const a = compileContracts().get(name);
  if (!a) throw new Error(`no contract ${name}`);
  return a;
}
