/**
 * Uint8Array.prototype.toBase64 (ES2026), for runtimes without it (Node 20
 * and 22), written with Buffer's native encoder.
 *
 * Why: protobuf-es writes `bytes` fields of the JSON form (Connect JSON,
 * gRPC-Web JSON, the handlers' JSON) with the native method when the runtime
 * has one, and otherwise one character at a time into a string: a 16 MiB
 * eth_call result took 4 s and 760 MB of heap, and a 250 MB answer ran the
 * process out of memory (found from outside). protobuf-es looks the method
 * up once, when its module is first evaluated, so this module must be
 * evaluated before @bufbuild/protobuf: app.ts imports it first.
 */

type Alphabet = "base64" | "base64url";

interface ToBase64Options {
  alphabet?: Alphabet;
  omitPadding?: boolean;
}

/** The same string the standard method gives, for the options it takes. */
export function toBase64(bytes: Uint8Array, options?: ToBase64Options): string {
  const alphabet = options?.alphabet ?? "base64";
  if (alphabet !== "base64" && alphabet !== "base64url") throw new TypeError(`expected alphabet to be "base64" or "base64url", got ${String(alphabet)}`);
  const omitPadding = Boolean(options?.omitPadding);
  // Buffer's base64url leaves the padding out, its base64 puts it in.
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString(alphabet);
  if (alphabet === "base64") {
    if (!omitPadding) return text;
    let end = text.length;
    while (end > 0 && text.charCodeAt(end - 1) === 0x3d /* = */) end--;
    return text.slice(0, end);
  }
  return omitPadding || text.length % 4 === 0 ? text : text.padEnd(text.length + 4 - (text.length % 4), "=");
}

declare global {
  interface Uint8Array {
    toBase64?(options?: ToBase64Options): string;
  }
}

if (typeof Uint8Array.prototype.toBase64 !== "function") {
  Object.defineProperty(Uint8Array.prototype, "toBase64", {
    value: function (this: unknown, options?: ToBase64Options): string {
      if (!(this instanceof Uint8Array)) throw new TypeError("Uint8Array.prototype.toBase64 called on an object that is not a Uint8Array");
      return toBase64(this, options);
    },
    writable: true,
    configurable: true,
    enumerable: false,
  });
}
