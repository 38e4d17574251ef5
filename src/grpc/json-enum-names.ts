/**
 * Proto JSON requests name enum values in full ("BLOCK_TAG_LATEST",
 * "TRANSACTION_RESPONSE_FLAG_INCLUDE_PROOF_FACTS"). Read with unknown members
 * ignored, as Connect reads JSON, a value spelt otherwise ("latest",
 * "INCLUDE_PROOF_FACTS") is dropped like an unknown member: a tag left the
 * block unset, and a response flag was not asked for, with no error (found
 * from outside). Such a name is refused here instead, with the name meant.
 */
import type { DescEnum, DescField, DescMessage } from "@bufbuild/protobuf";

/** Where a request's JSON names an enum value its enum does not have, and what it likely meant; undefined when none. */
export function unknownEnumName(desc: DescMessage, json: unknown, path = ""): string | undefined {
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
      case "message":
        found = unknownEnumName(field.message, value, at);
        break;
      case "list":
        if (!Array.isArray(value)) break;
        for (let i = 0; i < value.length && found === undefined; i++) {
          if (field.listKind === "enum") found = checkName(field.enum, value[i], `${at}[${i}]`);
          else if (field.listKind === "message") found = unknownEnumName(field.message, value[i], `${at}[${i}]`);
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
