/**
 * Prometheus metrics (prom-client), one registry per nodegate instance:
 * requests by method, front door and outcome with latency histograms;
 * upstream latency, errors and failovers; open WebSockets and streams.
 * Served at /metrics.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: "nodegate_requests_total",
    help: "Requests by front door, method and outcome (ok, or the gRPC status / JSON-RPC error code).",
    labelNames: ["door", "method", "outcome"] as const,
    registers: [this.registry],
  });
  readonly requestSeconds = new Histogram({
    name: "nodegate_request_duration_seconds",
    help: "Request latency by front door and method.",
    labelNames: ["door", "method"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly upstreamSeconds = new Histogram({
    name: "nodegate_upstream_duration_seconds",
    help: "Upstream call latency by network and upstream.",
    labelNames: ["network", "upstream"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
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

  constructor(options: { processMetrics?: boolean } = {}) {
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: "nodegate_" });
  }

  /** Metric names must be short and bounded: unknown methods are folded into one label value. */
  static methodLabel(method: string, known: (m: string) => boolean): string {
    return known(method) ? method : "other";
  }
}
