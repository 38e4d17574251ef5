/**
 * One metrics scrape at a time, shared by every request that waits for it. A scrape is asynchronous, so Node goes on
 * reading an HTTP/1.1 connection's pipelined requests while it runs: each started its own, and a client with no key
 * that pipelined GET /metrics by the thousand on connections it never read grew the process by over a gigabyte and
 * held other callers for tens of seconds (found from outside; 100 clients looping on /metrics made 700 scrapes a
 * second). A request that comes while a scrape runs waits for the next one, which starts once that one ends and
 * serves every request that came meanwhile: no answer holds counters older than its request, and at most one scrape
 * runs (and one waits) however many ask.
 */
export function sharedScrape(scrape: () => Promise<string>): () => Promise<string> {
  let running: Promise<string> | undefined;
  let next: Promise<string> | undefined;
  const start = (): Promise<string> => {
    running = scrape().finally(() => {
      running = undefined;
    });
    return running;
  };
  const ask = (): Promise<string> => {
    if (running === undefined) return start();
    next ??= running.then(
      () => undefined,
      () => undefined,
    ).then(() => {
      next = undefined;
      return start();
    });
    return next;
  };
  return ask;
}
