/**
 * Builds a JSON-RPC request for an upstream and reads its reply: the raw span
 * of the result (never re-serialised), or the node's error as a GatewayError.
 */
import { Code } from "@connectrpc/connect";
import { grpcCodeForNodeError } from "../errors/code-map.js";
import { revertBytes } from "../errors/revert.js";
import { malformedNodeError, upstreamBadResponse } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { isJsonValue } from "../jsonrpc/json-check.js";
import { lastNonWhitespace, RawJsonError, scanObject, skipValue, skipWhitespace } from "../jsonrpc/raw-json.js";

/** The cause of the error a reply with another request's id makes (the connection it came on is out of step). */
export const ANOTHER_REQUESTS_REPLY = new Error("another request's reply");

/** The result of a successful upstream call: `body.subarray(start, end)` is the result's JSON text. */
export interface UpstreamResult {
  body: Buffer;
  start: number;
  end: number;
  /**
   * Set on an answer that several calls get (one served from the cache's
   * memory, or shared by callers of one upstream call): the typed door keeps
   * the answer's protobuf encodings here, by method, so it is transcoded once.
   */
  encodings?: Map<object, Buffer>;
  /**
   * Set on an answer a partner upstream gave during the primary's outage: the
   * cache judges finality by the primary's finalized block, which says nothing
   * of a partner's chain (a lagging node, or a dev node with other blocks
   * under the same chain id), so such an answer is never stored.
   */
  fromPartner?: true;
  /** Set once the result is known to be one JSON value (checked before it was cached, or read from the cache). */
  jsonChecked?: true;
}

/**
 * A large reply kept in the pieces it was read into: joining several MiB into
 * one buffer costs a fresh allocation (page faults) and a copy per call, and
 * the native path only forwards the result. `body` joins them on first use,
 * for readers that need the bytes in one piece (the typed door, the cache).
 */
export class ChunkedResult implements UpstreamResult {
  readonly chunks: readonly Buffer[];
  /** Offsets of the result within the joined reply. */
  readonly start: number;
  readonly end: number;
  encodings?: Map<object, Buffer>;
  #body: Buffer | undefined;

  constructor(chunks: readonly Buffer[], start: number, end: number) {
    this.chunks = chunks;
    this.start = start;
    this.end = end;
  }

  get body(): Buffer {
    this.#body ??= Buffer.concat(this.chunks as Buffer[]);
    return this.#body;
  }

  /** The result's bytes as views of the chunks, in order (nothing copied). */
  slices(): Buffer[] {
    const out: Buffer[] = [];
    let offset = 0;
    for (const chunk of this.chunks) {
      const from = Math.max(this.start - offset, 0);
      const to = Math.min(this.end - offset, chunk.length);
      if (from < to) out.push(from === 0 && to === chunk.length ? chunk : chunk.subarray(from, to));
      offset += chunk.length;
      if (offset >= this.end) break;
    }
    return out;
  }
}

/** The result's bytes as one or more views, without joining a chunked reply. */
export function resultSlices(r: UpstreamResult): Buffer[] {
  return r instanceof ChunkedResult ? r.slices() : [r.body.subarray(r.start, r.end)];
}

/**
 * The object whose memory the result's bytes are, the same for every call
 * that gets them: a stored answer comes in a new UpstreamResult per call over
 * the one stored Buffer, and a chunked reply is not joined to ask.
 */
export function resultMemory(r: UpstreamResult): object {
  return r instanceof ChunkedResult ? r : r.body;
}

export function resultText(r: UpstreamResult): string {
  return r.body.toString("utf8", r.start, r.end);
}

export function resultJson(r: UpstreamResult): unknown {
  return JSON.parse(resultText(r));
}

/**
 * Results up to this size are parsed once on arrival, so a node's malformed
 * answer (a stray comma, an unquoted hex number) becomes -32052 and counts as
 * an outage instead of reaching callers. Parsing costs 1.5 to 3 ns a byte;
 * larger results (blocks, logs) arrive in a framed body whole or not at all
 * and are forwarded unparsed, which is what keeps their hop cheap.
 */
