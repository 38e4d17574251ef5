/**
 * Decodes base64 that may be several padded texts back to back ("QQ==QQ=="),
 * as gRPC-Web text bodies are, in one pass over the bytes: each piece reads
 * as Buffer.from(piece, "base64") reads it, and whitespace is skipped. It
 * once split the text at every padding run and decoded each piece apart,
 * which took seconds of one thread for a few MiB of four-character pieces,
 * before the caller's key was even checked (found from outside).
 */

/** Each byte's 6-bit value; -1: not in the alphabet. */
const SEXTET = new Int8Array(256).fill(-1);
for (let i = 0; i < 64; i++) SEXTET["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".charCodeAt(i)] = i;

const PAD = 0x3d; // "="

/** JavaScript's \s within latin1: tab, line feed, vertical tab, form feed, carriage return, space, no-break space. */
function isSpace(byte: number): boolean {
  return byte === 0x20 || (byte >= 0x09 && byte <= 0x0d) || byte === 0xa0;
}

/**
 * The decoded bytes, or undefined when the text is not base64: a character
 * outside the alphabet, more than two "=" in a row, or a piece whose length
 * (padding included) leaves one character over a multiple of four.
 */
export function decodeBase64Pieces(text: Uint8Array): Buffer | undefined {
  const out = Buffer.allocUnsafe(Math.ceil((text.length * 3) / 4));
  let written = 0;
  /** The current piece: its data characters and "=" so far, and bits not yet a whole byte. */
  let data = 0;
  let pads = 0;
  let bits = 0;
  let pending = 0;
  for (let i = 0; i < text.length; i++) {
    const byte = text[i] as number;
    if (byte === PAD) {
      if (pads === 2) return undefined;
      pads++;
      continue;
    }
    const value = SEXTET[byte] as number;
    if (value < 0) {
      if (isSpace(byte)) continue;
      return undefined;
    }
    if (pads > 0) {
      // A data character after padding starts the next piece; what is left of the last one is dropped, as Buffer drops it.
      if ((data + pads) % 4 === 1) return undefined;
      data = 0;
      pads = 0;
      bits = 0;
      pending = 0;
    }
    pending = ((pending << 6) | value) & 0xffff;
    bits += 6;
    data++;
    if (bits >= 8) {
      bits -= 8;
      out[written++] = (pending >> bits) & 0xff;
    }
  }
  if ((data + pads) % 4 === 1) return undefined;
  return out.subarray(0, written);
}
