/**
 * The RESP2 reply parser on its own: any reply stream, cut into chunks at any
 * points, parses to the same replies; garbage is refused; commands encode as
 * the protocol says.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeCommand, type RedisReply, RedisReplyError, RespParser, RespProtocolError } from "../../src/redis/resp.js";

const RUNS: fc.Parameters<unknown> = { seed: 0x72657370, numRuns: 200 };

function encodeReply(reply: RedisReply): Buffer {
  if (reply === null) return Buffer.from("$-1\r\n");
  if (typeof reply === "number") return Buffer.from(`:${reply}\r\n`);
  if (typeof reply === "string") return Buffer.from(`+${reply}\r\n`);
  if (reply instanceof RedisReplyError) return Buffer.from(`-${reply.message}\r\n`);
  if (Buffer.isBuffer(reply)) return Buffer.concat([Buffer.from(`$${reply.length}\r\n`), reply, Buffer.from("\r\n")]);
  return Buffer.concat([Buffer.from(`*${reply.length}\r\n`), ...reply.map(encodeReply)]);
}

const line = fc.string({ unit: fc.constantFrom(..."abcXYZ 019_-:+$*"), maxLength: 20 });
const { reply } = fc.letrec<{ reply: RedisReply }>((tie) => ({
  reply: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    line,
    fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
    fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
    fc.constant(null),
    line.map((m) => new RedisReplyError(`ERR ${m}`)),
    fc.array(tie("reply"), { maxLength: 4 }),
  ),
}));

function normalise(r: RedisReply): unknown {
  if (r instanceof RedisReplyError) return { error: r.message };
  if (Buffer.isBuffer(r)) return { bulk: r.toString("hex") };
  if (Array.isArray(r)) return r.map(normalise);
  return r;
}

describe("RespParser", () => {
  it("parses any reply stream, whatever the chunk boundaries", () => {
    fc.assert(
      fc.property(fc.array(reply, { minLength: 1, maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), (replies, cuts) => {
        const stream = Buffer.concat(replies.map(encodeReply));
        const points = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
        const parser = new RespParser();
        const out: RedisReply[] = [];
        let from = 0;
        for (const p of [...points, stream.length]) {
          out.push(...parser.push(stream.subarray(from, p)));
          from = p;
        }
        expect(out.map(normalise)).toEqual(replies.map(normalise));
      }),
      RUNS,
    );
  });

  it("keeps a large bulk string whole when it arrives in many chunks", () => {
    const value = Buffer.alloc(300_000, 7);
    const stream = encodeReply(value);
    const parser = new RespParser();
    const out: RedisReply[] = [];
    for (let i = 0; i < stream.length; i += 1000) out.push(...parser.push(stream.subarray(i, i + 1000)));
    expect(out).toHaveLength(1);
    expect((out[0] as Buffer).equals(value)).toBe(true);
  });

  it("tells a nil array from an empty one", () => {
    expect(new RespParser().push(Buffer.from("*-1\r\n*0\r\n"))).toEqual([null, []]);
  });

  it("refuses bytes that are not RESP", () => {
    expect(() => new RespParser().push(Buffer.from("HTTP/1.1 400 Bad Request\r\n"))).toThrow(RespProtocolError);
    expect(() => new RespParser().push(Buffer.from(":12x\r\n"))).toThrow(/not an integer/);
    expect(() => new RespParser().push(Buffer.from("$3\r\nabcXY"))).toThrow(/CRLF/);
  });

  it("names an error reply's class", () => {
    const [err] = new RespParser().push(Buffer.from("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"));
    expect(err).toBeInstanceOf(RedisReplyError);
    expect((err as RedisReplyError).kind).toBe("WRONGTYPE");
  });
});

describe("encodeCommand", () => {
  it("writes an array of bulk strings, binary-safe, counting bytes not characters", () => {
    expect(encodeCommand(["SET", "k€", Buffer.from([0, 13, 10]), 42]).toString("latin1")).toBe(
      "*4\r\n$3\r\nSET\r\n$4\r\nk\xe2\x82\xac\r\n$3\r\n\x00\r\n\r\n$2\r\n42\r\n",
    );
  });
});
