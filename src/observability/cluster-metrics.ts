/**
 * /metrics with several workers (NODEGATE_WORKERS > 1): the worker that takes
 * a scrape asks the primary, which sums every worker's registry (prom-client's
 * aggregators: counters summed, gauges as each declares), so each scrape
 * counts the whole process group rather than whichever worker the connection
 * landed on (counters would otherwise seem to jump back and forth).
 *
 * The primary asks the workers itself, in prom-client's message format, so
 * that a worker that is starting, stopped or gone does not fail or hold the
 * scrape (prom-client waits 5 s for every worker, then fails it), and so that
 * counters never go back: a worker that exits leaves its counts behind (a
 * worker that stops on its own sends its final totals as it goes; one that is
 * killed, its totals as it last answered), and one that does not answer in
 * time is counted as it last answered.
 */
import cluster, { type Worker } from "node:cluster";
import { AggregatorRegistry, type Registry } from "prom-client";

const SCRAPE = "nodegate:metrics";
/** A worker says so once its registry answers the primary's requests. */
const WORKER_READY = "nodegate:metrics-ready";
/** prom-client's own messages, which its worker side answers. */
const GET_METRICS_REQ = "prom-client:getMetricsReq";
const GET_METRICS_RES = "prom-client:getMetricsRes";
/** A worker that stops on its own sends its totals as they are at the end. */
const FINAL_TOTALS = "nodegate:metrics-final";
/** How long a stopping worker waits for its final totals to be handed to the channel. */
const FINAL_SEND_MS = 1000;
/** How long the primary waits for each worker's metrics before counting it as it last answered. */
const WORKER_ANSWER_MS = 1000;
/** How long a worker waits for the primary's sum. */
const SCRAPE_TIMEOUT_MS = 6000;

type MetricsJson = Awaited<ReturnType<Registry["getMetricsAsJSON"]>>;

interface ScrapeMessage {
  type: typeof SCRAPE;
  id: number;
  text?: string;
  error?: string;
}

/** A worker whose channel closes between the check and the send: its exit is reported by the cluster. */
const ignoreClosedChannel = () => {};

const isScrape = (message: unknown): message is ScrapeMessage => (message as { type?: unknown } | null)?.type === SCRAPE;

/** What of a worker's metrics stays true after it is gone: the totals (counters, histograms), not its gauges. */
const totalsOf = (metrics: MetricsJson): MetricsJson =>
  // At run time a metric's type is its name ("counter"), whatever prom-client's typings say.
  metrics.filter((m) => (m.type as unknown as string) === "counter" || (m.type as unknown as string) === "histogram");

