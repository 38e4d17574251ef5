/**
 * A typed RPC's path asked in a way no protocol nodegate speaks: a POST with no content type, or one no protocol
 * takes, and a GET without Connect's query (checked in connect-get.ts). Connect's handler answers those 415 with an
 * empty body (found from outside: curl without -H 'content-type: …' got a blank 415, counted as outcome Unknown);
 * this says what to send.
 */
import type { NodeRequest, NodeResponse } from "../http/http-types.js";

/** Content types one of the typed protocols takes (Connect's handler decides the finer points). */
const TYPED_CONTENT_TYPE = /^application\/(?:grpc(?:-web(?:-text)?)?(?:\+[a-z]+)?|connect\+[a-z]+|proto|json)(?:\s*;|$)/i;

const WHAT_TO_SEND =
  "POST with content-type application/json or application/proto (Connect), application/grpc (gRPC) or application/grpc-web (gRPC-Web), or GET with ?encoding=json&message=<the request as JSON> (Connect)";

/** Answers a POST whose content type no typed protocol takes (415, Connect's JSON error) and returns true; false for every other request. */
export function refuseUnsupportedRequest(req: NodeRequest, res: NodeResponse): boolean {
  if (req.method !== "POST") return false;
  const contentType = req.headers["content-type"];
  if (contentType === undefined) return refuseUnsupported(res, "no content-type");
  if (!TYPED_CONTENT_TYPE.test(contentType)) return refuseUnsupported(res, `content-type ${JSON.stringify(contentType.slice(0, 100))}`);
  return false;
}

/** Answers a typed path asked in a way no protocol takes (`wrong`: how), saying what to send. */
export function refuseUnsupported(res: NodeResponse, wrong: string): true {
  res.writeHead(415, { "content-type": "application/json" });
  res.end(JSON.stringify({ code: "invalid_argument", message: `unsupported request (${wrong}): ${WHAT_TO_SEND}` }));
  return true;
}
