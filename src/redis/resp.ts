/**
 * RESP2, the Redis wire protocol: commands encoded as arrays of bulk strings,
 * and an incremental reply parser that takes bytes as they arrive (a reply
 * may be split across any number of TCP chunks, and one chunk may hold many
 * replies when commands are pipelined).
 */

/** An error reply from the server ("-WRONGTYPE ...", "-NOSCRIPT ..."): the connection stays usable. */
export class RedisReplyError extends Error {
  override name = "RedisReplyError";

  /** The first word of the reply, Redis's error class: ERR, WRONGTYPE, NOSCRIPT, WRONGPASS, ... */
  get kind(): string {
    return this.message.split(" ", 1)[0] ?? "";
  }
}

/**
 * One reply: a simple string, an integer, a bulk string (binary, so a
 * Buffer), null (nil bulk or nil array), an array of replies, or an error
 * reply (returned, not thrown, when nested in an array as EXEC does).
 */
export type RedisReply = string | number | Buffer | null | RedisReply[] | RedisReplyError;

export type RedisArgument = string | number | Buffer;

const CRLF = Buffer.from("\r\n");

/** Encodes one command as a RESP array of bulk strings. */
export function encodeCommand(args: readonly RedisArgument[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const bytes = Buffer.isBuffer(arg) ? arg : Buffer.from(String(arg));
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, CRLF);
  }
  return Buffer.concat(parts);
}

/** The server sent bytes that are not RESP: the connection cannot be trusted any more. */
export class RespProtocolError extends Error {
  override name = "RespProtocolError";
}

const INCOMPLETE = Symbol("incomplete");

/** Accumulates bytes and yields each complete reply, in order. */
export class RespParser {
  #buffer = Buffer.alloc(0);
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /** Bytes needed before parsing is worth trying again (a large bulk string arriving in chunks). */
  #needed = 0;

  /** Adds received bytes and returns the replies they complete. Throws RespProtocolError on garbage. */
  push(chunk: Buffer): RedisReply[] {
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.length;
    if (this.#buffer.length + this.#pendingBytes < this.#needed) return [];
    this.#buffer = Buffer.concat([this.#buffer, ...this.#pending]);
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#needed = 0;

    const replies: RedisReply[] = [];
    let offset = 0;
    for (;;) {
      const parsed = this.#parse(offset);
      if (parsed === INCOMPLETE) break;
      replies.push(parsed.value);
      offset = parsed.end;
    }
    this.#buffer = offset === this.#buffer.length ? Buffer.alloc(0) : this.#buffer.subarray(offset);
    this.#needed = Math.max(0, this.#needed - offset);
    return replies;
  }

  /** Forgets partial input (after a reconnect, nothing from the old connection belongs to the new one). */
  reset(): void {
    this.#buffer = Buffer.alloc(0);
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#needed = 0;
  }

  #line(offset: number): { text: string; end: number } | typeof INCOMPLETE {
    const cr = this.#buffer.indexOf(CRLF, offset);
    if (cr < 0) return INCOMPLETE;
    return { text: this.#buffer.toString("utf8", offset, cr), end: cr + 2 };
  }

  #integer(text: string): number {
    if (!/^-?\d+$/.test(text)) throw new RespProtocolError(`not an integer: ${JSON.stringify(text.slice(0, 40))}`);
    return Number(text);
  }

  #parse(offset: number): { value: RedisReply; end: number } | typeof INCOMPLETE {
    if (offset >= this.#buffer.length) return INCOMPLETE;
    const type = this.#buffer[offset];
    const line = this.#line(offset + 1);
    if (line === INCOMPLETE) return INCOMPLETE;
    switch (type) {
      case 0x2b: // +
        return { value: line.text, end: line.end };
      case 0x2d: // -
        return { value: new RedisReplyError(line.text), end: line.end };
      case 0x3a: // :
        return { value: this.#integer(line.text), end: line.end };
      case 0x24: {
        // $
        const length = this.#integer(line.text);
        if (length < 0) return { value: null, end: line.end };
        const end = line.end + length + 2;
        if (end > this.#buffer.length) {
          this.#needed = end;
          return INCOMPLETE;
        }
        if (this.#buffer[end - 2] !== 0x0d || this.#buffer[end - 1] !== 0x0a) throw new RespProtocolError("bulk string not followed by CRLF");
        return { value: Buffer.from(this.#buffer.subarray(line.end, end - 2)), end };
      }
      case 0x2a: {
        // *
        const count = this.#integer(line.text);
        if (count < 0) return { value: null, end: line.end };
        const items: RedisReply[] = [];
        let end = line.end;
        for (let i = 0; i < count; i++) {
          const item = this.#parse(end);
          if (item === INCOMPLETE) return INCOMPLETE;
          items.push(item.value);
          end = item.end;
        }
        return { value: items, end };
      }
      default:
        throw new RespProtocolError(`unexpected reply type byte 0x${(type as number).toString(16)}`);
    }
  }
}
