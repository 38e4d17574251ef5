/**
 * One warning per store per interval when a shared store fails a command
 * (Redis out of memory, a read-only replica, a timeout), so an outage under
 * load writes a few log lines rather than one per request.
 */
import type { Logger } from "pino";

/** Notes that `store` ("rate limits", "cache") could not use Redis and fell back. */
export type StoreErrorReporter = (store: string, err: unknown) => void;

export function throttledStoreErrors(log: Logger, intervalMs = 10_000, now: () => number = Date.now): StoreErrorReporter {
  const last = new Map<string, { at: number; suppressed: number }>();
  return (store, err) => {
    const seen = last.get(store);
    const t = now();
    if (seen !== undefined && t - seen.at < intervalMs) {
      seen.suppressed++;
      return;
    }
    last.set(store, { at: t, suppressed: 0 });
    log.warn(
      { store, err: (err as Error)?.message ?? String(err), suppressedSinceLast: seen?.suppressed ?? 0 },
      store === "cache" ? "redis command failed; the cache misses until it answers" : "redis command failed; rate limits are counted in this instance until it answers",
    );
  };
}
