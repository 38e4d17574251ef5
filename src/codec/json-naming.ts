/**
 * How proto messages meet the nodes' JSON, for every codec that reads or
 * writes it (the object codecs, the one-pass binary transcoder, the params
 * codecs): which chain family a message belongs to, the JSON key of each
 * field, and the field that carries keys the proto does not model.
 */
import type { DescField, DescMessage } from "@bufbuild/protobuf";

export type Family = "eth" | "starknet";

/** The field (number 1000) that keeps a JSON object's unmodeled keys. */
export const EXTRAS_FIELD = "json_extras";

export function familyOf(schema: DescMessage): Family {
  return schema.typeName.startsWith("nodegate.starknet.") ? "starknet" : "eth";
}

/** A field's key in the node's JSON: Starknet writes snake_case (block_id), Ethereum the proto JSON name (blockHash). */
export function jsonKeyOf(field: DescField): string {
  return familyOf(field.parent) === "starknet" ? field.name : field.jsonName;
}
