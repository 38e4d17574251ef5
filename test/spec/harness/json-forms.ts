/**
 * Checks for the field rows of the spec's resource tables: the form of a
 * value in a native answer (quantity, data of a length), and that the typed
 * answer holds the same value in a modelled field (not in json_extras), so
 * written back as JSON it is the node's value.
 */
import type { DescMessage, Message } from "@bufbuild/protobuf";
import { expect } from "vitest";
import type { JsonExtras } from "../../../gen/nodegate/jsonrpc/v1/json_extras_pb.js";
import { createCodecRegistry } from "../../../src/methods/default-table.js";

/** A canonical QUANTITY: 0x, lowercase, no leading zeros. */
export const QUANTITY = /^0x(?:0|[1-9a-f][0-9a-f]*)$/;

const codecs = createCodecRegistry();

/** Asserts a canonical quantity and returns its value. */
export function expectQuantity(value: unknown, what: string): bigint {
  expect(value, what).toMatch(QUANTITY);
  return BigInt(value as string);
}

/** Asserts lowercase 0x hex data, of exactly `bytes` bytes when given, and returns it. */
export function expectData(value: unknown, what: string, bytes?: number): string {
  expect(value, what).toMatch(bytes === undefined ? /^0x(?:[0-9a-f]{2})*$/ : new RegExp(`^0x[0-9a-f]{${bytes * 2}}$`));
  return value as string;
}

/** The typed message written back as the node's JSON. */
export function typedJson(schema: DescMessage, typed: Message): Record<string, unknown> {
  return JSON.parse(codecs.message(schema).encode(typed)) as Record<string, unknown>;
}

/**
 * Asserts the typed message models `key` as a field and holds the node's
 * value there: null as the unset field plus a null_keys entry, anything else
 * as a value that writes back to exactly the native JSON.
 */
export function expectTypedCarries(schema: DescMessage, typed: Message | undefined, key: string, native: Record<string, unknown>): void {
  expect(typed, `a typed ${schema.name}`).toBeDefined();
  const message = typed as unknown as Record<string, unknown>;
  const field = schema.fields.find((f) => f.jsonName === key || f.name === key);
  expect(field, `${schema.typeName} has a field for ${key}`).toBeDefined();
  const extras = message.jsonExtras as JsonExtras | undefined;
  expect(Object.keys(extras?.unknownFields ?? {}), `${key} is a modelled field, not an unknown one`).not.toContain(key);
  if (!(key in native)) {
    const value = message[field?.localName ?? ""];
    expect(Array.isArray(value) ? value : value === undefined ? [] : [value], `${key} is absent, so unset`).toEqual([]);
    expect(typedJson(schema, typed as Message), `${key} stays absent`).not.toHaveProperty(key);
    return;
  }
  if (native[key] === null) {
    expect(message[field?.localName ?? ""], `${key} is null, so unset`).toBeUndefined();
    expect(extras?.nullKeys, `${key} is recorded as null`).toContain(key);
  }
  expect(typedJson(schema, typed as Message)[key], `typed ${key} written back`).toEqual(native[key]);
}
