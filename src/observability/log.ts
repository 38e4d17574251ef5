/**
 * The root logger. API keys travel in URL paths and headers, so request URLs
 * and key headers are never logged as they are; these paths are redacted in
 * case one slips into a log object, and every line leaves out the upstream
 * URLs' secret parts, which a node's text may quote (secret-texts.ts). Lines
 * go to stdout in batches (one
 * write per 32 KiB, and at least once a second), written asynchronously, so a
 * request's log line costs no system call and never waits for stdout. On a
 * graceful stop nodegate waits for `flushLogs`; on any other exit what is
 * still gathered is written synchronously (best effort: a batch whose
 * asynchronous write is still in flight then may land after it).
 */
import cluster from "node:cluster";
import { writeSync } from "node:fs";
import { type DestinationStream, destination as fileDestination, type Logger, type LoggerOptions, pino } from "pino";
import { withoutSecrets } from "../errors/secret-texts.js";

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
    line = withoutSecrets(line);
    this.#lines.push(line);
    this.#size += line.length;
    if (this.#size >= this.#chunk) this.handOver();
  }

  /** Gives the gathered lines to the writer. */
  handOver(): void {
    const text = this.#take();
    if (text !== undefined) this.#target.write(text);
  }

  /** Calls back once everything gathered so far is written. */
  flush(callback?: (err?: Error) => void): void {
    this.handOver();
    this.#target.flush(callback ?? (() => {}));
  }

  /**
   * At exit, when nothing asynchronous can finish: what the writer holds, then
   * what is gathered here, written synchronously with `writeSync`. (A batch
   * the writer is writing at that moment is on its own: it may land after.)
   */
  flushSyncWith(write: (text: string) => void): void {
    this.#target.flushSync();
    const text = this.#take();
    if (text !== undefined) write(text);
  }

  #take(): string | undefined {
    if (this.#lines.length === 0) return undefined;
    const text = this.#lines.length === 1 ? (this.#lines[0] as string) : this.#lines.join("");
    this.#lines = [];
    this.#size = 0;
    return text;
  }
}

/** Lines pending for stdout beyond this are dropped (a stuck log reader must not grow memory without bound). */
const MAX_PENDING_BYTES = 16 * 1024 * 1024;

/** Loggers made here: their options are known, so request lines may be written as text (request-line.ts). */
const made = new WeakSet<Logger>();

export function madeByCreateLogger(log: Logger): boolean {
  return made.has(log);
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const log = createPinoLogger(level, destination);
  made.add(log);
  return log;
}

function createPinoLogger(level: string, destination?: DestinationStream): Logger {
  // Several workers write to one stdout: each line says which one (its pid, as the primary's crash messages name it).
  const base = cluster.isWorker ? { service: "nodegate", pid: process.pid } : { service: "nodegate" };
  const options: LoggerOptions = { level, redact: { paths: REDACT_PATHS, censor: "[redacted]" }, base };
  if (destination) return pino(options, scrubbed(destination));
  // minLength 1: flush(callback) waits until everything handed over is written.
  const stdout = fileDestination({ dest: 1, sync: false, minLength: 1, maxWrite: 64 * 1024, maxLength: MAX_PENDING_BYTES });
  const lines = new LineBatcher(stdout, 32 * 1024);
  // The event loop is about to empty: hand the rest over while asynchronous writes can still finish.
  process.on("beforeExit", () => lines.handOver());
  process.once("exit", () => {
    try {
      lines.flushSyncWith((text) => writeSync(1, text));
    } catch {
      // Best effort: a closed or full stdout at exit must not turn a clean exit into a crash.
    }
  });
  // At low traffic the batch fills slowly: lines leave at most a second late. (The timer does not keep the process alive.)
  setInterval(() => lines.handOver(), 1000).unref();
  return pino(options, lines);
}

/** A destination that gets each line without the upstream URLs' secret parts (a node's text may quote them: secret-texts.ts). */
function scrubbed(destination: DestinationStream): DestinationStream {
  const flushable = destination as DestinationStream & { flush?: (callback: (err?: Error) => void) => void };
  return {
    write: (line: string) => destination.write(withoutSecrets(line)),
    ...(typeof flushable.flush === "function" ? { flush: (callback: (err?: Error) => void) => flushable.flush?.(callback) } : {}),
  } as DestinationStream;
}

/** Resolves once every line logged so far is written (or after `timeoutMs`, so a stuck stdout cannot hold up a stop). */
export function flushLogs(log: Logger, timeoutMs = 2_000): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    log.flush(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
