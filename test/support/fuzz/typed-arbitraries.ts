/**
 * fast-check generators of typed requests as hostile callers send them:
 * protobuf bytes (random, tag soup, and valid requests with bytes flipped,
 * cut or added) and Connect JSON bodies (random shapes, and valid requests
 * with members replaced, removed or added). Valid requests come from the
 * native params generator decoded by the method's params codec, so they look
 * like real calls and often reach the upstream.
 */
import { create, type DescMessage, type Message, toBinary, toJson } from "@bufbuild/protobuf";
import fc from "fast-check";
import type { MethodSpec } from "../../../src/methods/method-table.js";
import { paramsText } from "./json-rpc-arbitraries.js";

/** A request message built from generated params, or the empty message when they do not decode. */
function plausibleRequest(spec: MethodSpec): fc.Arbitrary<Message> {
  return paramsText(spec).map((text) => {
    try {
      return spec.params.decode(text === undefined ? undefined : JSON.parse(text)).request;
    } catch {
      return create(spec.rpc.input as DescMessage);
    }
  });
}

const varint = (n: number): number[] => {
  const out: number[] = [];
  let v = n >>> 0;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return out;
};

/** Field tags with any wire type and payloads of any length claim: what a confused or malicious encoder writes. */
const tagSoup = fc
  .array(
    fc.record({
      field: fc.integer({ min: 1, max: 1100 }),
      wireType: fc.integer({ min: 0, max: 7 }),
      payload: fc.uint8Array({ maxLength: 12 }),
      claimedLength: fc.oneof(fc.constant(-1), fc.nat(64), fc.constant(0x7fffffff)),
    }),
    { maxLength: 8 },
  )
  .map((entries) => {
    const bytes: number[] = [];
    for (const e of entries) {
      bytes.push(...varint((e.field << 3) | e.wireType));
      if (e.wireType === 2) bytes.push(...varint(e.claimedLength < 0 ? e.payload.length : e.claimedLength));
      bytes.push(...e.payload);
    }
    return Uint8Array.from(bytes);
  });

type Damage = { kind: "flip"; at: number; bit: number } | { kind: "cut"; at: number } | { kind: "append"; bytes: Uint8Array };

const byteDamage: fc.Arbitrary<Damage> = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), bit: fc.nat(7) }),
  fc.record({ kind: fc.constant("cut" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("append" as const), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
);

function damage(bytes: Uint8Array, damages: Damage[]): Uint8Array {
  let out = Uint8Array.from(bytes);
  for (const d of damages) {
    if (d.kind === "append") {
      out = Uint8Array.from([...out, ...d.bytes]);
      continue;
    }
    if (out.length === 0) continue;
    const at = d.at % out.length;
    if (d.kind === "flip") out[at] = (out[at] as number) ^ (1 << d.bit);
    else out = out.subarray(0, at);
  }
  return out;
}

/** Protobuf request bytes for a method. */
export function requestBytes(spec: MethodSpec): fc.Arbitrary<Uint8Array> {
  const schema = spec.rpc.input as DescMessage;
  const valid = plausibleRequest(spec).map((m) => toBinary(schema, m));
  return fc.oneof(
    { arbitrary: valid, weight: 6 },
    { arbitrary: fc.tuple(valid, fc.array(byteDamage, { minLength: 1, maxLength: 3 })).map(([b, d]) => damage(b, d)), weight: 3 },
    { arbitrary: tagSoup, weight: 2 },
    { arbitrary: fc.uint8Array({ maxLength: 96 }), weight: 2 },
  );
}

/** Replaces, removes or adds one member somewhere in a JSON value. */
function reshape(value: unknown, path: number[], replacement: unknown, mode: "replace" | "remove" | "add"): unknown {
  if (typeof value !== "object" || value === null) return mode === "replace" ? replacement : value;
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  if (entries.length === 0 || path.length === 0) {
    if (mode === "add" && !Array.isArray(value)) return { ...value, [`unknown${path.length}`]: replacement };
    return mode === "replace" ? replacement : value;
  }
  const i = (path[0] as number) % entries.length;
  const [key, child] = entries[i] as readonly [string, unknown];
  const copy: Record<string, unknown> | unknown[] = Array.isArray(value) ? [...value] : { ...value };
  if (path.length === 1 && mode === "remove") {
    if (Array.isArray(copy)) copy.splice(i, 1);
    else delete copy[key];
    return copy;
  }
  (copy as Record<string, unknown>)[key] = reshape(child, path.slice(1), replacement, mode);
  return copy;
}

/** Connect JSON request bodies for a method, as text. */
export function requestJson(spec: MethodSpec): fc.Arbitrary<string> {
  const schema = spec.rpc.input as DescMessage;
  const valid = plausibleRequest(spec).map((m) => toJson(schema, m) as unknown);
  const odd = fc.oneof(
    fc.jsonValue({ maxDepth: 2 }),
    fc.constantFrom("0x", "0x1", "latest", -1, 1e21, "NaN", "Infinity", "-0", "AAAA", "@@@", "1.5", [], {}, null, `${"9".repeat(40)}`),
  );
  const reshaped = fc
    .tuple(valid, fc.array(fc.nat(), { minLength: 1, maxLength: 4 }), odd, fc.constantFrom("replace" as const, "remove" as const, "add" as const))
    .map(([v, path, r, mode]) => JSON.stringify(reshape(v, path, r, mode)));
  return fc.oneof(
    { arbitrary: valid.map((v) => JSON.stringify(v)), weight: 5 },
    { arbitrary: reshaped, weight: 5 },
    { arbitrary: fc.json({ maxDepth: 3 }), weight: 1 },
    { arbitrary: fc.integer({ min: 10, max: 50_000 }).map((d) => `{"unknownDeep":${"[".repeat(d)}${"]".repeat(d)}}`), weight: 1 },
    { arbitrary: fc.tuple(valid, fc.nat()).map(([v, at]) => JSON.stringify(v).slice(0, at % (JSON.stringify(v).length + 1))), weight: 1 },
  );
}
