/**
 * A gRPC status kept within the header list size its client takes. Over
 * HTTP/2 a status travels in trailers, and clients refuse a header list
 * larger than their limit (C-core and Java: 8-16 KiB, which they announce in
 * SETTINGS_MAX_HEADER_LIST_SIZE); Node's HTTP/2 will not even send one over
 * 64 KiB, and resets the stream instead: the caller saw INTERNAL and lost the
 * revert. A revert's bytes come back five times in a status (grpc-message,
 * google.rpc.Status.message, JsonRpcError.message and .data, RevertError),
 * so a few KiB of revert data were enough.
 *
 * Within the limit a status is left as it is. Over it, it is rendered again
 * in steps, each smaller than the last, and the first that fits is sent:
 * JsonRpcError.data left out where RevertError holds the same bytes; then
 * texts shortened too (saying so; to 256 bytes, then 64, then 16); then
 * without the revert bytes, and then without the error's data, with a note
 * saying where the whole error can be read (the Connect protocol and the
 * JSON-RPC door carry errors in the body, without this limit); last, for the
 * smallest limits, without the notes and then without RetryInfo. The
 * JsonRpcError detail, with the node's code, is kept in every step.
 */
import type { OutgoingHttpHeaders } from "node:http";
import type { Http2Session } from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { type Any, anyIs, anyPack, anyUnpack } from "@bufbuild/protobuf/wkt";
import { type Status, StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { type JsonRpcError, JsonRpcErrorSchema, type RevertError, RevertErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { encodeGrpcMessage, reencodeGrpcMessageIn } from "./grpc-message.js";

const MESSAGE = "grpc-message";
const DETAILS = "grpc-status-details-bin";

/** Node's HTTP/2 refuses to send a header block larger than this (maxSendHeaderBlockLength). */
const NODE_SEND_LIMIT = 64 * 1024;
/** Room for what Node adds to a head (:status, date). */
const ADDED_FIELDS = 128;
/** The byte lengths texts are cut to, step by step. */
const TEXT_STEPS = [256, 64, 16];

/** What gRPC C-core announces by default (its hard metadata limit, grpc.absolute_max_metadata_size). */
const C_CORE_DEFAULT_HARD_LIMIT = 16 * 1024;
/** C-core's default soft metadata limit (grpc.max_metadata_size). */
const C_CORE_DEFAULT_SOFT_LIMIT = 8 * 1024;

/**
 * The largest header list a client that announced `announced` takes every
 * time. gRPC C-core (grpcio, Ruby, PHP, C++) announces its hard limit but
 * drops, at random, a header list over its soft limit ("received metadata size
 * exceeds soft limit"), the more often the nearer it is to the hard one: found
 * from outside, grpcio 1.84 lost 14 of 20 statuses of 14.5 KiB. Its soft limit
 * is 8 KiB by default, else 0.8 of the hard one and at least 8 KiB
 * (GetSoftLimitFromChannelArgs). Other clients (grpc-java announces 8 KiB,
 * Node 64 KiB) have no soft limit; under this rule they keep all but the top
 * fifth of a limit over 10 KiB, which only the largest reverts reach.
 */
export function takenEveryTime(announced: number): number {
  if (announced === C_CORE_DEFAULT_HARD_LIMIT) return C_CORE_DEFAULT_SOFT_LIMIT;
  return Math.min(announced, Math.max(C_CORE_DEFAULT_SOFT_LIMIT, Math.floor(announced * 0.8)));
}

/** The most a status's header list may hold for the client of `session`: what it takes every time, within what Node sends. */
export function statusSizeLimit(session: Http2Session | undefined): number {
  const announced = session?.remoteSettings?.maxHeaderListSize;
  const limit = announced !== undefined && announced > 0 ? Math.min(takenEveryTime(announced), NODE_SEND_LIMIT) : NODE_SEND_LIMIT;
  return limit - ADDED_FIELDS;
}

/** A header list's size as HTTP/2 counts it (RFC 9113 6.5.2): name, value and 32 bytes per field. */
export function listSize(fields: Record<string, unknown>): number {
  let size = 0;
  for (const [name, value] of Object.entries(fields)) if (typeof value === "string") size += name.length + value.length + 32;
  return size;
}

/**
 * `text` cut so that `measure` of it is at most `bytes`, saying it was
 * shortened (the mark counts too; only "…" where the whole mark would not
 * leave room for text); whole characters only.
 */
function shortened(text: string, bytes: number, measure: (s: string) => number): string {
  if (measure(text) <= bytes) return text;
  const full = `… [shortened from ${utf8Bytes(text)} bytes]`;
  const mark = measure(full) + 8 <= bytes ? full : "…";
  let low = 0;
  let high = text.length;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if (measure(cutAt(text, mid) + mark) <= bytes) low = mid;
    else high = mid - 1;
  }
  return cutAt(text, low) + mark;
}

/** The first `n` UTF-16 units of `text`, without splitting a surrogate pair. */
function cutAt(text: string, n: number): string {
  const code = text.charCodeAt(n - 1);
  return code >= 0xd800 && code <= 0xdbff ? text.slice(0, n - 1) : text.slice(0, n);
}

const utf8Bytes = (s: string) => Buffer.byteLength(s, "utf8");
const grpcMessageBytes = (s: string) => encodeGrpcMessage(s).length;

function decodedMessage(encoded: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    return encoded;
  }
}

