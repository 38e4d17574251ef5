/**
 * gRPC-Web's text mode for the RPCs Connect's handler serves (server
 * streams, JsonRpcService, health, reflection): Connect speaks only binary
 * gRPC-Web, so the request's base64 is decoded into binary gRPC-Web for its
 * handler, and each chunk of the answer is sent as a base64 text of its
 * own, padded. Google's grpc-web client decodes the body in 4-character
 * groups as it arrives and reads padding inside it, so a stream's message
 * reaches the caller when it is sent, not when the next one completes a
 * 3-byte group. The method table's unary RPCs are served in text mode on
 * the lane core instead (grpc-web-unary.ts).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { fromBase64, GRPC_WEB_BINARY_CONTENT_TYPE, GRPC_WEB_TEXT_CONTENT_TYPE, trailerFrame } from "./grpc-web-unary.js";

/** One text-mode call through Connect's handler for its RPC; `maxBodyBytes` bounds the binary request. */
export async function serveTextMode(handler: UniversalHandler, request: UniversalServerRequest, maxBodyBytes: number): Promise<UniversalServerResponse> {
  let body: Buffer;
  try {
    // 4 characters per 3 bytes, with room for line breaks.
    body = fromBase64(await readText(request.body as AsyncIterable<Uint8Array>, Math.ceil(maxBodyBytes / 3) * 8 + 64));
  } catch (err) {
    return errorAnswer(ConnectError.from(err, Code.InvalidArgument));
  }
  const header = new Headers(request.header);
  header.set("content-type", GRPC_WEB_BINARY_CONTENT_TYPE);
  return asText(await handler({ ...request, header, body: once(body) }));
}

async function readText(body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > maxBytes) throw new ConnectError(`message size is larger than configured readMaxBytes ${maxBytes}`, Code.ResourceExhausted);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

async function* base64Chunks(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  for await (const chunk of body) yield Buffer.from(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("base64"), "latin1");
}

/** Connect's binary gRPC-Web answer in text mode; an answer in another content type (an HTTP error) is left as it is. */
function asText(answer: UniversalServerResponse): UniversalServerResponse {
  const header = new Headers(answer.header);
  if (!(header.get("content-type") ?? "").startsWith("application/grpc-web") || answer.body === undefined) return answer;
  header.set("content-type", GRPC_WEB_TEXT_CONTENT_TYPE);
  header.delete("content-length");
  return { ...answer, header, body: base64Chunks(answer.body) };
}

/** A request refused before Connect saw it (not base64, too large, past its deadline): the status in a trailer frame, as Connect sends it. */
function errorAnswer(error: ConnectError): UniversalServerResponse {
  const text = Buffer.from(trailerFrame(error).toString("base64"), "latin1");
  return { status: 200, header: new Headers({ "content-type": GRPC_WEB_TEXT_CONTENT_TYPE }), body: once(text) };
}
