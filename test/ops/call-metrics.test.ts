/**
 * nodegate's per-call counter and histograms (call-metrics.ts) write the same
 * Prometheus text, and the same JSON, as prom-client's own Counter and
 * Histogram given the same observations: label values that need escaping,
 * values on, between and beyond the bucket bounds, and after a reset.
 */
import fc from "fast-check";
import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { CallCounter, CallHistogram } from "../../src/observability/call-metrics.js";

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.25, 1, 10];

function pair() {
  const theirs = new Registry();
  const ours = new Registry();
  const counter = { name: "t_requests_total", help: "Requests.", labelNames: ["door", "method", "outcome"] as const };
  const histogram = { name: "t_duration_seconds", help: "Latency \\ with \"quotes\".", labelNames: ["door", "method"] as const, buckets: BUCKETS };
  const promCounter = new Counter({ ...counter, registers: [theirs] });
  const promHistogram = new Histogram({ ...histogram, registers: [theirs] });
  const callCounter = new CallCounter(counter);
  const callHistogram = new CallHistogram(histogram);
  ours.registerMetric(callCounter as never);
  ours.registerMetric(callHistogram as never);
  return {
    theirs,
    ours,
    observe(door: string, method: string, outcome: string, seconds: number) {
      promCounter.inc({ door, method, outcome });
      promHistogram.observe({ door, method }, seconds);
      callCounter.inc([door, method, outcome]);
      callHistogram.observe([door, method], seconds);
    },
    reset() {
      theirs.resetMetrics();
      ours.resetMetrics();
    },
  };
}

/** prom-client writes `exemplar: null` (or undefined) on every value when exemplars are off; nodegate's leave the key out. */
function withoutExemplars(metrics: { values: object[] }[]): unknown {
  return metrics.map((m) => ({ ...m, values: m.values.map(({ exemplar, ...rest }: { exemplar?: unknown }) => (exemplar == null ? rest : { exemplar, ...rest })) }));
}

const label = fc.oneof(fc.constantFrom("jsonrpc-http", "grpc", "eth_call", "ok", "-32602", 'a"b', "a\\b", "line\nbreak", ""), fc.string({ maxLength: 6 }));
const seconds = fc.oneof(fc.constantFrom(...BUCKETS, 0, 30, 1e-9), fc.double({ min: 0, max: 20, noNaN: true }));
const observation = fc.tuple(label, label, label, seconds);

describe("per-call metrics", () => {
  it("read as prom-client's Counter and Histogram read for the same observations", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 40 }), fc.array(observation, { maxLength: 10 }), async (before, after) => {
        const { theirs, ours, observe, reset } = pair();
        for (const o of before) observe(...o);
        expect(await ours.metrics()).toBe(await theirs.metrics());
        expect(withoutExemplars(await ours.getMetricsAsJSON())).toEqual(withoutExemplars(await theirs.getMetricsAsJSON()));
        reset();
        for (const o of after) observe(...o);
        expect(await ours.metrics()).toBe(await theirs.metrics());
      }),
      { numRuns: 150, seed: 9 },
    );
  });
});
