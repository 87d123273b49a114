import type { Counter, Histogram, LabelValues } from 'prom-client';

/**
 * Creates a labelled metric's series for each of its known label sets, at 0, so that they exist
 * from start-up: PromQL's `increase()` and `rate()` see the first event only when the series was
 * already there before it (a series born at 1 reads as no increase).
 */
export function startAtZero<T extends string, M extends Counter<T> | Histogram<T>>(metric: M, labelSets: Iterable<LabelValues<T>>): M {
  for (const labels of labelSets) {
    if ('zero' in metric) metric.zero(labels);
    else metric.inc(labels, 0);
  }
  return metric;
}

/** Every combination of the given label values: `{a: [1, 2], b: [x]}` → `{a: 1, b: x}`, `{a: 2, b: x}`. */
export function labelSets<T extends string>(values: Record<T, readonly string[]>): LabelValues<T>[] {
  return Object.entries<readonly string[]>(values).reduce<LabelValues<T>[]>(
    (sets, [name, options]) => sets.flatMap((set) => options.map((value) => ({ ...set, [name]: value }))),
    [{}],
  );
}