export const CHECKED_RESULT_BYTES = 4096;

/** Results up to this size are parsed before they go into the cache; larger ones have their structure scanned. */
const PARSED_BEFORE_CACHING_BYTES = 256 * 1024;

/**
 * Whether a result is one whole JSON value, checked before it is cached (an
 * answer stored by mistake would be served for as long as it stays there).
 * Large results are checked without being built (json-check.ts: everything
 * but the contents of strings).
 */
export function resultIsJson(r: UpstreamResult): boolean {
  if (r.jsonChecked === true) return true;
  const { body, start, end } = r;
  if (end - start > PARSED_BEFORE_CACHING_BYTES) {
    if (!isJsonValue(body, start, end)) return false;
    r.jsonChecked = true;
    return true;
  }
  try {
    JSON.parse(body.toString("utf8", start, end));
    r.jsonChecked = true;
    return true;
  } catch {
    return false;
  }
}

function checkSmallResult(body: Buffer, start: number, end: number): void {
  if (end - start > CHECKED_RESULT_BYTES) return;
  try {
    JSON.parse(body.toString("utf8", start, end));
  } catch (err) {
    throw new RawJsonError(`the result is not valid JSON (${(err as Error).message})`);
  }
}

export function requestBody(id: number, method: string, paramsText: string): string {
  return `{"jsonrpc":"2.0","id":${id},"method":${JSON.stringify(method)},"params":${paramsText}}`;
}

export interface ReadReplyOptions {
  /**
   * Scan the whole reply, result included, for a complete JSON structure.
   * For bodies whose transport cannot vouch that they arrived whole (an HTTP
   * body that ended when the connection closed): a truncated text must not
   * be forwarded as a result. Framed bodies (content-length, chunked,
   * WebSocket messages) arrive whole or not at all, and skip the scan.
   */
  verify?: boolean;
}

/**
 * Reads a reply to the request with id `expectedId` (on HTTP, the one request
 * of its exchange). When "jsonrpc" and "id" come before a result larger than
 * CHECKED_RESULT_BYTES (every node we know writes them first), the result is
 * everything up to the closing brace, found without scanning the result
 * (unless `verify` asks for the scan); smaller results are scanned, so members
 * after them are read as members.
 */
/** Errors a node sent with id null (it could not read the request), as readReply threw them. */
const idNullErrors = new WeakSet<GatewayError>();

/** Whether `err` is a node's error that came with id null: nothing in it says which request it answers. */
export function sentWithIdNull(err: unknown): boolean {
  return err instanceof GatewayError && idNullErrors.has(err);
}