/** The hex text JsonRpcError.data holds for these revert bytes (a JSON string). */
function quotedHex(bytes: Uint8Array): string {
  return `"0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex")}"`;
}

function detailOf<T extends JsonRpcError | RevertError>(details: Any[], schema: typeof JsonRpcErrorSchema | typeof RevertErrorSchema): T | undefined {
  for (const any of details) if (anyIs(any, schema)) return anyUnpack(any, schema) as T | undefined;
  return undefined;
}

/** One way to render the status smaller. */
interface Step {
  textBytes: number;
  /** Keep RevertError (its bytes). */
  revert: boolean;
  /** Keep JsonRpcError.data that is not a copy of the revert bytes, and JsonRpcError.other_members. */
  data: boolean;
  /** Say what was left out and where to read it ("short": in a few words, in grpc-message only, where the whole note is over the limit). */
  notes: boolean | "short";
  /** Keep the details other than JsonRpcError and RevertError (RetryInfo). */
  others: boolean;
}

const STEPS: Step[] = [
  // First only the copy of the revert bytes in JsonRpcError.data goes; then the node's other members and non-revert
  // data, with the texts whole; then, at each shorter text length, with the members and without them, before the
  // revert bytes a typed client reads.
  { textBytes: Number.POSITIVE_INFINITY, revert: true, data: true, notes: true, others: true },
  { textBytes: Number.POSITIVE_INFINITY, revert: true, data: false, notes: true, others: true },
  // The texts whole beside a short note, before cutting them (found from outside: the whole note, written three
  // times, was what put the texts over the limit, and they were cut with the members kept).
  { textBytes: Number.POSITIVE_INFINITY, revert: true, data: false, notes: "short", others: true },
  ...TEXT_STEPS.flatMap((textBytes) => [
    { textBytes, revert: true, data: true, notes: true, others: true },
    { textBytes, revert: true, data: false, notes: true, others: true },
    // The members out beside a short note before the revert bytes go: the whole note alone outweighed a small member.
    { textBytes, revert: true, data: false, notes: "short" as const, others: true },
  ]),
  ...TEXT_STEPS.map((textBytes) => ({ textBytes, revert: false, data: true, notes: true, others: true })),
  ...TEXT_STEPS.map((textBytes) => ({ textBytes, revert: false, data: false, notes: true, others: true })),
  // For the smallest limits: the code and what of the message fits, without notes.
  ...TEXT_STEPS.map((textBytes) => ({ textBytes, revert: false, data: false, notes: false, others: true })),
  { textBytes: 16, revert: false, data: false, notes: false, others: false },
];

/**
 * Shrinks the status in `fields` (trailers, or the head of a trailers-only
 * answer; grpc-message already encoded per spec) in place until it fits
 * `limit`, or to the smallest rendering when nothing fits.
 */
