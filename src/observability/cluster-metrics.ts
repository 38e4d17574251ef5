/**
 * /metrics with several workers (NODEGATE_WORKERS > 1): the worker that takes
 * a scrape asks the primary, which sums every worker's registry with
 * prom-client's AggregatorRegistry, so each scrape counts the whole process
 * group rather than whichever worker the connection landed on (counters
 * would otherwise seem to jump back and forth between scrapes).
 */
import cluster from "node:cluster";
import { AggregatorRegistry, type Registry } from "prom-client";

const SCRAPE = "nodegate:metrics";
/** prom-client's own limit for collecting from the workers is 5 s. */
const SCRAPE_TIMEOUT_MS = 6000;

interface ScrapeMessage {
  type: typeof SCRAPE;
  id: number;
  text?: string;
  error?: string;
}

/** A worker whose channel closes between the check and the send: its exit is reported by the cluster. */
const ignoreClosedChannel = () => {};

const isScrape = (message: unknown): message is ScrapeMessage => (message as { type?: unknown } | null)?.type === SCRAPE;

/** In the primary, once: answers a worker's scrape with the sum of every worker's metrics. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on("message", (worker, message: unknown) => {
    if (!isScrape(message)) return;
    // The worker that asked may have died while its scrape waited (up to prom-client's 5 s for a dead worker's
    // metrics): sending to its closed channel would fail, and there is nobody left to answer.
    const answer = (reply: ScrapeMessage) => {
      if (worker.isConnected()) worker.send(reply, ignoreClosedChannel);
    };
    aggregator.clusterMetrics().then(
      (text) => answer({ type: SCRAPE, id: message.id, text }),
      (err: unknown) => answer({ type: SCRAPE, id: message.id, error: (err as Error).message }),
    );
  });
}

/**
 * In a worker: lets the primary read `registry`, and returns how a scrape
 * gets the whole group's metrics text. Undefined outside a cluster worker.
 */
export function clusterMetricsReader(registry: Registry): (() => Promise<string>) | undefined {
  if (!cluster.isWorker) return undefined;
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs prom-client's answer to the primary's requests for this worker's metrics.
  new AggregatorRegistry();
  const pending = new Map<number, (message: ScrapeMessage) => void>();
  let nextId = 0;
  process.on("message", (message: unknown) => {
    if (isScrape(message)) pending.get(message.id)?.(message);
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error("the primary did not answer with the workers' metrics"));
      }, SCRAPE_TIMEOUT_MS);
      pending.set(id, (message) => {
        clearTimeout(timer);
        pending.delete(id);
        if (message.text !== undefined) resolve(message.text);
        else reject(new Error(message.error ?? "no metrics"));
      });
      process.send?.({ type: SCRAPE, id });
    });
}
