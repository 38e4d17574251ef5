/**
 * The root logger. API keys travel in URL paths and headers, so request URLs
 * and key headers are never logged as they are; these paths are redacted in
 * case one slips into a log object. Lines go to stdout in batches (at least
 * 4 KiB per write, written asynchronously) so a request's log line costs no
 * system call of its own; pino flushes what is left when the process exits.
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
  return pino(options, destination ?? fileDestination({ dest: 1, sync: false, minLength: 4096 }));
}
