import type { Counter, Histogram, LabelValues } from 'prom-client';

/** PromQL's `increase()` misses the first event of a series born at 1, so series exist at 0 from start-up. */
export function startAtZero<T extends string, M extends Counter<T> | Histogram<T>>(metric: M, labelSets: Iterable<LabelValues<T>>): M {
  for (const labels of labelSets) {
    if ('zero' in metric) metric.zero(labels);
    else metric.inc(labels, 0);
  }
  return metric;
}

/** Every combination of the given label values. */
export function labelSets<T extends string>(values: Record<T, readonly string[]>): LabelValues<T>[] {
  return Object.entries<readonly string[]>(values).reduce<LabelValues<T>[]>(
    (sets, [name, options]) => sets.flatMap((set) => options.map((value) => ({ ...set, [name]: value }))),
    [{}],
  );
}
