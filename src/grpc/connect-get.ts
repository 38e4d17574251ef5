/**
 * Connect's GET requests carry the message in the query, base64-encoded when
 * base64=1. Connect's handler turns a malformed one into an internal error
 * (HTTP 500); it is the client's input, so it is refused here as Connect
 * refuses other bad input: invalid_argument, HTTP 400. A JSON message is
 * checked for what Connect would misread, as a POST's is (json-misreadings.ts).
 *
 * GETs are the calls HTTP caches keep, and Connect compresses a GET's answer
 * as its Accept-Encoding asks: the answer says it varies with it, so a cache
 * does not hand a gzip answer to a client that cannot read one.
 */
import type { NodeRequest, NodeResponse } from "../http/http-types.js";
import { misreadJson } from "./json-misreadings.js";
import { refuseUnsupported } from "./unsupported-request.js";
import type { UnaryRoute } from "./unary-routes.js";

/** Standard and URL-safe alphabets, with or without padding. */
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/**
 * Answers a GET of a typed path without Connect's encoding and message parameters (415, saying what to send), and a
 * Connect GET whose base64 message cannot be decoded, or whose JSON message Connect would misread (0x hex bytes, an
 * enum not named in full: json-misreadings.ts, as for a POST); false for every other request.
 */
export function refuseMalformedGet(req: NodeRequest, res: NodeResponse, routes: ReadonlyMap<string, UnaryRoute>): boolean {
  if (req.method !== "GET") return false;
  const url = req.url ?? "";
  const query = url.indexOf("?");
  const params = new URLSearchParams(query < 0 ? "" : url.slice(query + 1));
  if (!params.has("message") || !params.has("encoding")) return refuseUnsupported(res, "a GET without the encoding and message query parameters");
  const message = params.get("message") ?? "";
  const base64 = params.get("base64") === "1";
  if (base64 && !(BASE64.test(message) && message.replace(/=+$/, "").length % 4 !== 1)) return refuse(res, "the message query parameter is not base64");
  const route = routes.get(url.slice(0, query));
  if (route === undefined || params.get("encoding") !== "json" || (params.get("compression") ?? "identity") !== "identity") return false;
  let json: unknown;
  try {
    json = JSON.parse(base64 ? Buffer.from(message, "base64").toString("utf8") : message);
  } catch {
    return false; // Connect says what is wrong with it
  }
  const misread = misreadJson(route.spec.rpc.input, json);
  return misread !== undefined && refuse(res, misread);
}

function refuse(res: NodeResponse, message: string): true {
  res.writeHead(400, { "content-type": "application/json" });
  res.end(JSON.stringify({ code: "invalid_argument", message }));
  return true;
}

/**
 * What a Connect GET's answer depends on besides its URL, for HTTP caches: its compression, the key, secret and
 * network the caller named, and the origin a key's allowlist may screen (found from outside: a shared cache told only
 * accept-encoding could hand one key's answer to callers with no key, another network's, or another origin's); the
 * User-Agent too when some key's allowlist screens it (`userAgents`: a Vary on it splits a cache by every browser
 * version, so only then). CORS may have put origin there first.
 */
const GET_VARY = ["accept-encoding", "x-api-key", "authorization", "x-nodegate-network", "origin"];

export function varyForConnectGet(res: NodeResponse, byUserAgent: boolean): void {
  const prior = res.getHeader("vary");
  const names = prior === undefined ? [] : String(prior).split(",").map((n) => n.trim().toLowerCase());
  for (const name of byUserAgent ? [...GET_VARY, "user-agent"] : GET_VARY) if (!names.includes(name)) names.push(name);
  res.setHeader("vary", names.join(", "));
}
