/**
 * The text of a byte field of the wrong length. When the bytes are what
 * base64 makes of 0x hex (a JSON-RPC habit in a ProtoJSON request: grpcurl,
 * `buf curl` and Connect JSON read bytes as base64, so "0x7099…" becomes 31
 * bytes starting d3 1e), it says so: "want 20 bytes, got 31" alone gives no
 * clue (found from outside).
 */

/** "want 20 bytes, got 31", and what the bytes were written as when that was 0x hex. */
export function wrongByteCount(want: string, bytes: Uint8Array): string {
  const hex = hexReadAsBase64(bytes);
  return hex === undefined
    ? `want ${want}, got ${bytes.length}`
    : `want ${want}, got ${bytes.length}: these bytes are base64 of "${hex}"; in JSON, bytes are base64, not 0x hex`;
}

/** The 0x-hex text (its first 18 characters) that base64 decoding made `bytes` of; undefined when they are not that. */
function hexReadAsBase64(bytes: Uint8Array): string | undefined {
  // "0x" and "0X" decode to d3 1… and d1 7…: anything else is not hex read as base64.
  if (bytes.length < 2 || !((bytes[0] === 0xd3 && bytes[1] >> 4 === 1) || (bytes[0] === 0xd1 && bytes[1] >> 4 === 7))) return undefined;
  const text = Buffer.from(bytes).toString("base64").replace(/=+$/, "");
  // The last character holds bits the decoding dropped (a hex text of 42 characters is 31.5 bytes): any will do.
  if (!/^0[xX][0-9a-fA-F]*[A-Za-z0-9+/]?$/.test(text)) return undefined;
  return text.length > 18 ? `${text.slice(0, 18)}…` : text;
}