export function readReply(body: Buffer, expectedId: number, options: ReadReplyOptions = {}): UpstreamResult {
  let id: string | undefined;
  let sawVersion = false;
  let result: { start: number; end: number } | undefined;
  let error: GatewayError | undefined;
  try {
    const start = skipWhitespace(body, 0);
    // An array answers a batch, never the one call this request carried: the reply of a batch sent before on this
    // connection (a node writing it twice), so the node is out of step here, as with another request's id.
    if (body[start] === 0x5b) throw upstreamBadResponse("an array (a batch's answer) where one call's reply was due", ANOTHER_REQUESTS_REPLY);
    if (body[start] !== 0x7b) throw new RawJsonError("not a JSON object");
    let fastEnd = -1;
    const end = scanObject(body, start, (key, valueStart) => {
      if (fastEnd >= 0) return body.length; // unreachable: the fast path stops scanning
      switch (key) {
        case "jsonrpc":
          sawVersion = true;
          return -1;
        case "id": {
          const end = skipValue(body, valueStart);
          id = body.toString("latin1", valueStart, end);
          return end;
        }
        case "result": {
          if (sawVersion && id !== undefined && options.verify !== true) {
            const close = lastNonWhitespace(body, body.length - 1);
            if (body[close] !== 0x7d) throw new RawJsonError("reply does not end with '}'");
            const end = lastNonWhitespace(body, close - 1) + 1;
            if (end - valueStart > CHECKED_RESULT_BYTES && closesOpening(body[valueStart], body[end - 1]) && !endsWithMember(body.toString("latin1", Math.max(valueStart, end - TAIL_BYTES), end))) {
              result = { start: valueStart, end };
              fastEnd = close;
              return close;
            }
          }
          const end = skipValue(body, valueStart);
          result = { start: valueStart, end };
          return end;
        }
        case "error": {
          const end = skipValue(body, valueStart);
          // JSON-RPC 1.0 style: a successful reply may carry "error": null beside its result.
          if (!isNull(body, valueStart, end)) error = readError(body, valueStart, end);
          return end;
        }
        default:
          return -1;
      }
    });
    if (skipWhitespace(body, end) !== body.length) throw new RawJsonError("text after the reply object");
    if (result !== undefined) checkSmallResult(body, result.start, result.end);
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    throw upstreamBadResponse(err instanceof RawJsonError || err instanceof SyntaxError ? err.message : "unreadable reply", err);
  }
  if (id !== String(expectedId)) {
    // A node that could not read the request (parse error, invalid request) answers with id null, as JSON-RPC 2.0
    // says; on a connection that carries one request, that error is the answer to it.
    if (id === "null" && error !== undefined) {
      idNullErrors.add(error);
      throw error;
    }
    throw upstreamBadResponse(`reply id ${id ?? "(none)"} does not match request id ${expectedId}`, ANOTHER_REQUESTS_REPLY);
  }
  if (error !== undefined) throw error;
  // The node's answer to this call (its id), though it holds neither ("error": null alone): that call's -32052, not an
  // outage, as a malformed error object is (five such answers to one method opened the circuit for every key).
  if (result === undefined) throw malformedNodeError("reply has neither result nor error", body.toString("utf8"));
  return { body, start: result.start, end: result.end };
}

/**
 * The raw id text of a message from a node, read without scanning the result
 * when the id comes first (as every node writes it); undefined when the
 * message has no id (a subscription notification). Throws RawJsonError for
 * text that is not a JSON object.
 */
export function peekReplyId(body: Buffer): string | undefined {
  const close = lastNonWhitespace(body, body.length - 1);
  let id: string | undefined;
  scanObject(body, skipWhitespace(body, 0), (key, valueStart) => {
    if (key !== "id") return -1;
    const end = skipValue(body, valueStart);
    id = body.toString("latin1", valueStart, end);
    // Jump to the closing brace: the rest (the result) is read later, by readReply.
    return body[close] === 0x7d ? close : end;
  });
  return id;
}

/**
 * Reads a reply that arrived in chunks, keeping them apart when the reply
 * starts with "jsonrpc" and the expected "id" before "result" (every node we
 * know writes that order) and the first chunk holds that much; anything else
 * is joined and read by readReply.
 */
export function readChunkedReply(chunks: readonly Buffer[], expectedId: number): UpstreamResult {
  const first = chunks[0] as Buffer;
  let prefix = replyPrefix(first, expectedId);
  if (prefix < 0 || chunks.length < 2) return readReply(Buffer.concat(chunks as Buffer[]), expectedId);
  prefix = skipWhitespace(first, prefix);
  if (prefix >= first.length) return readReply(Buffer.concat(chunks as Buffer[]), expectedId);
  // The end: the last non-whitespace byte is the reply's closing brace; the result ends before it.
  let total = 0;
  for (const c of chunks) total += c.length;
  const close = lastNonWhitespaceAcross(chunks, total - 1);
  if (close < 0 || byteAcross(chunks, total, close) !== 0x7d) return readReply(Buffer.concat(chunks as Buffer[]), expectedId);
  const end = lastNonWhitespaceAcross(chunks, close - 1) + 1;
  if (end <= prefix || !closesOpening(first[prefix], byteAcross(chunks, total, end - 1)) || endsWithMember(tailAcross(chunks, total, end, TAIL_BYTES))) {
    return readReply(Buffer.concat(chunks as Buffer[]), expectedId);
  }
  return new ChunkedResult(chunks, prefix, end);
}

