/**
 * An HTTP/1.1 body sent with a transfer coding other than chunked (Transfer-Encoding: gzip, chunked): Node's parser
 * frames it by its chunks and hands the coded bytes on as the body, so the native door read gzip as JSON (-32700) and
 * plain text under a gzip coding as if none were named (found from outside). RFC 9112 (6.1) has a server answer 501
 * to a transfer coding it does not know; a compressed body goes in Content-Encoding, which both doors read.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { NodeRequest, NodeResponse } from "./http-types.js";
import { invalidRequest } from "../errors/catalogue.js";
import { refuseAtHeaders } from "../grpc/arrival-hold.js";
import { tagRequestId } from "../grpc/unknown-rpc.js";

/** The first transfer coding of the request that is not chunked, lower-cased; undefined when there is none. */
function unknownTransferCoding(req: NodeRequest): string | undefined {
  const header = req.headers["transfer-encoding"];
  if (header === undefined || req.httpVersionMajor !== 1) return undefined;
  for (const coding of header.split(",")) {
    const name = coding.split(";", 1)[0]?.trim().toLowerCase() ?? "";
    if (name !== "chunked") return name.slice(0, 40);
  }
  return undefined;
}

/**
 * Answers 501 (and closes the connection: the rest of the body is not read) to a request with a transfer coding
 * other than chunked, in the terms of the door its path names (a typed path: its protocol's UNIMPLEMENTED); false
 * for every other request.
 */
export function refuseTransferCoding(req: NodeRequest, res: NodeResponse, typedPath: boolean): boolean {
  const coding = unknownTransferCoding(req);
  if (coding === undefined) return false;
  const words = `transfer-encoding ${JSON.stringify(coding)} is not supported: only chunked (send a compressed body with content-encoding gzip, deflate or br)`;
  tagRequestId(req.headers, res);
  res.setHeader("connection", "close");
  if (typedPath) {
    refuseAtHeaders(req, res, new ConnectError(words, Code.Unimplemented));
    return true;
  }
  const body = Buffer.from(`{"jsonrpc":"2.0","id":null,"error":${invalidRequest(words).toJson()}}`);
  res.writeHead(501, { "content-type": "application/json", "content-length": body.length });
  res.end(body);
  return true;
}
