/**
 * What nodegate must answer to a native JSON-RPC text, worked out from the
 * JSON-RPC 2.0 rules independently of nodegate's envelope code: which
 * members get which error, which get an answer from the node, which get
 * nothing (notifications), and which calls must reach the upstream. Whether
 * a method's params are valid is the method table's params codec's call:
 * that is the definition the upstream check holds nodegate to.
 */
import type { MethodTable } from "../../../src/methods/method-table.js";
import { InvalidParamsError } from "../../../src/methods/params-codec.js";

export type MemberPrediction =
  /** nodegate answers this error itself (reply false: a notification, answered with nothing). */
  | { kind: "error"; code: number; id: unknown; reply: boolean }
  /** The call goes to the node, which answers it (reply false: a notification). */
  | { kind: "upstream"; method: string; id: unknown; reply: boolean };

export type Prediction =
  | { kind: "parse-error" }
  | { kind: "empty-batch" }
  | { kind: "answers"; batch: boolean; members: MemberPrediction[] };

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function predictMember(member: unknown, table: MethodTable, passThrough: ReadonlySet<string>): MemberPrediction {
  if (!isPlainObject(member)) return { kind: "error", code: -32600, id: null, reply: true };
  const id = member.id;
  if (!(id === undefined || id === null || typeof id === "string" || typeof id === "number")) return { kind: "error", code: -32600, id: null, reply: true };
  // An invalid request is answered even without an id (with id null); a valid call without one is a notification.
  const replyId = id === undefined ? null : id;
  if (member.jsonrpc !== "2.0") return { kind: "error", code: -32600, id: replyId, reply: true };
  if (typeof member.method !== "string") return { kind: "error", code: -32600, id: replyId, reply: true };
  // "params": null reads as no params, as geth and Anvil read it.
  const params = member.params === null ? undefined : member.params;
  if (params !== undefined && typeof params !== "object") return { kind: "error", code: -32600, id: replyId, reply: true };
  const reply = id !== undefined;
  const method = member.method;
  const spec = table.byJsonRpc(method);
  if (spec !== undefined) {
    if (spec.family !== "eth") return { kind: "error", code: -32601, id: replyId, reply };
    try {
      spec.params.decode(params);
    } catch (err) {
      if (err instanceof InvalidParamsError) return { kind: "error", code: -32602, id: replyId, reply };
      throw err;
    }
    return { kind: "upstream", method, id: replyId, reply };
  }
  // A listed method of the Starknet family (by its namespace) is the wrong family on an Ethereum network.
  if (passThrough.has(method) && !/^(?:starknet|pathfinder|juno)_/.test(method)) return { kind: "upstream", method, id: replyId, reply };
  return { kind: "error", code: -32601, id: replyId, reply };
}

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The prediction for a body sent to an Ethereum network. */
export function predictNative(body: Buffer, table: MethodTable, passThrough: ReadonlySet<string>): Prediction {
  let parsed: unknown;
  try {
    // JSON text is UTF-8 (RFC 8259 §8.1): bytes that are not are unparsable text, not text with U+FFFD in it.
    parsed = JSON.parse(STRICT_UTF8.decode(body));
  } catch {
    return { kind: "parse-error" };
  }
  if (Array.isArray(parsed)) {
    if (parsed.length === 0) return { kind: "empty-batch" };
    return { kind: "answers", batch: true, members: parsed.map((m) => predictMember(m, table, passThrough)) };
  }
  return { kind: "answers", batch: false, members: [predictMember(parsed, table, passThrough)] };
}

/** The methods a prediction sends upstream, sorted (a multiset). */
export function predictedUpstream(prediction: Prediction): string[] {
  if (prediction.kind !== "answers") return [];
  return prediction.members.flatMap((m) => (m.kind === "upstream" ? [m.method] : [])).sort();
}
