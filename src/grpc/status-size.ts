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
 * Within the limit a status is left as it is. Over it, the copies go first:
 * texts are shortened (saying so), and JsonRpcError.data is dropped when
 * RevertError carries the same bytes. If the revert bytes alone still do not
 * fit, the details keep the JSON-RPC code and a message saying where the
 * whole error can be read (the Connect protocol and the JSON-RPC door carry
 * errors in the body, without this limit).
 */
import type { OutgoingHttpHeaders } from "node:http";
import type { Http2Session } from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { type Any, anyIs, anyPack, anyUnpack } from "@bufbuild/protobuf/wkt";
import { type Status, StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { JsonRpcErrorSchema, RevertErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";
import { encodeGrpcMessage, reencodeGrpcMessageIn } from "./grpc-message.js";

const MESSAGE = "grpc-message";
const DETAILS = "grpc-status-details-bin";

/** Node's HTTP/2 refuses to send a header block larger than this (maxSendHeaderBlockLength). */
const NODE_SEND_LIMIT = 64 * 1024;
/** Room left for the fields around the status (:status, content-type, x-request-id, ...). */
const OTHER_FIELDS = 1024;
/** How much of a text a shortened status keeps. */
const KEPT_CHARS = 256;

/** The most a status's header list may hold for the client of `session`: what it announced, within what Node sends. */
export function statusSizeLimit(session: Http2Session | undefined): number {
  const announced = session?.remoteSettings?.maxHeaderListSize;
  const limit = announced !== undefined && announced > 0 ? Math.min(announced, NODE_SEND_LIMIT) : NODE_SEND_LIMIT;
  return limit - OTHER_FIELDS;
}

/** A header list's size as HTTP/2 counts it (RFC 9113 6.5.2): name, value and 32 bytes per field. */
function listSize(fields: Record<string, unknown>): number {
  let size = 0;
  for (const [name, value] of Object.entries(fields)) if (typeof value === "string") size += name.length + value.length + 32;
  return size;
}

function shortened(text: string): string {
  if (text.length <= KEPT_CHARS) return text;
  return `${text.slice(0, KEPT_CHARS)}… (shortened from ${text.length} characters to fit the client's gRPC header limit)`;
}

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

/**
 * Shrinks the status in `fields` (trailers, or the head of a trailers-only
 * answer; grpc-message already encoded per spec) in place until it fits `limit`.
 */
export function fitStatus(fields: Record<string, unknown>, limit: number): void {
  if (listSize(fields) <= limit) return;
  const message = fields[MESSAGE];
  if (typeof message === "string") fields[MESSAGE] = encodeGrpcMessage(shortened(decodedMessage(message)));
  const details = fields[DETAILS];
  if (typeof details !== "string" || listSize(fields) <= limit) return;
  let status: Status;
  try {
    status = fromBinary(StatusSchema, Buffer.from(details, "base64"));
  } catch {
    delete fields[DETAILS];
    return;
  }
  status.message = shortened(status.message);
  const json = status.details.map((any) => (anyIs(any, JsonRpcErrorSchema) ? anyUnpack(any, JsonRpcErrorSchema) : undefined)).find((d) => d !== undefined);
  const revert = status.details.map((any) => (anyIs(any, RevertErrorSchema) ? anyUnpack(any, RevertErrorSchema) : undefined)).find((d) => d !== undefined);
  const others = status.details.filter((any) => !anyIs(any, JsonRpcErrorSchema) && !anyIs(any, RevertErrorSchema));
  if (json !== undefined) {
    json.message = shortened(json.message);
    if (revert !== undefined && json.data === quotedHex(revert.data)) json.data = undefined;
  }
  if (revert?.reason !== undefined) revert.reason = shortened(revert.reason);
  const pack = (withRevert: boolean): void => {
    const packed: Any[] = [];
    if (json !== undefined) packed.push(anyPack(JsonRpcErrorSchema, json));
    if (withRevert && revert !== undefined) packed.push(anyPack(RevertErrorSchema, revert));
    status.details = [...packed, ...others];
    fields[DETAILS] = Buffer.from(toBinary(StatusSchema, status)).toString("base64");
  };
  pack(true);
  if (listSize(fields) <= limit) return;
  // The bytes alone are too many for this client: say where they can be read.
  const what = revert !== undefined ? `the revert data (${revert.data.length} bytes)` : `the error's data (${json?.data?.length ?? 0} characters)`;
  const note = `${what} does not fit this client's gRPC header limit; the Connect protocol and the JSON-RPC door return it in full`;
  if (json !== undefined) {
    json.message = `${json.message} [${note}]`;
    json.data = undefined;
  }
  status.message = `${status.message} [${note}]`;
  pack(false);
  fields[MESSAGE] = encodeGrpcMessage(status.message);
  if (listSize(fields) > limit) fields[DETAILS] = Buffer.from(toBinary(StatusSchema, create(StatusSchema, { code: status.code, message: status.message }))).toString("base64");
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
  const limit = statusSizeLimit(res.stream?.session);
  const settle = (fields: OutgoingHttpHeaders): void => {
    reencodeGrpcMessageIn(fields);
    fitStatus(fields, limit);
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
