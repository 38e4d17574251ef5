/**
 * gRPC-Web's text mode for the RPCs Connect's handler serves (server
 * streams, JsonRpcService, health, reflection): Connect speaks only binary
 * gRPC-Web, so the request's base64 is decoded into binary gRPC-Web, handed
 * to Connect's universal handler, and each chunk of its answer is sent as a
 * base64 text of its own, padded. Google's grpc-web client decodes the body
 * in 4-character groups as it arrives and reads padding inside it, so a
 * stream's message reaches the caller when it is sent, not when the next one
 * completes a 3-byte group. The method table's unary RPCs are served in text
 * mode on the lane core instead (grpc-web-text.ts).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { ContextValues } from "@connectrpc/connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import type { NodeRequest, NodeResponse } from "../http-types.js";
import { fromBase64, GRPC_WEB_TEXT_CONTENT_TYPE, isGrpcWebText, trailerFrame } from "./grpc-web-text.js";

const BINARY_CONTENT_TYPE = "application/grpc-web+proto";

/** Takes a gRPC-Web text request for an RPC Connect serves (returns true); the rest is left to the caller. */
export type GrpcWebTextTranscoder = (req: NodeRequest, res: NodeResponse) => boolean;

export function createGrpcWebTextTranscoder(
  handlers: () => ReadonlyMap<string, UniversalHandler>,
  contextValues: (req: NodeRequest) => ContextValues,
  maxBodyBytes: number,
): GrpcWebTextTranscoder {
  // A bound on the text, from the bound on the binary body it decodes to (4 characters per 3 bytes, and line breaks).
  const maxTextBytes = Math.ceil(maxBodyBytes / 3) * 4 * 2 + 64;
  return (req, res) => {
    if (req.method !== "POST" || !isGrpcWebText(req.headers["content-type"])) return false;
    const handler = handlers().get((req.url ?? "").split("?", 1)[0] as string);
    if (handler === undefined) return false;
    const universal = universalRequestFromNodeRequest(req, res, undefined, contextValues(req));
    readText(universal.body as AsyncIterable<Uint8Array>, maxTextBytes)
      .then((text) => {
        const header = new Headers(universal.header);
        header.set("content-type", BINARY_CONTENT_TYPE);
        return handler({ ...universal, header, body: once(fromBase64(text)) });
      })
      .then(
        (answer) => universalResponseToNodeResponse(asText(answer), res),
        (error: unknown) => universalResponseToNodeResponse(errorAnswer(ConnectError.from(error, Code.InvalidArgument)), res),
      )
      .catch(() => {
        // The client left while the answer was being written; Connect's adapter drops these too.
      });
    return true;
  };
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

type Answer = Parameters<typeof universalResponseToNodeResponse>[0];

/** Connect's binary gRPC-Web answer in text mode; an answer in another content type (an HTTP error) is left as it is. */
function asText(answer: Answer): Answer {
  const header = new Headers(answer.header);
  if (!(header.get("content-type") ?? "").startsWith("application/grpc-web") || answer.body === undefined) return answer;
  header.set("content-type", GRPC_WEB_TEXT_CONTENT_TYPE);
  header.delete("content-length");
  return { ...answer, header, body: base64Chunks(answer.body) };
}

/** A request refused before Connect saw it (not base64, too large): the status in a trailer frame, as Connect would send it. */
function errorAnswer(error: ConnectError): Answer {
  const text = Buffer.from(trailerFrame(error).toString("base64"), "latin1");
  return { status: 200, header: new Headers({ "content-type": GRPC_WEB_TEXT_CONTENT_TYPE }), body: once(text) };
}