/** In the primary, once: answers a worker's scrape with the sum of every worker's metrics. */
export function serveClusterMetrics(): void {
  const ready = new Set<Worker>();
  /** Each worker's totals as it last answered. */
  const lastTotals = new Map<Worker, MetricsJson>();
  /** Workers that sent their final totals (lastTotals), which no later answer replaces. */
  const finished = new WeakSet<Worker>();
  /** The totals of workers that have exited, summed. */
  let retired: MetricsJson = [];
  const waiting = new Map<number, (metrics: MetricsJson | undefined) => void>();
  let nextRequest = 0;

  const ask = (worker: Worker): Promise<MetricsJson | undefined> =>
    new Promise((resolve) => {
      const requestId = nextRequest++;
      const timer = setTimeout(() => settle(undefined), WORKER_ANSWER_MS);
      const settle = (metrics: MetricsJson | undefined) => {
        clearTimeout(timer);
        waiting.delete(requestId);
        resolve(metrics);
      };
      waiting.set(requestId, settle);
      worker.send({ type: GET_METRICS_REQ, requestId }, (err: Error | null) => {
        if (err) settle(undefined);
      });
    });

  /** Totals of workers that have exited, until they are folded into `retired`. */
  const departing = new Set<MetricsJson>();
  /** Folds run one after another, so two exits at once cannot both fold into the same earlier sum. */
  let folding: Promise<void> = Promise.resolve();
  const retire = (worker: Worker) => {
    const last = lastTotals.get(worker);
    lastTotals.delete(worker);
    if (last === undefined) return;
    departing.add(last);
    // Kept as one summed set, so a crash loop does not grow it.
    folding = folding.then(async () => {
      try {
        retired = await AggregatorRegistry.aggregate([retired, last]).getMetricsAsJSON();
      } catch {
        return; // never seen: the totals come from prom-client's own JSON; they stay counted from `departing`
      }
      departing.delete(last);
    });
  };

  const sum = async (): Promise<string> => {
    const workers = [...ready].filter((w) => w.isConnected());
    const answers = await Promise.all(workers.map(ask));
    const parts: MetricsJson[] = [];
    workers.forEach((worker, i) => {
      // A worker that exited while the others answered is counted among the retired (found from outside: counted
      // twice, so the next scrape's counters went back).
      if (!ready.has(worker)) return;
      const answer = finished.has(worker) ? undefined : answers[i];
      if (answer !== undefined) {
        parts.push(answer);
        lastTotals.set(worker, totalsOf(answer));
      } else {
        const last = lastTotals.get(worker);
        if (last !== undefined) parts.push(last);
      }
    });
    if (retired.length > 0) parts.push(retired);
    for (const totals of departing) parts.push(totals);
    return AggregatorRegistry.aggregate(parts).metrics();
  };

  cluster.on("message", (worker, message: unknown) => {
    const type = (message as { type?: unknown } | null)?.type;
    if (type === WORKER_READY) {
      ready.add(worker);
      return;
    }
    if (type === FINAL_TOTALS) {
      if (!ready.has(worker)) return;
      lastTotals.set(worker, (message as { metrics: MetricsJson }).metrics);
      finished.add(worker);
      return;
    }
    if (type === GET_METRICS_RES) {
      const m = message as { requestId: number; metrics?: MetricsJson[] };
      waiting.get(m.requestId)?.(m.metrics === undefined ? undefined : m.metrics.flat());
      return;
    }
    if (!isScrape(message)) return;
    // The worker that asked may have died while its scrape waited: sending to its closed channel would fail, and
    // there is nobody left to answer.
    const answer = (reply: ScrapeMessage) => {
      if (worker.isConnected()) worker.send(reply, ignoreClosedChannel);
    };
    sum().then(
      (text) => answer({ type: SCRAPE, id: message.id, text }),
      (err: unknown) => answer({ type: SCRAPE, id: message.id, error: (err as Error).message }),
    );
  });
  cluster.on("exit", (worker) => {
    // Its final totals are read from the channel, which may still hold them when the process has exited.
    const gone = () => {
      ready.delete(worker);
      retire(worker);
    };
    if (worker.isConnected()) worker.once("disconnect", gone);
    else gone();
  });
}

/**
 * In a worker: lets the primary read `registry`, and returns how a scrape
 * gets the whole group's metrics text. Undefined outside a cluster worker.
 */
export function clusterMetricsReader(registry: Registry): (() => Promise<string>) | undefined {
  if (!cluster.isWorker) return undefined;
  workerRegistry = registry;
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs prom-client's answer to the primary's requests for this worker's metrics.
  new AggregatorRegistry();
  toPrimary({ type: WORKER_READY });
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
      // A worker whose primary is gone drains what it holds (main.ts); a scrape then reads this worker alone
      // (found from outside: the send to the closed channel threw, and ended the worker's drain).
      if (!toPrimary({ type: SCRAPE, id })) pending.get(id)?.({ type: SCRAPE, id, error: "the primary is gone" });
    }).catch((err: unknown) => (process.connected ? Promise.reject(err) : registry.metrics()));
}

/** This worker's registry (clusterMetricsReader), for its final totals. */
let workerRegistry: Registry | undefined;

/** Sends to the primary when its channel is open; false when it is closed. */
function toPrimary(message: object, sent: (err: Error | null) => void = ignoreClosedChannel): boolean {
  if (!process.connected || process.send === undefined) return false;
  process.send(message, undefined, {}, sent);
  return true;
}

/**
 * In a worker that stops on its own: hands its totals to the primary, so the
 * counts since the last scrape stay in the group's sums. Resolves once they
 * are sent (or could not be), within a second.
 */
export async function sendFinalTotals(): Promise<void> {
  if (workerRegistry === undefined || !process.connected) return;
  const metrics = totalsOf(await workerRegistry.getMetricsAsJSON());
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, FINAL_SEND_MS);
    if (!toPrimary({ type: FINAL_TOTALS, metrics }, () => (clearTimeout(timer), resolve()))) (clearTimeout(timer), resolve());
  });
}
