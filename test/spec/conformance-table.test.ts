/**
 * Keeps docs/spec-conformance.md, test/spec/rules.ts, the spec's words and
 * the spec tests from drifting apart.
 */
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { checkConformance, DOC_PATH, renderConformanceTable, SHARED_SPEC_PATH, SPEC_PATH } from "./harness/conformance-table.js";
import { SPEC_RULES } from "./rules.js";

const spec = readFileSync(SPEC_PATH, "utf8");

describe("the spec conformance table", () => {
  it.runIf(existsSync(SHARED_SPEC_PATH))("the vendored spec is ../shared/spec's, unedited (skipped where the workspace has no shared folder)", () => {
    expect(spec).toBe(readFileSync(SHARED_SPEC_PATH, "utf8"));
  });

  it("every quote is in the spec, every rule has one test, every test has a rule", () => {
    expect(checkConformance(spec).problems).toEqual([]);
  });

  it("docs/spec-conformance.md is what npm run spec:table writes", () => {
    expect(readFileSync(DOC_PATH, "utf8")).toBe(renderConformanceTable(checkConformance(spec)));
  });

  it("a quote that is not in the spec is a problem", () => {
    const edited = spec.replace("Mixed-case hex is accepted in requests.", "Hex is accepted in requests.");
    expect(checkConformance(edited).problems).toEqual([
      'encoding.mixed-case: "Mixed-case hex is accepted in requests." is not under "What the service does" in the spec',
    ]);
  });

  it("every \"not shown\" sentence of the spec has a row that says what nodegate chose", () => {
    const notShown = spec.split("\n").filter((line) => line.includes("not shown"));
    expect(notShown.length).toBeGreaterThan(5);
    for (const line of notShown) {
      const rule = SPEC_RULES.find((r) => r.quotes.some((q) => line.includes(q.text)));
      expect(rule, line).toBeDefined();
      expect(rule?.decision, line).toBeDefined();
    }
  });
});
