/**
 * Builds docs/spec-conformance.md from the rule registry, and finds every way
 * the registry, the spec text and the spec tests can disagree: a quote that
 * is not in the spec, a rule without a test (or with two), a test for a rule
 * that does not exist. Pure file reading, no vitest: the generator script and
 * the drift test both use it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { type Door, type Quote, SPEC_RULES, type SpecRule, testNameOf } from "../rules.js";

const ROOT = join(import.meta.dirname, "../../..");
/** The spec, vendored unedited from ../shared/spec so the suite runs from any clone. */
export const SPEC_PATH = join(ROOT, "docs/spec/000_3261a58697a5d6e0.txt");
export const SPEC_DISPLAY_PATH = "docs/spec/000_3261a58697a5d6e0.txt";
/** The shared original, beside the project in the development workspace. */
export const SHARED_SPEC_PATH = join(ROOT, "../shared/spec/000_3261a58697a5d6e0.txt");
export const DOC_PATH = join(ROOT, "docs/spec-conformance.md");
export const SPEC_TEST_DIR = join(ROOT, "test/spec");

interface Heading {
  /** 1-based line number. */
  line: number;
  level: number;
  text: string;
}

/** Where a rule's words are in the spec. */
export interface QuoteLocation {
  quote: Quote;
  line: number;
}

export interface ConformanceRow {
  rule: SpecRule;
  locations: QuoteLocation[];
  /** The spec test file that holds the rule's test (relative to the repo), if any. */
  testFile: string | undefined;
}

export interface Conformance {
  rows: ConformanceRow[];
  /** Every disagreement found; empty when registry, spec and tests agree. */
  problems: string[];
}

function headingsOf(lines: readonly string[]): Heading[] {
  const headings: Heading[] = [];
  lines.forEach((text, i) => {
    const m = /^(#{1,6})\s+(.*)$/.exec(text);
    if (m) headings.push({ line: i + 1, level: (m[1] as string).length, text: (m[2] as string).trim() });
  });
  return headings;
}

/** The lines under a heading, up to the next heading of the same or a higher level. */
function sectionRange(headings: readonly Heading[], start: string, lineCount: number): [number, number] | undefined {
  const index = headings.findIndex((h) => h.text.startsWith(start));
  if (index < 0) return undefined;
  const heading = headings[index] as Heading;
  const next = headings.slice(index + 1).find((h) => h.level <= heading.level);
  return [heading.line + 1, (next?.line ?? lineCount + 1) - 1];
}

const FRAGMENT_SEPARATOR = " … ";

/** Finds a quote under its section; the first fragment must occur on exactly one line there. */
function locate(lines: readonly string[], headings: readonly Heading[], quote: Quote): QuoteLocation | string {
  const range = sectionRange(headings, quote.section, lines.length);
  if (range === undefined) return `no spec heading starts with "${quote.section}"`;
  const [from, to] = range;
  const fragments = quote.text.split(FRAGMENT_SEPARATOR);
  const hits: number[] = [];
  for (let line = from; line <= to; line++) {
    if ((lines[line - 1] as string).includes(fragments[0] as string)) hits.push(line);
  }
  if (hits.length === 0) return `"${fragments[0]}" is not under "${quote.section}" in the spec`;
  if (hits.length > 1) return `"${fragments[0]}" occurs on lines ${hits.join(", ")} under "${quote.section}"; quote more to make it unique`;
  const text = lines.slice(from - 1, to).join("\n");
  for (const fragment of fragments.slice(1)) {
    if (!text.includes(fragment)) return `"${fragment}" is not under "${quote.section}" in the spec`;
  }
  return { quote, line: hits[0] as number };
}

const RULE_CALL = /specRule\(\s*"([^"]+)"/g;
const SKIPPED = /\b(?:it|describe|test)\.(?:skip|todo|only)\b|\bspecRule\.skip\b/;

/** Which spec test files call specRule for each rule id, and the files that skip tests. */
function scanTests(dir: string): { files: Map<string, string[]>; skipping: string[] } {
  const files = new Map<string, string[]>();
  const skipping: string[] = [];
  for (const name of readdirSync(dir).filter((n) => n.endsWith(".test.ts")).sort()) {
    const path = join(dir, name);
    const text = readFileSync(path, "utf8");
    const rel = relative(ROOT, path);
    if (SKIPPED.test(text)) skipping.push(rel);
    for (const m of text.matchAll(RULE_CALL)) {
      const id = m[1] as string;
      files.set(id, [...(files.get(id) ?? []), rel]);
    }
  }
  return { files, skipping };
}

