/**
 * Message compressions for Connect's handlers: gzip, br and "deflate"
 * (zlib). gRPC clients built on C-core (Python, C++, Ruby, PHP) offer deflate
 * next to gzip, and the lean unary lane reads it; Connect ships only gzip and
 * br, so a stream, health check or reflection call compressed with deflate
 * was UNIMPLEMENTED while a unary call was served. Connect's own gzip and br
 * also call truncated data an internal error; these answer every encoding's
 * corrupt or cut data the same way, as the lean lanes do.
 */
import { promisify } from "node:util";
import { brotliCompress, brotliDecompress, deflate, gunzip, gzip, inflate, type ZlibOptions } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Compression } from "@connectrpc/connect/protocol";


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

type Zlib = (data: Uint8Array, options: ZlibOptions) => Promise<Buffer>;

function zlibCompression(name: string, compress: Zlib, decompress: Zlib): Compression {
  return {
    name,
    async compress(bytes) {
      return (await compress(bytes, {})) as Uint8Array<ArrayBuffer>; // zlib's output owns a plain ArrayBuffer
    },
    async decompress(bytes, readMaxBytes) {
      if (bytes.length === 0) return new Uint8Array(0);
      try {
        return (await decompress(bytes, { maxOutputLength: readMaxBytes })) as Uint8Array<ArrayBuffer>;
      } catch (err) {
        if ((err as { code?: unknown }).code === "ERR_BUFFER_TOO_LARGE") {
          throw new ConnectError(`message is larger than configured readMaxBytes ${readMaxBytes} after decompression`, Code.ResourceExhausted);
        }
        throw new ConnectError(`failed to decompress the ${name} message: ${(err as Error).message}`, decompressionFailure(err));
      }
    },
  };
}

export const compressionGzip = zlibCompression("gzip", promisify(gzip) as Zlib, promisify(gunzip) as Zlib);
export const compressionBrotli = zlibCompression("br", promisify(brotliCompress) as Zlib, promisify(brotliDecompress) as Zlib);
export const compressionDeflate = zlibCompression("deflate", promisify(deflate) as Zlib, promisify(inflate) as Zlib);
