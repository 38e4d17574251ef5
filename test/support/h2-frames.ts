/**
 * Raw HTTP/2 frames and HPACK fields, for tests that must do what Node's own
 * client will not (send a header list past a limit, reset a stream it has
 * seen closed).
 */

/** An HPACK integer of `prefixBits` bits, the prefix's other bits set to `flags` (RFC 7541, 5.1). */
export function hpackInteger(value: number, prefixBits: number, flags: number): Buffer {
  const max = (1 << prefixBits) - 1;
  if (value < max) return Buffer.from([flags | value]);
  const bytes = [flags | max];
  let rest = value - max;
  while (rest >= 128) {
    bytes.push((rest & 0x7f) | 0x80);
    rest >>= 7;
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

/** An HPACK string literal, not Huffman-coded. */
export const hpackText = (s: string): Buffer => Buffer.concat([hpackInteger(Buffer.byteLength(s), 7, 0), Buffer.from(s)]);

/** A field with a new name: added to the dynamic table (`indexed`), or not. */
export const hpackLiteral = (name: string, value: string, indexed = false): Buffer => Buffer.concat([Buffer.from([indexed ? 0x40 : 0x00]), hpackText(name), hpackText(value)]);

/** An HTTP/2 frame: its 9-byte head, then `payload`. */
export function h2Frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}
