/**
 * A JSON value that cannot be decoded into (or encoded from) its proto field.
 * `path` names the field the way a caller would write it: "transactions[3].gasPrice".
 */
export class CodecError extends Error {
  override name = "CodecError";
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(path ? `${path}: ${reason}` : reason);
  }

  /** The same error one level further out (prefixes the path). */
  within(segment: string): CodecError {
    const path = this.path === "" ? segment : this.path.startsWith("[") ? `${segment}${this.path}` : `${segment}.${this.path}`;
    return new CodecError(path, this.reason);
  }
}

/** Re-locates a CodecError one level further out; anything else is a bug and is re-thrown. */
export function locate(err: unknown, segment: string): CodecError {
  if (err instanceof CodecError) return err.within(segment);
  throw err;
}

/**
 * A JSON number above 2^53 - 1 arrives already rounded (JSON.parse), so its
 * value is not quoted back: the caller would read a number it never sent.
 */
export const UNSAFE_JSON_INTEGER = "a JSON integer above 9007199254740991 (2^53 - 1) cannot be read exactly";
