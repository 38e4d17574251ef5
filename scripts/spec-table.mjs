#!/usr/bin/env node
// Writes docs/spec-conformance.md from test/spec/rules.ts (run: npm run spec:table).
// Needs tsx (npm run spec:table loads it), since the registry is TypeScript.
import { writeFileSync } from "node:fs";
import { checkConformance, DOC_PATH, renderConformanceTable } from "../test/spec/harness/conformance-table.ts";

const conformance = checkConformance();
writeFileSync(DOC_PATH, renderConformanceTable(conformance));
console.log(`wrote ${DOC_PATH} (${conformance.rows.length} rules)`);
if (conformance.problems.length > 0) {
  console.error(`the registry, the spec and the tests disagree:\n  ${conformance.problems.join("\n  ")}`);
  process.exit(1);
}
