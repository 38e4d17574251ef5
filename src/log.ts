/**
 * The root logger. API keys travel in URL paths and headers, so request URLs
 * and key headers are never logged as they are; these paths are redacted in
 * case one slips into a log object. Lines go to stdout in batches (one
 * write per 32 KiB, and at least once a second) so a request's log line
 * costs no system call of its own. Each batch is written synchronously, as
 * pino's default destination does: lines keep their order and the last ones
 * are written at exit (an asynchronous write still in flight at exit could
 * land after, or without, the lines flushed then).
 */
import { type DestinationStream, destination as fileDestination, type Logger, type LoggerOptions, pino } from "pino";

export const REDACT_PATHS = [
  "req.url",
  "req.headers.authorization",
  'req.headers["x-api-key"]',
  "headers.authorization",
  'headers["x-api-key"]',
  "apiKey",
  "key",
  "url",
  "upstreamUrl",
];

/** What LineBatcher needs of the writer: pino.destination()'s sonic-boom. */
interface TextWriter {
  write(text: string): unknown;
  flush(callback: (err?: Error) => void): void;
  flushSync(): void;
}

/**
 * Gathers log lines and hands them to the stdout writer (sonic-boom) in
 * chunks. Left to batch lines itself, sonic-boom measures the byte length of
 * its whole pending text on every write, which with 32 KiB pending costs
 * about 9 us per line: more than the rest of a small call's logging. Here a
 * line costs an array push.
 */
export class LineBatcher implements DestinationStream {
  readonly #target: TextWriter;
  readonly #chunk: number;
  #lines: string[] = [];
  #size = 0;

  constructor(target: TextWriter, chunk = 16 * 1024) {
    this.#target = target;
    this.#chunk = chunk;
  }

  write(line: string): void {
    this.#lines.push(line);
    this.#size += line.length;
    if (this.#size >= this.#chunk) this.handOver();
  }

  /** Gives the gathered lines to the writer. */
  handOver(): void {
    if (this.#lines.length === 0) return;
    const text = this.#lines.length === 1 ? (this.#lines[0] as string) : this.#lines.join("");
    this.#lines = [];
    this.#size = 0;
    this.#target.write(text);
  }

  flush(callback?: (err?: Error) => void): void {
    this.handOver();
    this.#target.flush(callback ?? (() => {}));
  }

  flushSync(): void {
    this.handOver();
    this.#target.flushSync();
  }
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options: LoggerOptions = { level, redact: { paths: REDACT_PATHS, censor: "[redacted]" }, base: { service: "nodegate" } };
  if (destination) return pino(options, destination);
  const lines = new LineBatcher(fileDestination({ dest: 1, sync: true }), 32 * 1024);
  process.once("exit", () => lines.handOver());
  // At low traffic the batch fills slowly: lines leave at most a second late. (The timer does not keep the process alive.)
  setInterval(() => lines.handOver(), 1000).unref();
  return pino(options, lines);
}
