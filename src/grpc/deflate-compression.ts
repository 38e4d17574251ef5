/**
 * "deflate" (zlib) message compression for Connect's handlers. gRPC clients
 * built on C-core (Python, C++, Ruby, PHP) offer it next to gzip, and the
 * lean unary lane reads it; Connect ships only gzip and br, so without this a
 * stream, health check or reflection call compressed with deflate was
 * UNIMPLEMENTED while a unary call was served.
 */
import { promisify } from "node:util";
import { deflate, inflate } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Compression } from "@connectrpc/connect/protocol";

const deflateAsync = promisify(deflate);
const inflateAsync = promisify(inflate);

/**
 * Corrupt compressed data is the client's: INVALID_ARGUMENT, as Connect words
 * it for gzip and br; anything else zlib throws is INTERNAL.
 */
export function decompressionFailure(err: unknown): Code {
  const code = (err as { code?: unknown }).code;
  if (code === "Z_DATA_ERROR" || code === "Z_BUF_ERROR" || code === "ERR_PADDING_2") return Code.InvalidArgument;
  if (typeof code === "string" && code.startsWith("ERR__ERROR_FORMAT_")) return Code.InvalidArgument;
  return Code.Internal;
}

export const compressionDeflate: Compression = {
  name: "deflate",
  async compress(bytes) {
    return new Uint8Array(await deflateAsync(bytes));
  },
  async decompress(bytes, readMaxBytes) {
    if (bytes.length === 0) return new Uint8Array(0);
    try {
      return new Uint8Array(await inflateAsync(bytes, { maxOutputLength: readMaxBytes }));
    } catch (err) {
      if ((err as { code?: unknown }).code === "ERR_BUFFER_TOO_LARGE") {
        throw new ConnectError(`message is larger than configured readMaxBytes ${readMaxBytes} after decompression`, Code.ResourceExhausted);
      }
      throw new ConnectError(`failed to decompress the deflate message: ${(err as Error).message}`, decompressionFailure(err));
    }
  },
};
