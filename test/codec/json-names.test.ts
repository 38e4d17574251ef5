/**
 * Proto field names are lower_snake_case chosen so that each field's JSON
 * name is the JSON-RPC key. Every object key in the execution-apis fixture
 * results (and the recorded uncle fixtures) is walked alongside the message
 * descriptors: the key must name a field whose jsonName equals it, derived
 * from the field name (no json_name override), and decoding must leave no key
 * in json_extras.unknown_fields.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { DescField, DescMessage, Message } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { BlockTransactionsSchema } from "../../gen/nodegate/eth/v1/block_pb.js";
import { TransactionSchema } from "../../gen/nodegate/eth/v1/transaction_pb.js";
import { type MethodSpec } from "../../src/methods/method-table.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import { CONFORMANCE_DIR } from "../support/conformance.js";
import { loadFixture } from "../support/fixture-upstream.js";

const conformanceDir = CONFORMANCE_DIR;
const table = createMethodTable();

interface ResultSample {
  source: string;
  method: string;
  result: unknown;
}

const samples: ResultSample[] = [
  ...readdirSync(conformanceDir)
    .filter((f) => f.endsWith(".jsonl"))
    .flatMap((f) =>
      readFileSync(join(conformanceDir, f), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { file: string; method: string; response: { result?: unknown } })
        .filter((c) => "result" in c.response)
        .map((c) => ({ source: c.file, method: c.method, result: c.response.result })),
    ),
  ...loadFixture("mainnet-uncles.json").recordings.map((r) => ({ source: "test/fixtures/mainnet-uncles.json", method: r.method, result: r.result })),
];

/** What protoc derives as the JSON name of a field: lower_snake_case to lowerCamelCase. */
function camelCase(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

const LOWER_SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

interface KeySeen {
  key: string;
  message: string;
  field: DescField | undefined;
  where: string;
}

/** Calls `seen` for every object key in `json`, walked as a value of message type `schema`. */
function walkMessage(json: unknown, schema: DescMessage, where: string, seen: (k: KeySeen) => void): void {
  if (json === null || typeof json !== "object") return; // Uint256, BlockId and the like are strings
  if (schema.typeName === BlockTransactionsSchema.typeName) {
    (json as unknown[]).forEach((t, i) => {
      walkMessage(t, TransactionSchema, `${where}[${i}]`, seen);
    });
    return;
  }
  if (Array.isArray(json)) {
    // A list message (BlockReceipts): the array of its one repeated field.
    const only = schema.fields[0] as DescField;
    json.forEach((item, i) => {
      walkField(item, only, `${where}[${i}]`, seen);
    });
    return;
  }
  for (const [key, value] of Object.entries(json as Record<string, unknown>)) {
    const field = schema.fields.find((f) => f.jsonName === key && f.name !== "json_extras");
    seen({ key, message: schema.typeName, field, where: `${where}.${key}` });
    if (field !== undefined) walkField(value, field, `${where}.${key}`, seen);
  }
}

function walkField(json: unknown, field: DescField, where: string, seen: (k: KeySeen) => void): void {
  const isMessage = field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message");
  const message = isMessage ? field.message : undefined;
  if (message === undefined || json === null) return;
  if (field.fieldKind === "list" && Array.isArray(json)) {
    json.forEach((item, i) => {
      walkMessage(item, message, `${where}[${i}]`, seen);
    });
  } else {
    walkMessage(json, message, where, seen);
  }
}

/** Paths of every json_extras.unknown_fields key left in a decoded message tree. */
function unknownKeys(value: unknown, where: string, out: string[]): string[] {
  if (value instanceof Uint8Array || value === null || typeof value !== "object") return out;
  if (Array.isArray(value)) {
    value.forEach((v, i) => unknownKeys(v, `${where}[${i}]`, out));
    return out;
  }
  const record = value as Record<string, unknown>;
  const extras = record.jsonExtras as { unknownFields?: Record<string, string> } | undefined;
  for (const key of Object.keys(extras?.unknownFields ?? {})) out.push(`${where}.${key}`);
  for (const [k, v] of Object.entries(record)) if (k !== "jsonExtras") unknownKeys(v, `${where}.${k}`, out);
  return out;
}

const typed = samples.filter((s) => table.byJsonRpc(s.method) !== undefined);
const keysSeen: KeySeen[] = [];
for (const s of typed) {
  const spec = table.byJsonRpc(s.method) as MethodSpec;
  walkField(s.result, spec.rpc.output.fields[0] as DescField, `${s.method}(${s.source}).result`, (k) => keysSeen.push(k));
}

describe("JSON names equal the JSON-RPC keys", () => {
  it("the walk covers the fixture results (most of them typed, many keys)", () => {
    const untyped = [...new Set(samples.filter((s) => table.byJsonRpc(s.method) === undefined).map((s) => s.method))];
    // net_version is the only recorded method outside the Ethereum method table.
    expect(untyped).toEqual(["net_version"]);
    expect(new Set(keysSeen.map((k) => `${k.message}.${k.key}`)).size).toBeGreaterThan(80);
  });

  it("every key names a field whose jsonName is that key", () => {
    const missing = [...new Set(keysSeen.filter((k) => k.field === undefined).map((k) => `${k.message} has no field for "${k.key}" (${k.where})`))];
    expect(missing).toEqual([]);
  });

  it("each such field is lower_snake_case and its jsonName is the default derivation (no json_name override)", () => {
    const fields = new Map(keysSeen.filter((k) => k.field !== undefined).map((k) => [`${k.message}.${k.key}`, k.field as DescField]));
    const wrong = [...fields].filter(([, f]) => !LOWER_SNAKE.test(f.name) || camelCase(f.name) !== f.jsonName).map(([k, f]) => `${k}: ${f.name}`);
    expect(wrong).toEqual([]);
  });

  it("decoding leaves no key in json_extras.unknown_fields", () => {
    const leftovers = typed.flatMap((s) => {
      const decoded: Message = (table.byJsonRpc(s.method) as MethodSpec).result.decode(s.result);
      return unknownKeys(decoded, `${s.method}(${s.source})`, []);
    });
    expect(leftovers).toEqual([]);
  });
});