export function fitStatus(fields: Record<string, unknown>, limit: number): void {
  if (listSize(fields) <= limit) return;
  const encoded = fields[MESSAGE];
  const message = typeof encoded === "string" ? decodedMessage(encoded) : "";
  const details = fields[DETAILS];
  let status: Status | undefined;
  if (typeof details === "string") {
    try {
      status = fromBinary(StatusSchema, Buffer.from(details, "base64"));
    } catch {
      delete fields[DETAILS];
    }
  }
  const json = status && detailOf<JsonRpcError>(status.details, JsonRpcErrorSchema);
  const revert = status && detailOf<RevertError>(status.details, RevertErrorSchema);
  const others = status?.details.filter((any) => !anyIs(any, JsonRpcErrorSchema) && !anyIs(any, RevertErrorSchema)) ?? [];
  const dataIsRevert = revert !== undefined && json?.data === quotedHex(revert.data);
  for (const step of STEPS) {
    if (!step.revert && revert === undefined && step.data) continue; // the same as the step before
    let note = "";
    if (!step.notes) note = "";
    else if (!step.revert && revert !== undefined) note = ` [revert data of ${revert.data.length} bytes left out: over this client's gRPC header limit; the Connect protocol returns it]`;
    else if (!step.data && (json?.data !== undefined || json?.otherMembers !== undefined))
      note = step.notes === "short" ? " [error data left out]" : ` [error data left out: over this client's gRPC header limit; the Connect protocol returns it]`;
    const text = (t: string) => shortened(t, step.textBytes, utf8Bytes);
    // grpc-message and google.rpc.Status.message carry one text: grpcio-status's rpc_status.from_call raises on a
    // status whose two differ (found from outside, h72: cut by encoded and by UTF-8 size, they differed by the mark).
    const messageText = shortened(message, step.textBytes, grpcMessageBytes) + note;
    if (typeof encoded === "string") fields[MESSAGE] = encodeGrpcMessage(messageText);
    const statusText = (t: string) => (typeof encoded === "string" && t === message ? messageText : text(t) + note);
    // A short note goes in no other detail: written into them too, it passed limits the texts fit.
    if (step.notes === "short") note = "";
    if (status !== undefined) {
      const packed: Any[] = [];
      if (json !== undefined) {
        const keepData = json.data !== undefined && (dataIsRevert ? false : step.data);
        const keepOthers = json.otherMembers !== undefined && step.data;
        packed.push(
          anyPack(
            JsonRpcErrorSchema,
            create(JsonRpcErrorSchema, {
              code: json.code,
              message: text(json.message) + note,
              ...(keepData ? { data: json.data } : {}),
              ...(keepOthers ? { otherMembers: json.otherMembers } : {}),
            }),
          ),
        );
      }
      if (revert !== undefined && step.revert) {
        packed.push(anyPack(RevertErrorSchema, create(RevertErrorSchema, { data: revert.data, ...(revert.reason === undefined ? {} : { reason: text(revert.reason) }) })));
      }
      const smaller = create(StatusSchema, { code: status.code, message: statusText(status.message), details: step.others ? [...packed, ...others] : packed });
      fields[DETAILS] = Buffer.from(toBinary(StatusSchema, smaller)).toString("base64");
    }
    if (listSize(fields) <= limit) return;
  }
}

/** The two ways a Node response (HTTP/1.1 or HTTP/2 compat) sends a gRPC status: its head (trailers-only) and its trailers. */
interface StatusCarrier {
  writeHead: (...args: unknown[]) => unknown;
  addTrailers: (trailers: OutgoingHttpHeaders) => void;
  stream?: { session?: Http2Session };
}

/** Makes Connect's gRPC answers on `res` carry grpc-message encoded per spec (grpc-message.ts), within what the client takes. */
export function settleGrpcStatusOf(response: object): void {
  const res = response as StatusCarrier;
  const settle = (fields: OutgoingHttpHeaders): void => {
    reencodeGrpcMessageIn(fields);
    // Only an error status can be large; reading the client's settings builds an object, so OK answers skip it.
    const status = fields["grpc-status"];
    if (status !== undefined && status !== "0") fitStatus(fields, statusSizeLimit(res.stream?.session));
  };
  const addTrailers = res.addTrailers.bind(res);
  res.addTrailers = (trailers) => {
    settle(trailers);
    addTrailers(trailers);
  };
  const writeHead = res.writeHead.bind(res);
  res.writeHead = (...args) => {
    for (const arg of args) if (typeof arg === "object" && arg !== null && !Array.isArray(arg)) settle(arg as OutgoingHttpHeaders);
    return writeHead(...args);
  };
}
