/**
 * Request bodies in JSON that Connect's handlers parse are checked first, as the lean lanes check theirs:
 * - weighed (codec/json-weight.ts): one holding more arrays and objects than MAX_JSON_CONTAINERS fails
 *   RESOURCE_EXHAUSTED before JSON.parse can hold the process;
 * - read for what Connect would misread without an error (json-misreadings.ts: 0x hex in a bytes field, an enum
 *   value not named in full), refused INVALID_ARGUMENT with what was likely meant. Without this, a compressed
 *   Connect POST, gRPC-Web JSON and every stream's request were read as other bytes or with a field dropped,
 *   where the same JSON sent uncompressed to a unary RPC was refused (found from outside).
 * Plain Connect JSON (what reaches Connect of it: compressed POSTs) is checked whole, once inflated; gRPC,
 * gRPC-Web and Connect streams with a JSON codec carry length-prefixed messages, checked once inflated when
 * compressed: a unary or server-stream call's one message before Connect reads the body, a client or bidi stream's
 * messages as each arrives.
 */
import type { DescMessage, DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Compression, UniversalServerRequest } from "@connectrpc/connect/protocol";
import { holdsMoreJsonContainers, MAX_JSON_CONTAINERS } from "../codec/json-weight.js";
import { tooManyJsonContainers } from "../errors/catalogue.js";
import { compressionBrotli, compressionDeflate, compressionGzip } from "./compressions.js";
import { toConnectError } from "./errors.js";
import { misreadJson } from "./json-misreadings.js";
import { FRAME_HEADER } from "./unary-routes.js";

const PLAIN_JSON = /^application\/json/i;
const ENVELOPED_JSON = /^application\/(grpc|grpc-web|connect)\+json(?:;|$)/i;
const COMPRESSIONS = new Map<string, Compression>([compressionGzip, compressionBrotli, compressionDeflate].map((c) => [c.name, c]));
const utf8 = new TextDecoder();

/**
 * The request with its body checked before Connect reads it, when it is JSON for messages of type `input`.
 * Connect reads a unary body (and a server stream's one request) whole before parsing it, so holding it here costs
 * nothing more; past `readMaxBytes` it is passed on for Connect to refuse, as is a body Connect would refuse for
 * its JSON, framing or compression.
 */
export function withCheckedJsonBody(request: UniversalServerRequest, method: DescMethod, readMaxBytes: number): UniversalServerRequest {
  const input = method.input;
  const contentType = request.header.get("content-type") ?? "";
  const enveloped = ENVELOPED_JSON.exec(contentType);
  if (enveloped === null && !PLAIN_JSON.test(contentType)) return request;
  const encoding = request.header.get(
    enveloped === null ? "content-encoding" : enveloped[1]?.toLowerCase() === "connect" ? "connect-content-encoding" : "grpc-encoding",
  );
  const body = request.body as AsyncIterable<Uint8Array>;
  // A client or bidi stream's messages are checked as each arrives: read whole, a stream whose client waits for an
  // answer before it closes its side (a reflection client) was never answered (found from outside, h74).
  if (enveloped !== null && (method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming"))
    return { ...request, body: checkedAsTheyCome(body, encoding, input, readMaxBytes) };
  async function* checked(): AsyncIterable<Uint8Array> {
    const chunks: Uint8Array[] = [];
    let size = 0;
    const source = body[Symbol.asyncIterator]();
    for (;;) {
      const next = await source.next();
      if (next.done === true) break;
      chunks.push(next.value);
      size += next.value.length;
      if (size > readMaxBytes) {
        yield* chunks;
        yield* { [Symbol.asyncIterator]: () => source };
        return;
      }
    }
    const whole = chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks, size);
    const refusal =
      enveloped === null
        ? refusalOf(await inflated(whole, encoding ?? "identity", readMaxBytes), input)
        : // Unary and server-stream methods take one message: Connect refuses a second, so only the first is read here
          // (found from outside, h74: 1000 frames of 5 KB, each 5 MB once inflated, held a core for 24 s).
          await refusalOfMessage(whole, encoding, input, readMaxBytes);
    if (refusal !== undefined) throw refusal;
    yield whole;
  }
  return { ...request, body: checked() };
}

/** Why the first length-prefixed message of `body` is refused; framing or data Connect refuses is left to it. */
async function refusalOfMessage(body: Uint8Array, encoding: string | null, input: DescMessage, readMaxBytes: number): Promise<ConnectError | undefined> {
  if (body.length < FRAME_HEADER) return undefined;
  const end = FRAME_HEADER + new DataView(body.buffer, body.byteOffset, body.byteLength).getUint32(1);
  if (end > body.length) return undefined;
  const message = body.subarray(FRAME_HEADER, end);
  return refusalOf(((body[0] as number) & 1) === 0 ? message : await inflated(message, encoding ?? "", readMaxBytes), input);
}

/** A stream's length-prefixed messages passed on as each completes, each checked first; a message past `readMaxBytes` (and all after it) is left to Connect. */
async function* checkedAsTheyCome(body: AsyncIterable<Uint8Array>, encoding: string | null, input: DescMessage, readMaxBytes: number): AsyncIterable<Uint8Array> {
  let pending: Buffer = Buffer.alloc(0);
  const source = body[Symbol.asyncIterator]();
  for (;;) {
    const next = await source.next();
    if (next.done === true) break;
    pending = pending.length === 0 ? Buffer.from(next.value) : Buffer.concat([pending, next.value]);
    let at = 0;
    while (pending.length - at >= FRAME_HEADER) {
      const length = pending.readUInt32BE(at + 1);
      if (length > readMaxBytes) {
        yield pending;
        yield* { [Symbol.asyncIterator]: () => source };
        return;
      }
      if (pending.length - at - FRAME_HEADER < length) break;
      const refusal = await refusalOfMessage(pending.subarray(at, at + FRAME_HEADER + length), encoding, input, readMaxBytes);
      if (refusal !== undefined) throw refusal;
      at += FRAME_HEADER + length;
    }
    if (at > 0) {
      yield pending.subarray(0, at);
      pending = pending.subarray(at);
    }
  }
  if (pending.length > 0) yield pending;
}

/** `message` inflated per `encoding`; undefined when Connect will refuse it (an unknown encoding, corrupt data, too large). */
async function inflated(message: Uint8Array, encoding: string, readMaxBytes: number): Promise<Uint8Array | undefined> {
  if (encoding === "identity") return message;
  const compression = COMPRESSIONS.get(encoding);
  if (compression === undefined) return undefined;
  try {
    return await compression.decompress(message, readMaxBytes);
  } catch {
    return undefined;
  }
}

/** Why one JSON message of type `input` is refused before Connect reads it; undefined for JSON it can read as meant, or JSON it refuses itself. */
function refusalOf(message: Uint8Array | undefined, input: DescMessage): ConnectError | undefined {
  if (message === undefined) return undefined;
  if (holdsMoreJsonContainers(message)) return toConnectError(tooManyJsonContainers(MAX_JSON_CONTAINERS));
  let json: unknown;
  try {
    json = JSON.parse(utf8.decode(message));
  } catch {
    return undefined;
  }
  const misread = misreadJson(input, json);
  return misread === undefined ? undefined : new ConnectError(misread, Code.InvalidArgument);
}