const REPLY_HEAD = Buffer.from('{"jsonrpc":"2.0","id":');
const RESULT_KEY = Buffer.from(',"result":');

/** Where the result starts when `head` opens with exactly {"jsonrpc":"2.0","id":<expectedId>,"result":, else -1. */
function replyPrefix(head: Buffer, expectedId: number): number {
  if (head.length < REPLY_HEAD.length || head.compare(REPLY_HEAD, 0, REPLY_HEAD.length, 0, REPLY_HEAD.length) !== 0) return -1;
  const id = String(expectedId);
  const idEnd = REPLY_HEAD.length + id.length;
  if (head.length < idEnd + RESULT_KEY.length || head.toString("latin1", REPLY_HEAD.length, idEnd) !== id) return -1;
  if (head.compare(RESULT_KEY, 0, RESULT_KEY.length, idEnd, idEnd + RESULT_KEY.length) !== 0) return -1;
  return idEnd + RESULT_KEY.length;
}

function byteAcross(chunks: readonly Buffer[], total: number, index: number): number | undefined {
  let chunkStart = total;
  for (let i = chunks.length - 1; i >= 0; i--) {
    const c = chunks[i] as Buffer;
    chunkStart -= c.length;
    if (index >= chunkStart) return c[index - chunkStart];
  }
  return undefined;
}

/** Like lastNonWhitespace, over the joined chunks (walks back from the end, so only the last few are read). */
function lastNonWhitespaceAcross(chunks: readonly Buffer[], index: number): number {
  let chunk = chunks.length - 1;
  let chunkStart = 0;
  for (const c of chunks) chunkStart += c.length;
  chunkStart -= (chunks[chunk] as Buffer).length;
  while (index >= 0) {
    while (index < chunkStart) {
      chunk--;
      chunkStart -= (chunks[chunk] as Buffer).length;
    }
    const c = (chunks[chunk] as Buffer)[index - chunkStart];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return index;
    index--;
  }
  return -1;
}

/**
 * Whether a result taken to the reply's closing brace (the fast path) ends
 * as it begins: a node that puts another member after "result" ("error":
 * null, its own metadata) mostly ends with a value that does not close the
 * result's bracket or string, and such a reply is scanned member by member.
 */
function closesOpening(first: number | undefined, last: number | undefined): boolean {
  switch (first) {
    case 0x7b:
      return last === 0x7d;
    case 0x5b:
      return last === 0x5d;
    case 0x22:
      return last === 0x22;
    default:
      return false;
  }
}

/** How much of a large result's end is searched for an envelope member that would follow it. */
const TAIL_BYTES = 8 * 1024;
const TRAILING_MEMBER = /,\s*"(?:error|result|id|jsonrpc)"\s*:/;

/**
 * Whether the text up to the reply's closing brace seems to end with another
 * envelope member ("error", a second "result", "id"): then the reply is read
 * member by member. A result with such a key near its end costs that scan,
 * nothing worse; a member under another name is forwarded as the node wrote
 * it (the typed door rescans the reply: rescannedResult).
 */
function endsWithMember(tail: string): boolean {
  return TRAILING_MEMBER.test(tail);
}

/** The last `n` bytes (at most) before `end` of the joined chunks, as latin1 text. */
function tailAcross(chunks: readonly Buffer[], total: number, end: number, n: number): string {
  const from = Math.max(0, end - n);
  let text = "";
  let chunkStart = total;
  for (let i = chunks.length - 1; i >= 0 && chunkStart > from; i--) {
    const c = chunks[i] as Buffer;
    chunkStart -= c.length;
    const a = Math.max(from - chunkStart, 0);
    const b = Math.min(end - chunkStart, c.length);
    if (a < b) text = c.toString("latin1", a, b) + text;
  }
  return text;
}

/**
 * `read` of the result's text, for nodegate's own readers (heads, finality, the gas limit). A large result that a
 * member under a name of the node's own follows is taken with that member (readReply's fast path, which the native
 * door forwards as written): when `read` fails, the reply is read member by member and its result read again.
 */
