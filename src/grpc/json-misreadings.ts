/**
 * Proto JSON that a hand-written request gets wrong in ways Connect reads
 * without an error, refused here with what was meant:
 * - Enum values are named in full ("BLOCK_TAG_LATEST",
 *   "TRANSACTION_RESPONSE_FLAG_INCLUDE_PROOF_FACTS"). Read with unknown
 *   members ignored, as Connect reads JSON, a value spelt otherwise
 *   ("latest", "INCLUDE_PROOF_FACTS") is dropped like an unknown member: a
 *   tag left the block unset, and a response flag was not asked for, with no
 *   error (found from outside).
 * - Bytes are base64. An Ethereum caller writes them as 0x hex, which
 *   base64 reads as other bytes: "data": "0x6d4ce63c" called another
 *   selector, and an address or hash came out of the wrong length (found
 *   from outside). Such a text is refused when it cannot be base64 as every
 *   proto JSON writer writes it (padded to a multiple of 4 characters), as
 *   hex of an even number of bytes (addresses, hashes, calldata) never is.
 */
import type { DescEnum, DescField, DescMessage } from "@bufbuild/protobuf";
import { ScalarType } from "@bufbuild/protobuf";

/** Where a request's JSON holds something Connect would misread, and what it likely meant; undefined when nothing. */
export function misreadJson(desc: DescMessage, json: unknown, path = ""): string | undefined {
  if (typeof json !== "object" || json === null || Array.isArray(json) || desc.typeName.startsWith("google.protobuf.")) return undefined;
  for (const key in json) {
    const field = fieldOf(desc, key);
    if (field === undefined) continue;
    const value = (json as Record<string, unknown>)[key];
    const at = path === "" ? key : `${path}.${key}`;
    let found: string | undefined;
    switch (field.fieldKind) {
      case "enum":
        found = checkName(field.enum, value, at);
        break;
      case "scalar":
        if (field.scalar === ScalarType.BYTES) found = checkBase64(value, at);
        break;
      case "message":
        found = misreadJson(field.message, value, at);
        break;
      case "list":
        if (!Array.isArray(value)) break;
        for (let i = 0; i < value.length && found === undefined; i++) {
          if (field.listKind === "enum") found = checkName(field.enum, value[i], `${at}[${i}]`);
          else if (field.listKind === "scalar" && field.scalar === ScalarType.BYTES) found = checkBase64(value[i], `${at}[${i}]`);
          else if (field.listKind === "message") found = misreadJson(field.message, value[i], `${at}[${i}]`);
        }
        break;
      default:
        break;
    }
    if (found !== undefined) return found;
  }
  return undefined;
}

function fieldOf(desc: DescMessage, key: string): DescField | undefined {
  for (const field of desc.fields) if (field.jsonName === key || field.name === key) return field;
  return undefined;
}

function checkName(desc: DescEnum, value: unknown, at: string): string | undefined {
  if (typeof value !== "string" || desc.values.some((v) => v.name === value)) return undefined;
  const upper = value.toUpperCase();
  const meant = desc.values.find((v) => v.name === upper || v.name.endsWith(`_${upper}`));
  const hint = meant === undefined ? `one of ${desc.values.map((v) => `"${v.name}"`).join(", ")}` : `as "${meant.name}"`;
  return `${at}: "${value}" is not a ${desc.name} value (in JSON, an enum value is named in full, ${hint})`;
}

const HEX = /^0[xX][0-9a-fA-F]*$/;

function checkBase64(value: unknown, at: string): string | undefined {
  if (typeof value !== "string" || value.length % 4 === 0 || !HEX.test(value)) return undefined;
  const shown = value.length > 20 ? `${value.slice(0, 18)}…` : value;
  if (value.length % 2 === 1) return `${at}: "${shown}" is 0x hex; in JSON, bytes are base64`;
  const base64 = Buffer.from(value.slice(2), "hex").toString("base64");
  if (base64 === "") return `${at}: "0x" is 0x hex for no bytes; in JSON, bytes are base64 (no bytes is "")`;
  return `${at}: "${shown}" is 0x hex; in JSON, bytes are base64 (these bytes are "${base64.length > 24 ? `${base64.slice(0, 22)}…` : base64}")`;
}
