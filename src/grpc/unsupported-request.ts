/**
 * A typed RPC's path asked in a way no protocol nodegate speaks: a POST with no content type, or one no protocol
 * takes, and a GET without Connect's query. Connect's handler answers those 415 with an empty body (found from
 * outside: curl without -H 'content-type: …' got a blank 415, counted as outcome Unknown); this says what to send.
 */
import type { NodeRequest, NodeResponse } from "../http/http-types.js";

/** Content types one of the typed protocols takes (Connect's handler decides the finer points). */
const TYPED_CONTENT_TYPE = /^application\/(?:grpc(?:-web(?:-text)?)?(?:\+[a-z]+)?|connect\+[a-z]+|proto|json)(?:\s*;|$)/i;

const WHAT_TO_SEND =
  "POST with content-type application/json or application/proto (Connect), application/grpc (gRPC) or application/grpc-web (gRPC-Web), or GET with ?encoding=json&message=<the request as JSON> (Connect)";

/** Answers such a request (415, Connect's JSON error) and returns true; false for every other request. */
export function refuseUnsupportedRequest(req: NodeRequest, res: NodeResponse): boolean {
  let wrong: string | undefined;
  if (req.method === "POST") {
    const contentType = req.headers["content-type"];
    if (contentType === undefined) wrong = "no content-type";
    else if (!TYPED_CONTENT_TYPE.test(contentType)) wrong = `content-type ${JSON.stringify(contentType.slice(0, 100))}`;
  } else if (req.method === "GET") {
    const url = req.url ?? "";
    const query = url.indexOf("?");
    const params = new URLSearchParams(query < 0 ? "" : url.slice(query + 1));
    if (!params.has("message") || !params.has("encoding")) wrong = "a GET without the encoding and message query parameters";
  }
  if (wrong === undefined) return false;
  res.writeHead(415, { "content-type": "application/json" });
  res.end(JSON.stringify({ code: "invalid_argument", message: `unsupported request (${wrong}): ${WHAT_TO_SEND}` }));
  return true;
}
