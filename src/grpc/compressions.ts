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
import { brotliCompress, brotliDecompress, constants, deflate, gunzip, gzip, inflate, type BrotliOptions, type ZlibOptions } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Compression } from "@connectrpc/connect/protocol";

/**
 * What a failed decompression of an `encoding` message answers, on the lean
 * lanes and Connect's handlers alike: more than `maxBytes` once inflated is
 * RESOURCE_EXHAUSTED; corrupt or cut data is the client's, INVALID_ARGUMENT
 * (as Connect words it for gzip and br), with grpc-go's words naming what zlib
 * found; anything else zlib throws is INTERNAL.
 */
export function decompressionError(err: unknown, encoding: string, maxBytes: number): ConnectError {
  const code = (err as { code?: unknown }).code;
  if (code === "ERR_BUFFER_TOO_LARGE") return new ConnectError(`message larger than ${maxBytes} bytes after decompression`, Code.ResourceExhausted);
  const clients = code === "Z_DATA_ERROR" || code === "Z_BUF_ERROR" || code === "ERR_PADDING_2" || (typeof code === "string" && code.startsWith("ERR__ERROR_FORMAT_"));
  return new ConnectError(`failed to decompress the ${encoding} message: ${(err as Error).message}`, clients ? Code.InvalidArgument : Code.Internal);
}

type Zlib = (data: Uint8Array, options: ZlibOptions | BrotliOptions) => Promise<Buffer>;

function zlibCompression(name: string, compress: Zlib, decompress: Zlib, compressOptions: (bytes: Uint8Array) => ZlibOptions | BrotliOptions = () => ({})): Compression {
  return {
    name,
    async compress(bytes) {
      return (await compress(bytes, compressOptions(bytes))) as Uint8Array<ArrayBuffer>; // zlib's output owns a plain ArrayBuffer
    },
    async decompress(bytes, readMaxBytes) {
      if (bytes.length === 0) return new Uint8Array(0);
      try {
        return (await decompress(bytes, { maxOutputLength: readMaxBytes })) as Uint8Array<ArrayBuffer>;
      } catch (err) {
        throw decompressionError(err, name, readMaxBytes);
      }
    },
  };
}

export const compressionGzip = zlibCompression("gzip", promisify(gzip) as Zlib, promisify(gunzip) as Zlib);
/**
 * Brotli's quality for answers: zlib's default (11, the most) took 235-290 ms
 * of CPU for a 150-transaction block's 134 KB JSON answer (47.6 KB out), 4
 * takes 2-5 ms (50.0 KB out; gzip's default: 3 ms, 50.3 KB).
 */
export const BROTLI_QUALITY = 4;

export const compressionBrotli = zlibCompression("br", promisify(brotliCompress) as Zlib, promisify(brotliDecompress) as Zlib, (bytes) => ({
  params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length },
}));
export const compressionDeflate = zlibCompression("deflate", promisify(deflate) as Zlib, promisify(inflate) as Zlib);
