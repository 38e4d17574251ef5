/**
 * Request bodies in JSON that Connect's handlers parse are weighed first (codec/json-weight.ts): one holding more
 * arrays and objects than MAX_JSON_CONTAINERS fails RESOURCE_EXHAUSTED before JSON.parse can hold the process, as
 * on the lean lanes. Plain Connect JSON is weighed whole; gRPC, gRPC-Web and Connect streams with a JSON codec
 * carry length-prefixed messages, each weighed on its own, once inflated when the message is compressed.
 */
import type { Compression, UniversalServerRequest } from "@connectrpc/connect/protocol";
import { holdsMoreJsonContainers, MAX_JSON_CONTAINERS } from "../codec/json-weight.js";
import { tooManyJsonContainers } from "../errors/catalogue.js";
import { compressionBrotli, compressionDeflate, compressionGzip } from "./compressions.js";
import { toConnectError } from "./errors.js";
import { FRAME_HEADER } from "./unary-routes.js";

const PLAIN_JSON = /^application\/json/i;
const ENVELOPED_JSON = /^application\/(grpc|grpc-web|connect)\+json(?:;|$)/i;
const COMPRESSIONS = new Map<string, Compression>([compressionGzip, compressionBrotli, compressionDeflate].map((c) => [c.name, c]));

/**
 * The request with its body weighed before Connect reads it, when it is JSON. Connect reads a unary body (and a
 * server stream's one request) whole before parsing it, so holding it here costs nothing more; past `readMaxBytes`
 * it is passed on for Connect to refuse, as is a body Connect would refuse for its framing or compression.
 */
export function withWeighedJsonBody(request: UniversalServerRequest, readMaxBytes: number): UniversalServerRequest {
  const contentType = request.header.get("content-type") ?? "";
  const enveloped = ENVELOPED_JSON.exec(contentType);
  if (enveloped === null && !PLAIN_JSON.test(contentType)) return request;
  const encoding = request.header.get(enveloped?.[1]?.toLowerCase() === "connect" ? "connect-content-encoding" : "grpc-encoding");
  const body = request.body as AsyncIterable<Uint8Array>;
  async function* weighed(): AsyncIterable<Uint8Array> {
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
    const tooHeavy = enveloped === null ? holdsMoreJsonContainers(whole) : await messagesTooHeavy(whole, encoding, readMaxBytes);
    if (tooHeavy) throw toConnectError(tooManyJsonContainers(MAX_JSON_CONTAINERS));
    yield whole;
  }
  return { ...request, body: weighed() };
}

/** Whether a length-prefixed message of `body` holds too many arrays and objects; framing or data Connect refuses is left to it. */
async function messagesTooHeavy(body: Uint8Array, encoding: string | null, readMaxBytes: number): Promise<boolean> {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  for (let at = 0; at + FRAME_HEADER <= body.length; ) {
    const end = at + FRAME_HEADER + view.getUint32(at + 1);
    if (end > body.length) return false;
    let message = body.subarray(at + FRAME_HEADER, end);
    if (((body[at] as number) & 1) !== 0) {
      const compression = COMPRESSIONS.get(encoding ?? "");
      if (compression === undefined) return false;
      try {
        message = await compression.decompress(message, readMaxBytes);
      } catch {
        return false;
      }
    }
    if (holdsMoreJsonContainers(message)) return true;
    at = end;
  }
  return false;
}
