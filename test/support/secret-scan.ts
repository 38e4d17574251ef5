/**
 * The suite-wide secret scan. Support code registers every secret a test
 * configures (client keys and secrets, the upstream provider's key) and
 * records every text nodegate produced that a test saw: log lines, response
 * bodies and headers, WebSocket messages, gRPC statuses, a child process's
 * output. After each test file its record is written to the directory the
 * global setup made; the global teardown scans every text of the whole run
 * for every secret of the whole run, and fails the run on any hit.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";

/** Where the records of a run go (set by the global setup, inherited by the test workers). */
export const SCAN_DIR_ENV = "NODEGATE_SECRET_SCAN_DIR";

/** Shorter values are not secrets worth the name, and would match by chance. */
const MIN_SECRET_LENGTH = 8;

const secrets = new Map<string, string>();
const seen = new Map<string, string>();
const pending = new Set<Promise<unknown>>();

/** A value that must never appear in anything nodegate writes; `what` names it in a failure. */
export function registerSecret(value: string | undefined, what: string): void {
  if (value !== undefined && value.length >= MIN_SECRET_LENGTH && !secrets.has(value)) secrets.set(value, what);
}

/** The secrets in a URL (an upstream's, Redis's): the provider key in /v3/<KEY>, user info, query values. */
export function registerUrlSecrets(url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return;
  }
  const segments = u.pathname.split("/").filter(Boolean);
  const v3 = segments.indexOf("v3");
  if (v3 >= 0) registerSecret(segments[v3 + 1], "upstream provider key");
  registerSecret(decodeURIComponent(u.username), "upstream user");
  registerSecret(decodeURIComponent(u.password), "upstream password");
  for (const value of u.searchParams.values()) registerSecret(value, "upstream URL query value");
}

/** A text nodegate produced (or passed on) that a test saw; `source` says where it came from. */
export function recordSeen(source: string, text: string): void {
  if (text.length > 0 && !seen.has(text)) seen.set(text, source);
}

/** A text that will be known later (a response body being read); the record waits for it. */
export function recordSeenLater(source: string, text: Promise<string>): void {
  const p = text.then(
    (t) => recordSeen(source, t),
    () => {},
  );
  pending.add(p);
  void p.finally(() => pending.delete(p));
}

interface ScanRecord {
  file: string;
  secrets: [string, string][];
  seen: [string, string][];
}

/** Writes this test file's secrets and texts for the global teardown. */
export async function writeScanRecord(file: string): Promise<void> {
  const dir = process.env[SCAN_DIR_ENV];
  if (dir === undefined) return;
  await Promise.race([Promise.all(pending), new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
  const record: ScanRecord = { file, secrets: [...secrets], seen: [...seen].map(([text, source]) => [source, text]) };
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}.json.gz`), gzipSync(JSON.stringify(record)));
}

export interface SecretHit {
  what: string;
  file: string;
  source: string;
  /** The text around the hit, the secret itself masked. */
  context: string;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Every secret of every record, looked for in every text of every record. */
export function scanRecords(dir: string): { secrets: number; texts: number; hits: SecretHit[] } {
  const records = readdirSync(dir)
    .filter((f) => f.endsWith(".json.gz"))
    .map((f) => JSON.parse(gunzipSync(readFileSync(join(dir, f))).toString("utf8")) as ScanRecord);
  const all = new Map<string, string>();
  for (const r of records) for (const [value, what] of r.secrets) all.set(value, what);
  const hits: SecretHit[] = [];
  let texts = 0;
  if (all.size === 0) return { secrets: 0, texts, hits };
  const pattern = new RegExp([...all.keys()].sort((a, b) => b.length - a.length).map(escape).join("|"), "g");
  for (const r of records) {
    for (const [source, text] of r.seen) {
      texts++;
      for (const m of text.matchAll(pattern)) {
        const at = m.index ?? 0;
        const context = text.slice(Math.max(0, at - 80), at + m[0].length + 80).replaceAll(m[0], "[SECRET]");
        hits.push({ what: all.get(m[0]) ?? "secret", file: r.file, source, context });
      }
    }
  }
  return { secrets: all.size, texts, hits };
}
