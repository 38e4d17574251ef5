/**
 * The request log line written as text (writeRequestLine) is the line pino
 * writes for the same fields: same keys in the same order, same escaping,
 * same level, time and bindings, to the same destination. Other loggers (a
 * child, one made outside createLogger) get the fields through pino itself.
 */
import fc from "fast-check";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/observability/log.js";
import { type RequestFields, writeRequestLine } from "../../src/observability/request-line.js";

function capture(): { lines: string[]; write(text: string): void } {
  const lines: string[] = [];
  return { lines, write: (text) => void lines.push(text) };
}

/** The two lines with pino's "time" value made equal (they are taken a moment apart). */
function sameTime(a: string, b: string): [string, string] {
  const time = /"time":(\d+)/;
  const t = time.exec(a)?.[1] ?? "";
  return [a, b.replace(time, `"time":${t}`)];
}

// What JSON escapes (quotes, backslashes, control characters) often, and any other character now and then.
const character = fc.oneof(fc.constantFrom('"', "\\", "\n", "\t", "\u0000", "\u001f", "\u007f", "\u2028", "é", "😀"), fc.string({ unit: "grapheme", minLength: 1, maxLength: 1 }));
const text = fc.string({ unit: character, maxLength: 150 });
const fieldValue = fc.oneof(
  text,
  fc.double(),
  fc.integer(),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0),
  fc.array(text, { maxLength: 4 }),
  fc.constant(undefined),
);

describe("request log lines", () => {
  it("are the text pino writes for the same fields, whatever the values", () => {
    const sink = capture();
    const log = createLogger("info", sink);
    fc.assert(
      fc.property(fc.dictionary(fc.stringMatching(/^[a-z][A-Za-z]{0,11}$/), fieldValue, { maxKeys: 8 }), fc.constantFrom("info", "warn"), (fields, level) => {
        sink.lines.length = 0;
        writeRequestLine(log, level as "info" | "warn", fields as RequestFields);
        log[level as "info" | "warn"](fields, "request");
        expect(sink.lines).toHaveLength(2);
        const [fast, viaPino] = sameTime(sink.lines[0] as string, sink.lines[1] as string);
        expect(fast).toBe(viaPino);
      }),
      { numRuns: 300, seed: 5 },
    );
  });

  it("writes nothing below the logger's level, and goes through pino for a logger it did not make", () => {
    const quiet = capture();
    writeRequestLine(createLogger("warn", quiet), "info", { door: "jsonrpc-http", ms: 1 });
    expect(quiet.lines).toEqual([]);

    const sink = capture();
    const child = createLogger("info", sink).child({ worker: 2 });
    writeRequestLine(child, "info", { door: "grpc", method: "nodegate.eth.v1.EthService/ChainId", ms: 0.5 });
    expect(JSON.parse(sink.lines[0] as string)).toMatchObject({ level: 30, service: "nodegate", worker: 2, door: "grpc", ms: 0.5, msg: "request" });

    const own = capture();
    writeRequestLine(pino({ base: null, messageKey: "message" }, own), "info", { door: "grpc", ms: 2 });
    expect(JSON.parse(own.lines[0] as string)).toEqual({ level: 30, time: expect.any(Number), door: "grpc", ms: 2, message: "request" });
  });
});
