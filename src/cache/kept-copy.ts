/**
 * Bytes kept for a while (a cached answer, its typed encodings) must not pin
 * the larger buffer they were cut from: a 20-byte balance read from a 64 KiB
 * socket buffer, a 600-byte gzip result in zlib's 8-16 KiB output buffer.
 */

/** `bytes`, or a copy of their own when they are less than half of the buffer under them. */
export function keptCopy<T extends Uint8Array>(bytes: T): T | Buffer {
  return bytes.length * 2 < bytes.buffer.byteLength ? Buffer.from(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)) : bytes;
}
