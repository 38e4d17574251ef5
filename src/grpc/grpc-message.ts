/**
 * grpc-message as the gRPC spec encodes it: percent-encoding only for bytes
 * outside printable ASCII and for "%" itself. Connect escapes with
 * encodeURIComponent, which also escapes reserved characters such as ":"
 * and "/", and @grpc/grpc-js decodes with decodeURI, which leaves those
 * escaped: a grpc-js caller would read "params[0]%3A want 20 bytes".
 * Encoding per spec reads right with either decoder. A space at either end
 * is escaped too: HTTP/2 forbids a field value that begins or ends with
 * whitespace, and Node's HTTP/2 client drops such a grpc-message whole
 * (geth's `execution reverted: ` for an empty reason reached grpc-js as "").
 */
import type { OutgoingHttpHeaders } from "node:http";

const GRPC_MESSAGE = "grpc-message";
const PLAIN = /^[\x20-\x24\x26-\x7e]*$/;

export function encodeGrpcMessage(message: string): string {
  if (PLAIN.test(message) && message.charCodeAt(0) !== 0x20 && message.charCodeAt(message.length - 1) !== 0x20) return message;
  const bytes = Buffer.from(message, "utf8");
  const last = bytes.length - 1;
  let out = "";
  for (let i = 0; i <= last; i++) {
    const byte = bytes[i] as number;
    const plain = byte > 0x20 ? byte <= 0x7e && byte !== 0x25 : byte === 0x20 && i !== 0 && i !== last;
    out += plain ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** The text of a grpc-message (its escaped form when it does not decode). */
export function decodeGrpcMessage(escaped: string): string {
  try {
    return decodeURIComponent(escaped);
  } catch {
    return escaped;
  }
}

/** Re-encodes a grpc-message that Connect escaped with encodeURIComponent. */
export function reencodeGrpcMessage(escaped: string): string {
  try {
    return encodeGrpcMessage(decodeURIComponent(escaped));
  } catch {
    return escaped;
  }
}

/** Re-encodes the grpc-message of a header or trailer object in place. */
export function reencodeGrpcMessageIn(headers: OutgoingHttpHeaders | Record<string, string> | undefined): void {
  const escaped = headers?.[GRPC_MESSAGE];
  if (typeof escaped === "string") (headers as Record<string, string>)[GRPC_MESSAGE] = reencodeGrpcMessage(escaped);
}
