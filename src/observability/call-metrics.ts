/**
 * The metrics every call touches (requests by door, method and outcome; the
 * request and upstream latency histograms), kept as plain numbers and served
 * through the prom-client registry like any other metric, in the same text.
 *
 * prom-client's Counter and Histogram validate and hash their label object on
 * every observation: about 3 us of CPU for the three a small call makes,
 * a few percent of a proxied call. Here an observation finds its cell through
 * nested maps of its label values and adds to numbers.
 */

/** The cells of a metric, one per distinct list of label values. */
class LabelledCells<T> {
  readonly labelNames: readonly string[];
  readonly #make: () => T;
  #root = new Map<string, unknown>();
  #all: { values: readonly string[]; cell: T }[] = [];

  constructor(labelNames: readonly string[], make: () => T) {
    this.labelNames = labelNames;
    this.#make = make;
  }

  /** The cell for these label values (as many as labelNames, in that order). */
  get(values: readonly string[]): T {
    let map = this.#root;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      let next = map.get(values[i] as string) as Map<string, unknown> | undefined;
      if (next === undefined) {
        next = new Map();
        map.set(values[i] as string, next);
      }
      map = next;
    }
    let cell = map.get(values[last] as string) as T | undefined;
    if (cell === undefined) {
      cell = this.#make();
      map.set(values[last] as string, cell);
      this.#all.push({ values: [...values], cell });
    }
    return cell;
  }

  labelsOf(values: readonly string[]): Record<string, string> {
    const labels: Record<string, string> = {};
    this.labelNames.forEach((name, i) => {
      labels[name] = values[i] as string;
    });
    return labels;
  }

  entries(): readonly { values: readonly string[]; cell: T }[] {
    return this.#all;
  }

  clear(): void {
    this.#root = new Map();
    this.#all = [];
  }
}

/** One value of a metric as prom-client's registry reads it. */
interface MetricValue {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName?: string;
}

interface MetricData {
  name: string;
  help: string;
  type: string;
  values: MetricValue[];
  aggregator: "sum";
}

interface MetricOptions {
  name: string;
  help: string;
  labelNames: readonly string[];
}

/** A counter by label values; register it with `registry.registerMetric`. */
export class CallCounter {
  readonly name: string;
  readonly help: string;
  readonly type = "counter";
  readonly aggregator = "sum";
  readonly #cells: LabelledCells<{ value: number }>;

  constructor(options: MetricOptions) {
    this.name = options.name;
    this.help = options.help;
    this.#cells = new LabelledCells(options.labelNames, () => ({ value: 0 }));
  }

  /** Adds `by` (default 1) for these label values, in labelNames order. */
  inc(values: readonly string[], by = 1): void {
    this.#cells.get(values).value += by;
  }

  get(): MetricData {
    const values = this.#cells.entries().map(({ values: v, cell }) => ({ labels: this.#cells.labelsOf(v), value: cell.value }));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.#cells.clear();
  }
}

interface HistogramCell {
  /** Observations per bucket (not cumulative); above the last bound only `count` grows. */
  buckets: Float64Array;
  sum: number;
  count: number;
}

/** A histogram by label values, written out as prom-client writes its own. */
export class CallHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = "histogram";
  readonly aggregator = "sum";
  readonly #bounds: readonly number[];
  readonly #cells: LabelledCells<HistogramCell>;

  constructor(options: MetricOptions & { buckets: readonly number[] }) {
    this.name = options.name;
    this.help = options.help;
    this.#bounds = [...options.buckets].sort((a, b) => a - b);
    this.#cells = new LabelledCells(options.labelNames, () => ({ buckets: new Float64Array(this.#bounds.length), sum: 0, count: 0 }));
  }

  /** Records one observation (seconds, say) for these label values, in labelNames order. */
  observe(values: readonly string[], value: number): void {
    if (!Number.isFinite(value)) return;
    const cell = this.#cells.get(values);
    const bounds = this.#bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= (bounds[i] as number)) {
        (cell.buckets[i] as number)++;
        break;
      }
    }
    cell.sum += value;
    cell.count++;
  }

  /** As prom-client's Histogram: `le` first, the metric's own labels after it. */
  getForPromString(): MetricData {
    const values: MetricValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const { values: v, cell } of this.#cells.entries()) {
      const labels = this.#cells.labelsOf(v);
      let cumulative = 0;
      this.#bounds.forEach((bound, i) => {
        cumulative += cell.buckets[i] as number;
        values.push({ labels: { le: bound }, sharedLabels: labels, value: cumulative, metricName: bucketName });
      });
      values.push({ labels: { le: "+Inf" }, sharedLabels: labels, value: cell.count, metricName: bucketName });
      values.push({ labels: {}, sharedLabels: labels, value: cell.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: labels, value: cell.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  get(): MetricData {
    const data = this.getForPromString();
    data.values = data.values.map(({ labels, sharedLabels, value, metricName }) => ({ labels: { ...sharedLabels, ...labels }, value, ...(metricName === undefined ? {} : { metricName }) }));
    return data;
  }

  reset(): void {
    this.#cells.clear();
  }
}
