/**
 * Prometheus metrics (prom-client), one registry per nodegate instance:
 * requests by method, front door and outcome with latency histograms;
 * upstream latency, errors and failovers; open WebSockets and streams;
 * each network's cache hits, misses, stores and coalesced calls.
 * Served at /metrics. The three every call touches are call-metrics.ts's
 * lighter counter and histograms.
 */
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { CallCounter, CallHistogram } from "./call-metrics.js";

/** A network's answer cache counters since start (CallCache.stats). */
export interface CacheCounts {
  hits: number;
  misses: number;
  stored: number;
  joined: number;
  dropped: number;
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class Metrics {
  readonly registry = new Registry();
  /** Label values in order: door, method, outcome. */
  readonly requests = this.#registered(
    new CallCounter({
      name: "nodegate_requests_total",
      help: "Requests by front door, method and outcome (ok, or the gRPC status / JSON-RPC error code).",
      labelNames: ["door", "method", "outcome"],
    }),
  );
  /** Label values in order: door, method. */
  readonly requestSeconds = this.#registered(
    new CallHistogram({
      name: "nodegate_request_duration_seconds",
      help: "Request latency by front door and method.",
      labelNames: ["door", "method"],
      buckets: LATENCY_BUCKETS,
    }),
  );
  /** Label values in order: network, upstream. */
  readonly upstreamSeconds = this.#registered(
    new CallHistogram({
      name: "nodegate_upstream_duration_seconds",
      help: "Upstream call latency by network and upstream.",
      labelNames: ["network", "upstream"],
      buckets: LATENCY_BUCKETS,
    }),
  );
  readonly upstreamErrors = new Counter({
    name: "nodegate_upstream_errors_total",
    help: "Upstream calls that failed, by network, upstream and kind (outage, node_error).",
    labelNames: ["network", "upstream", "kind"] as const,
    registers: [this.registry],
  });
  readonly failovers = new Counter({
    name: "nodegate_upstream_failovers_total",
    help: "Calls answered by a partner upstream during a primary outage.",
    labelNames: ["network", "upstream"] as const,
    registers: [this.registry],
  });
  readonly openWebSockets = new Gauge({
    name: "nodegate_open_websockets",
    help: "Open native-path WebSocket connections.",
    registers: [this.registry],
  });
  readonly openStreams = new Gauge({
    name: "nodegate_open_streams",
    help: "Open gRPC server streams.",
    registers: [this.registry],
  });
  readonly subscriptions = new Gauge({
    name: "nodegate_subscriptions",
    help: "Client subscriptions (native eth_subscribe and typed Subscribe* streams) by kind.",
    labelNames: ["kind"] as const,
    registers: [this.registry],
  });
  readonly subscriptionFeeds = new Gauge({
    name: "nodegate_subscription_feeds",
    help: "Upstream subscriptions or pollers serving them (one per network and distinct topic), by kind.",
    labelNames: ["network", "kind"] as const,
    registers: [this.registry],
  });

  /** The reply budget's bytes held (limits.maxReplyBytesInFlight), read at each scrape. */
  #replyBytes: () => number = () => 0;
  readonly replyBytesHeld = new Gauge({
    name: "nodegate_reply_bytes_held",
    help: "Bytes of node replies being read and of answers waiting for their clients (counted in limits.maxReplyBytesInFlight).",
    registers: [this.registry],
    collect: () => {
      this.replyBytesHeld.set(this.#replyBytes());
    },
  });

  /** Reports the reply budget's bytes held, read at each scrape. */
  watchReplyBytes(read: () => number): void {
    this.#replyBytes = read;
  }

  /** Each network's cache counters, read at each scrape. */
  readonly #caches = new Map<string, () => CacheCounts>();
  readonly cacheEvents = new Counter({
    name: "nodegate_cache_events_total",
    help: "Answer cache and in-flight coalescing by network: hit (served from the cache), miss (a cacheable call the cache could not answer), stored (answers put in the cache), joined (calls that shared an identical call under way), dropped (every stored answer set aside: the node's finality went back).",
    labelNames: ["network", "event"],
    registers: [this.registry],
    collect: () => {
      this.cacheEvents.reset();
      for (const [network, read] of this.#caches) {
        const counts = read();
        this.cacheEvents.inc({ network, event: "hit" }, counts.hits);
        this.cacheEvents.inc({ network, event: "miss" }, counts.misses);
        this.cacheEvents.inc({ network, event: "stored" }, counts.stored);
        this.cacheEvents.inc({ network, event: "joined" }, counts.joined);
        this.cacheEvents.inc({ network, event: "dropped" }, counts.dropped);
      }
    },
  });

  /** Reports a network's cache counters (read at each scrape, not counted per call). */
  watchCache(network: string, read: () => CacheCounts): void {
    this.#caches.set(network, read);
  }

  /** Each network's pace of nodegate's own reads, read at each scrape. */
  readonly #ownReadPaces = new Map<string, () => number>();
  readonly ownReadsPace = new Gauge({
    name: "nodegate_own_reads_paced_per_second",
    help: "Calls a second nodegate's own subscription reads (polls, gap fills, catch-ups, resumes' histories) may make of a network's primary while it refuses calls for its rate limit; 0 when they are not paced.",
    labelNames: ["network"] as const,
    registers: [this.registry],
    collect: () => {
      this.ownReadsPace.reset();
      for (const [network, read] of this.#ownReadPaces) {
        const perSecond = read();
        this.ownReadsPace.set({ network }, Number.isFinite(perSecond) ? perSecond : 0);
      }
    },
  });

  /** Reports a network's pace of own reads (OwnReadPace.perSecond: Infinity when not paced), read at each scrape. */
  watchOwnReadsPace(network: string, read: () => number): void {
    this.#ownReadPaces.set(network, read);
  }

  #registered<T extends CallCounter | CallHistogram>(metric: T): T {
    // The registry reads a metric through name, help, type, get() and reset(): these have them.
    this.registry.registerMetric(metric as unknown as Parameters<Registry["registerMetric"]>[0]);
    return metric;
  }

  constructor(options: { processMetrics?: boolean } = {}) {
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: "nodegate_" });
  }

  /** Metric names must be short and bounded: unknown methods are folded into one label value. */
  static methodLabel(method: string, known: (m: string) => boolean): string {
    return known(method) ? method : "other";
  }
}
