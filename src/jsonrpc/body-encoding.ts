/**
 * Request bodies sent compressed (Content-Encoding gzip, deflate or br) on the native door: decoded within the
 * body limit, so a small compressed body cannot unpack into more than the limit allows. Another encoding is
 * refused with 415 rather than read as JSON and answered "parse error".
 */
import { promisify } from "node:util";
import zlib from "node:zlib";

type Decoder = (body: Buffer, options: zlib.ZlibOptions & zlib.BrotliOptions) => Promise<Buffer>;

const DECODERS: Record<string, Decoder> = {
  gzip: promisify(zlib.gunzip),
  "x-gzip": promisify(zlib.gunzip),
  deflate: promisify(zlib.inflate),
  br: promisify(zlib.brotliDecompress),
};

export const SUPPORTED_ENCODINGS = "gzip, deflate or br";

/** The body's encoding, lower-cased; undefined for none (absent or identity). */
export function contentEncoding(header: string | undefined): string | undefined {
  const encoding = header?.trim().toLowerCase();
  return encoding === undefined || encoding === "" || encoding === "identity" ? undefined : encoding;
}

export function isSupportedEncoding(encoding: string | undefined): boolean {
  return encoding === undefined || Object.hasOwn(DECODERS, encoding);
}

export class UndecodableBody extends Error {}

/**
 * The body decoded (as it is when `encoding` is undefined); undefined when decoded it is larger than `limit`.
 * Throws UndecodableBody when it is not valid in its encoding.
 */
export async function decodeBody(body: Buffer, encoding: string | undefined, limit: number): Promise<Buffer | undefined> {
  if (encoding === undefined) return body;
  const decode = DECODERS[encoding] as Decoder;
  try {
    return await decode(body, { maxOutputLength: limit });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") return undefined;
    throw new UndecodableBody(`the body is not valid ${encoding}: ${(err as Error).message}`);
  }
}
