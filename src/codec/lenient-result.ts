/**
 * Reads a node's result as the value it spells when the spelling is not
 * canonical: quantities with leading zeros ("0x01"; Nethermind once padded
 * signatures, Tron its nonces, SKALE still does), data with an odd digit
 * count ("0x0" as a block nonce: Nethermind, Ethermint, early Hedera), and an
 * upper-case "0X". The strict codecs refuse these, and one such field used
 * to make the typed door refuse the whole answer (-32053) while the native
 * door forwarded it; now the field is re-spelt where the codec names it and
 * the decoding tried again (within a budget of work, so a result full of
 * them is refused as before). A block nonce written short ("0x0") is padded
 * to its 8 bytes. Anything else still fails as before.
 */
import { CodecError } from "./codec-error.js";

/** The longest fixed-size data padded with zeros when a node writes it short (a block nonce: 8 bytes). */
const MAX_PADDED_BYTES = 8;

/** More re-spellings than this in one result is not a node's quirk: the result is refused as before. */
const MAX_RESPELLINGS = 256;
/** Each re-spelling decodes the result again: at most this many result bytes in all (a few per large result). */
const RESPELLING_BUDGET_BYTES = 64 * 1024 * 1024;

/**
 * `decode(json)`, re-spelling each non-canonical hex value the codec stops
 * at; `json` (the parsed result, `bytes` long) may be changed in place.
 */
export function decodeRespelling<T>(decode: (json: unknown) => T, json: unknown, root: string, bytes: number): T {
  const most = Math.min(MAX_RESPELLINGS, Math.floor(RESPELLING_BUDGET_BYTES / Math.max(bytes, 1)));
  let value = json;
  for (let tries = 0; ; tries++) {
    try {
      return decode(value);
    } catch (err) {
      if (!(err instanceof CodecError) || tries >= most) throw err;
      // A result that is itself the value (eth_getBalance's "0x01") has no container to re-spell it in.
      if (typeof value === "string" && err.path === root) {
        const fixed = canonicalSpelling(value, err.reason);
        if (fixed === undefined || fixed === value) throw err;
        value = fixed;
      } else if (!respell(value, err, root)) {
        throw err;
      }
    }
  }
}

/** Re-spells the value at the error's path; false when the error is not one of the spellings read here. */
function respell(json: unknown, err: CodecError, root: string): boolean {
  const at = locateValue(json, err.path, root);
  if (at === undefined) return false;
  const value = at.container[at.key];
  if (typeof value !== "string") return false;
  const fixed = canonicalSpelling(value, err.reason);
  if (fixed === undefined || fixed === value) return false;
  at.container[at.key] = fixed;
  return true;
}

/** The same value spelt canonically for the rule the reason names, or undefined. */
export function canonicalSpelling(value: string, reason: string): string | undefined {
  if (!/^0[xX][0-9a-fA-F]*$/.test(value)) return undefined;
  const digits = value.slice(2);
  if (value[1] === "X") return `0x${digits}`;
  if (/leading zero/.test(reason)) return `0x${digits.replace(/^0+(?=[0-9a-fA-F])/, "")}`;
  if (/odd number of digits/.test(reason)) return `0x0${digits}`;
  // A short block nonce ("0x0", "0x00"): nonce-like fields of a few bytes are numbers, so zeros in front keep the value.
  // Longer fixed-size data (hashes, addresses, blooms) is not re-spelt: a short one is not a number with zeros dropped.
  const short = /want (\d+) bytes, got (\d+)/.exec(reason);
  if (short !== null && Number(short[1]) <= MAX_PADDED_BYTES && Number(short[2]) > 0 && Number(short[2]) < Number(short[1])) {
    return `0x${digits.padStart(Number(short[1]) * 2, "0")}`;
  }
  return undefined;
}

type Container = Record<string | number, unknown>;

/** The container and key of the value a CodecError path names ("result.transactions[3].r"), under the JSON `root` names. */
function locateValue(json: unknown, path: string, root: string): { container: Container; key: string | number } | undefined {
  const segments: (string | number)[] = [];
  const pattern = /([^.[\]]+)|\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]/g;
  for (const m of path.matchAll(pattern)) {
    if (m[1] !== undefined) segments.push(m[1]);
    else if (m[2] !== undefined) segments.push(Number(m[2]));
    else if (m[3] !== undefined) segments.push(JSON.parse(`"${m[3]}"`) as string);
  }
  if (segments[0] === root) segments.shift();
  const last = segments.pop();
  if (last === undefined) return undefined;
  let container: unknown = json;
  for (const segment of segments) {
    if (typeof container !== "object" || container === null) return undefined;
    container = (container as Container)[segment];
  }
  if (typeof container !== "object" || container === null) return undefined;
  return { container: container as Container, key: last };
}