export function readResult<T>(r: UpstreamResult, read: (text: string) => T): T {
  try {
    return read(resultText(r));
  } catch (err) {
    const rescanned = rescannedResult(r);
    if (rescanned === undefined) throw err;
    return read(resultText(rescanned));
  }
}

/**
 * The result alone, as one JSON value: `r`, or its reply read member by member when a member of the node's own joined
 * it (readReply's fast path); undefined when neither is JSON. For what keeps or hands on the result's text by itself
 * (the cache, JsonRpcService's result_json), where the native door's envelope would have held that member.
 */
export function resultAlone(r: UpstreamResult): UpstreamResult | undefined {
  if (resultIsJson(r)) return r;
  const rescanned = rescannedResult(r);
  return rescanned !== undefined && resultIsJson(rescanned) ? rescanned : undefined;
}

/**
 * The result of a reply read member by member, for a result whose text did
 * not parse: a large result is taken to the reply's closing brace unscanned,
 * which a member after it under an unexpected name joins. Throws the node's
 * error when the reply carries one.
 */
export function rescannedResult(r: UpstreamResult): UpstreamResult | undefined {
  const body = r.body;
  let span: { start: number; end: number } | undefined;
  let error: GatewayError | undefined;
  try {
    scanObject(body, skipWhitespace(body, 0), (key, valueStart) => {
      const end = skipValue(body, valueStart);
      if (key === "result") span = { start: valueStart, end };
      else if (key === "error" && !isNull(body, valueStart, end)) error = readError(body, valueStart, end);
      return end;
    });
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    return undefined;
  }
  if (error !== undefined) throw error;
  return span === undefined || (span.start === r.start && span.end === r.end) ? undefined : { body, start: span.start, end: span.end };
}

/** The error a reply object holds, whatever its id (a node's one answer to a whole batch); undefined when it holds none or is unreadable. */
export function replyError(body: Buffer): GatewayError | undefined {
  let error: GatewayError | undefined;
  try {
    scanObject(body, skipWhitespace(body, 0), (key, valueStart) => {
      const end = skipValue(body, valueStart);
      if (key === "error" && !isNull(body, valueStart, end)) error = readError(body, valueStart, end);
      return end;
    });
  } catch {
    return undefined;
  }
  return error;
}

function isNull(body: Buffer, start: number, end: number): boolean {
  return end - start === 4 && body.toString("latin1", start, end) === "null";
}

function readError(body: Buffer, start: number, end: number): GatewayError {
  const text = body.toString("utf8", start, end);
  const parsed = JSON.parse(text) as unknown;
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return malformedNodeError("the error is not an object", text);
  const e = parsed as Record<string, unknown>;
  if (typeof e.code !== "number" || !Number.isSafeInteger(e.code) || typeof e.message !== "string") {
    return malformedNodeError("the error lacks an integer code and a string message", text);
  }
  let data: string | undefined;
  let otherMembers: string | undefined;
  // Scanned for data and members besides code and message (rare: Erigon's, some providers') only when there are some.
  if (Object.keys(e).length > 2) {
    scanObject(body, start, (key, valueStart) => {
      const valueEnd = skipValue(body, valueStart);
      if (key === "data") data = body.toString("utf8", valueStart, valueEnd);
      else if (key !== "code" && key !== "message") otherMembers = `${otherMembers ?? ""},${JSON.stringify(key)}:${body.toString("utf8", valueStart, valueEnd)}`;
      return valueEnd;
    });
  }
  return new GatewayError({
    code: e.code,
    message: e.message,
    ...(data === undefined ? {} : { data }),
    ...(otherMembers === undefined ? {} : { otherMembers }),
    // Besu, Nethermind and others revert with -32000/-32015: typed callers see a revert whichever node it was.
    grpcCode: e.code !== 3 && revertBytes(e.code, e.message, data) !== undefined ? Code.FailedPrecondition : grpcCodeForNodeError(e.code, e.message),
    origin: "upstream",
  });
}
