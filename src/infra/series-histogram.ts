import type { Metric, Registry } from 'prom-client';

interface Series {
  /** Label name → value, one object per series (the registry caches its text by identity). */
  readonly labels: Record<string, string>;
  /** Observations per bucket, not cumulative; the last counts those above every bound. */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/** A level of the series tree: label value → the next level, or the series at the last label. */
type Level = Map<string, Level | Series>;

/**
 * A Prometheus histogram for the request path: prom-client's `Histogram` converts, validates and
 * hashes the labels on every observation, even through `labels()` (its cost measured in
 * bench/results/2026-11-27-request-path-costs.md). The same exposition, through the same registry.
 */
export class SeriesHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #root: Level = new Map();
  /** Every series, in the order first observed (prom-client's order). */
  readonly #all: Series[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly L[],
    private readonly upperBounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric<L>);
  }

  /** One observation; `labelValues` in the order of the label names. */
  observe(value: number, ...labelValues: string[]): void {
    const series = this.#series(labelValues);
    const bounds = this.upperBounds;
    let bucket = 0;
    while (bucket < bounds.length && value > bounds[bucket]) bucket++;
    series.counts[bucket]++;
    series.sum += value;
    series.count++;
  }

  #series(labelValues: string[]): Series {
    let level = this.#root;
    const last = labelValues.length - 1;
    for (let i = 0; i < last; i++) {
      let next = level.get(labelValues[i]) as Level | undefined;
      if (!next) level.set(labelValues[i], (next = new Map()));
      level = next;
    }
    let series = level.get(labelValues[last]) as Series | undefined;
    if (!series) {
      const labels = Object.fromEntries(this.labelNames.map((name, i) => [name, labelValues[i]]));
      level.set(labelValues[last], (series = { labels, counts: new Float64Array(this.upperBounds.length + 1), sum: 0, count: 0 }));
      this.#all.push(series);
    }
    return series;
  }

  /** What the registry prints: per series its cumulative buckets, `+Inf`, `_sum` and `_count`, as prom-client's `Histogram` has them. */
  getForPromString() {
    const values = [];
    const bucketName = `${this.name}_bucket`;
    for (const series of this.#all) {
      let cumulative = 0;
      this.upperBounds.forEach((bound, i) => {
        cumulative += series.counts[i];
        values.push({ labels: { le: bound }, sharedLabels: series.labels, value: cumulative, metricName: bucketName });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: series.labels, value: series.count, metricName: bucketName },
        { labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** The same, each value's labels whole (`Registry.getMetricsAsJSON`). */
  get() {
    const metric = this.getForPromString();
    const values = metric.values.map(({ labels, sharedLabels, ...value }) => ({ ...value, labels: { ...labels, ...sharedLabels } }));
    return { ...metric, values };
  }

  reset(): void {
    this.#root.clear();
    this.#all.length = 0;
  }
}
