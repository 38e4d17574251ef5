/**
 * The root logger. API keys travel in URL paths and headers, so request URLs
 * and key headers are never logged as they are; these paths are redacted in
 * case one slips into a log object. Lines go to stdout in batches (32 KiB
 * per write, written asynchronously, and at least once a second) so a
 * request's log line costs no system call of its own; pino flushes what is
 * left when the process exits.
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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options: LoggerOptions = { level, redact: { paths: REDACT_PATHS, censor: "[redacted]" }, base: { service: "nodegate" } };
  if (destination) return pino(options, destination);
  const stdout = fileDestination({ dest: 1, sync: false, minLength: 32 * 1024, maxWrite: 64 * 1024 });
  // At low traffic the buffer fills slowly: lines leave at most a second late. (The timer does not keep the process alive.)
  setInterval(() => stdout.flush(() => {}), 1000).unref();
  return pino(options, stdout);
}