/** Reads the spec and the spec tests and checks them against the registry. */
export function checkConformance(specText = readFileSync(SPEC_PATH, "utf8"), testDir = SPEC_TEST_DIR): Conformance {
  const lines = specText.split("\n");
  const headings = headingsOf(lines);
  const { files, skipping } = scanTests(testDir);
  const problems: string[] = [];
  const ids = new Set<string>();
  const rows: ConformanceRow[] = [];
  for (const rule of SPEC_RULES) {
    if (ids.has(rule.id)) problems.push(`rule id ${rule.id} is registered twice`);
    ids.add(rule.id);
    const locations: QuoteLocation[] = [];
    for (const quote of rule.quotes) {
      const found = locate(lines, headings, quote);
      if (typeof found === "string") problems.push(`${rule.id}: ${found}`);
      else locations.push(found);
    }
    if (rule.quotes.length === 0) problems.push(`${rule.id}: quotes no spec text`);
    const testFiles = files.get(rule.id) ?? [];
    if (rule.deliveredBy !== undefined) {
      if (testFiles.length > 0) {
        problems.push(`${rule.id} is marked delivered by ${rule.deliveredBy} but has a test in ${testFiles.join(", ")}: drop deliveredBy`);
      }
      if (rule.doors.length > 0) problems.push(`${rule.id} has no test, so it exercises no doors`);
    } else {
      if (testFiles.length === 0) problems.push(`${rule.id} has no specRule test in test/spec`);
      if (testFiles.length > 1) problems.push(`${rule.id} is tested more than once (${testFiles.join(", ")})`);
      if (rule.doors.length === 0) problems.push(`${rule.id} names no door its test goes through`);
    }
    rows.push({ rule, locations, testFile: testFiles[0] });
  }
  for (const [id, testFiles] of files) {
    if (!ids.has(id)) problems.push(`${testFiles.join(", ")} tests "${id}", which is not in test/spec/rules.ts`);
  }
  for (const file of skipping) problems.push(`${file} skips or focuses tests; every spec rule's test must run`);
  rows.sort((a, b) => (a.locations[0]?.line ?? 0) - (b.locations[0]?.line ?? 0));
  return { rows, problems };
}

const DOOR_NAMES: Readonly<Record<Door, string>> = { http: "HTTP", ws: "WS", typed: "typed" };

/** Text for a table cell: pipes escaped, and angle brackets too (GitHub would take <API_KEY> for an HTML tag). */
function cell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll("\n", " ");
}

function statusOf(rule: SpecRule): string {
  if (rule.deliveredBy !== undefined) return `open: delivered by ${rule.deliveredBy}`;
  if (rule.deviation) return "tested; deviates (see nodegate)";
  if (rule.decision !== undefined) return "tested; nodegate's choice";
  return "tested";
}

/** The Markdown of docs/spec-conformance.md. */
export function renderConformanceTable(conformance: Conformance): string {
  const { rows } = conformance;
  const count = (p: (r: SpecRule) => boolean) => rows.filter((r) => p(r.rule)).length;
  const open = rows.filter((r) => r.rule.deliveredBy !== undefined);
  const tested = count((r) => r.deliveredBy === undefined);
  const chosen = count((r) => r.deliveredBy === undefined && r.decision !== undefined && !r.deviation);
  const deviations = count((r) => r.deviation === true);
  const out: string[] = [
    "# Spec conformance",
    "",
    `Every checkable rule of the node-access specification (\`${SPEC_DISPLAY_PATH}\`), the test that checks it, and its status. Where the spec leaves something open ("not shown") or is ambiguous, the row says what nodegate chose; where nodegate deliberately does something other than the spec's words, the row says so and why.`,
    "",
    "Generated by `npm run spec:table` from `test/spec/rules.ts`; do not edit by hand. `test/spec/conformance-table.test.ts` fails when this file is out of date, when a quote is not in the spec, or when a rule has no test (or a test has no rule). Each test is named `[rule id] title` and fails unless it went through exactly the doors its row lists: HTTP is `POST /v3/<KEY>`, WS is `/ws/v3/<KEY>`, typed is gRPC/Connect through both grpc-js and connect-es.",
    "",
    `${rows.length} rules: ${tested} tested (${chosen} of them nodegate's choice where the spec is open, ${deviations} deliberate deviations)` +
      (open.length === 0 ? "." : `, ${open.length} delivered by open issues (${open.map((r) => `\`${r.rule.id}\``).join(", ")}).`),
    "",
    "| Rule | Spec | The spec says | nodegate | Doors | Test | Status |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const { rule, locations, testFile } of rows) {
    const where = locations.map((l) => `L${l.line}`).join(", ");
    const section = locations[0]?.quote.section ?? "";
    const said = locations.map((l) => `“${cell(l.quote.text)}”`).join("<br>");
    const test = testFile === undefined ? "none yet" : `[${testFile.replace("test/spec/", "")}](../${testFile}) › ${cell(testNameOf(rule))}`;
    const doors = rule.doors.map((d) => DOOR_NAMES[d]).join(", ") || "–";
    const decision = cell(rule.decision ?? "as the spec says");
    out.push(`| \`${rule.id}\` | ${cell(section)} ${where} | ${said} | ${decision} | ${doors} | ${test} | ${statusOf(rule)} |`);
  }
  return `${out.join("\n")}\n`;
}
