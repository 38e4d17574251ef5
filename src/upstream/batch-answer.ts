/** Reads a node's answer to a JSON-RPC batch: the text of each element, matched to its call by id. */
import { RawJsonError, skipValue, skipWhitespace } from "../jsonrpc/raw-json.js";
import { peekReplyId } from "./reply.js";

export interface BatchAnswer<T> {
  /** Each element whose id is a call's, with its text (a view of the body), in the node's order. */
  readonly answers: [T, Buffer][];
  /** Elements whose id is none of the calls' (or that have none, or are no object). */
  readonly strays: number;
}

/**
 * The elements of the array that starts at `body[start]` ("["), by the raw id text each call was sent with. Throws
 * RawJsonError when the body is not one JSON array (truncated, text after it).
 */
export function readBatchAnswer<T>(body: Buffer, start: number, byId: ReadonlyMap<string, T>): BatchAnswer<T> {
  const answers: [T, Buffer][] = [];
  let strays = 0;
  let at = skipWhitespace(body, start + 1);
  if (body[at] === 0x5d) at = skipWhitespace(body, at + 1);
  else {
    for (;;) {
      const end = skipValue(body, at);
      const element = body.subarray(at, end);
      const call = body[at] === 0x7b ? byId.get(peekReplyId(element) ?? "") : undefined;
      if (call === undefined) strays++;
      else answers.push([call, element]);
      at = skipWhitespace(body, end);
      if (body[at] === 0x2c) at = skipWhitespace(body, at + 1);
      else if (body[at] === 0x5d) {
        at = skipWhitespace(body, at + 1);
        break;
      } else throw new RawJsonError("expected ',' or ']' in the batch's answer");
    }
  }
  if (at !== body.length) throw new RawJsonError("text after the batch's answer");
  return { answers, strays };
}
