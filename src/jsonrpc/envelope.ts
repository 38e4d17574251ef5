/**
 * Reads a JSON-RPC 2.0 request body (one request or a batch) into calls,
 * keeping each id and params as the caller's raw text. Invalid members become
 * entries with their error, answered individually.
 */
import { isUtf8 } from "node:buffer";
import { holdsMoreJsonContainers, MAX_JSON_CONTAINERS } from "../codec/json-weight.js";
import { invalidRequest, parseError, tooManyJsonContainers } from "../errors/catalogue.js";
import type { GatewayError } from "../errors/gateway-error.js";
import { type RawJsonError, scanArray, scanObject, skipValue, skipWhitespace } from "./raw-json.js";

export interface Call {
  /** Raw id text as sent ("1", "\"abc\"", "12345678901234567890"); undefined for a notification. */
  id: string | undefined;
  method: string;
  /** Parsed params (undefined when absent). */
  params: unknown;
  /** Raw params text as sent, or undefined when absent. */
  paramsText: string | undefined;
}

export type Entry = { call: Call; error?: undefined } | { call?: undefined; id: string; error: GatewayError };

export interface Envelope {
  batch: boolean;
  entries: Entry[];
}

/**
 * Throws parseError() for unparsable text (bytes that are not UTF-8 included), invalidRequest() for an empty batch
 * and tooManyJsonContainers() before parsing a text too costly to parse.
 */
export function readEnvelope(body: Buffer): Envelope {
  if (holdsMoreJsonContainers(body)) throw tooManyJsonContainers(MAX_JSON_CONTAINERS);
  // JSON text is UTF-8 (RFC 8259 §8.1). Decoded as it is, a stray byte became U+FFFD: a call went to the node changed,
  // and an id came back other than the caller sent, which no client matches (found from outside; Anvil refuses it).
  if (!isUtf8(body)) throw parseError();
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    throw parseError();
  }
  try {
    const start = skipWhitespace(body, 0);
    if (Array.isArray(parsed)) {
      if (parsed.length === 0) throw invalidRequest("empty batch");
      const { elements } = scanArray(body, start);
      return {
        batch: true,
        entries: parsed.map((member, i) => {
          const span = elements[i] as { start: number; end: number };
          return readMember(member, body, span.start);
        }),
      };
    }
    return { batch: false, entries: [readMember(parsed, body, start)] };
  } catch (err) {
    // JSON.parse accepted the text, so the scanner cannot fail on it; if it does, say so plainly.
    if ((err as RawJsonError).name === "RawJsonError") throw parseError();
    throw err;
  }
}

function readMember(member: unknown, body: Buffer, start: number): Entry {
  if (typeof member !== "object" || member === null || Array.isArray(member)) {
    return { id: "null", error: invalidRequest("a request must be a JSON object") };
  }
  const request = member as Record<string, unknown>;
  let idText: string | undefined;
  let paramsText: string | undefined;
  scanObject(body, start, (key, valueStart) => {
    if (key !== "id" && key !== "params") return -1;
    const end = skipValue(body, valueStart);
    const text = body.toString("utf8", valueStart, end);
    if (key === "id") idText = text;
    else paramsText = text;
    return end;
  });
  const id = request.id;
  const idValid = id === undefined || id === null || typeof id === "string" || typeof id === "number";
  const replyId = idValid && idText !== undefined ? idText : "null";
  if (!idValid) return { id: "null", error: invalidRequest("id must be a string, a number or null") };
  if (request.jsonrpc !== "2.0") return { id: replyId, error: invalidRequest('jsonrpc must be "2.0"') };
  if (typeof request.method !== "string") return { id: replyId, error: invalidRequest("method must be a string") };
  // "params": null reads as no params, as geth and Anvil read it (clients have sent it), though JSON-RPC 2.0 wants a structure.
  if (request.params === null) return { call: { id: idText, method: request.method, params: undefined, paramsText: undefined } };
  const params = request.params;
  if (params !== undefined && typeof params !== "object") {
    return { id: replyId, error: invalidRequest("params must be an array or an object") };
  }
  return { call: { id: idText, method: request.method, params, paramsText } };
}
