/**
 * Ends a response with a body made of parts, without joining large parts
 * into one copy. Over HTTP/1.1 the parts are corked into one write. Over
 * HTTP/2 a large body leaves in pieces, each once the stream has drained the
 * last: Node's HTTP/2 session resets every stream when its buffered data
 * outgrows the session's memory limit, which a few concurrent multi-MiB
 * answers would do.
 */
import type { NodeResponse } from "./http-types.js";

/** Bodies below this are joined and written at once. */
const JOIN_BELOW = 64 * 1024;
/** HTTP/2 piece size. */
const PIECE = 64 * 1024;

export function endWithParts(res: NodeResponse, parts: readonly Uint8Array[]): void {
  let length = 0;
  for (const part of parts) length += part.length;
  if (length < JOIN_BELOW || parts.length === 1) {
    const body = parts.length === 1 ? (parts[0] as Uint8Array) : Buffer.concat(parts, length);
    if ("stream" in res && body.length > PIECE) writePieces(res, [body]);
    else res.end(body);
    return;
  }
  if ("stream" in res) {
    writePieces(res, parts);
    return;
  }
  res.cork();
  for (const part of parts) res.write(part);
  res.end();
  res.uncork();
}

/** What writePieces needs: an HTTP/2 compat response or a raw HTTP/2 stream. */
interface DrainingWritable {
  write(chunk: Uint8Array): boolean;
  end(): unknown;
  once(event: "drain", listener: () => void): unknown;
}

/** Bytes of an HTTP/2 stream's answer that writePieces holds back, by stream (the session watch counts them). */
const heldBack = new WeakMap<object, number>();

/** How many bytes of `stream`'s answer are still held back, not yet written to it. */
export function bytesHeldBack(stream: object): number {
  return heldBack.get(stream) ?? 0;
}

/** Writes the parts in pieces, each after the writable drained the last, then ends it. */
export function writePieces(res: DrainingWritable, parts: readonly Uint8Array[]): void {
  const owner = "stream" in res ? (res as { stream: object }).stream : res;
  let part = 0;
  let offset = 0;
  let left = 0;
  for (const p of parts) left += p.length;
  const pump = (): void => {
    while (part < parts.length) {
      const current = parts[part] as Uint8Array;
      const next = Math.min(offset + PIECE, current.length);
      const drained = res.write(current.subarray(offset, next));
      left -= next - offset;
      offset = next;
      if (offset === current.length) {
        part++;
        offset = 0;
      }
      if (!drained && part < parts.length) {
        heldBack.set(owner, left);
        res.once("drain", pump);
        return;
      }
    }
    heldBack.delete(owner);
    res.end();
  };
  pump();
}
