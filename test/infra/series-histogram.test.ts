/**
 * `SeriesHistogram` stands in for prom-client's `Histogram` on the request path: the same
 * observations must print the same Prometheus text through a registry.
 */
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { SeriesHistogram } from '../../src/infra/series-histogram.js';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const LABELS = ['route', 'method', 'status'] as const;

function both() {
  const expected = new Registry();
  const actual = new Registry();
  const reference = new Histogram({
    name: 'x_seconds',
    help: 'A "help" \\ text',
    labelNames: LABELS,
    buckets: BUCKETS,
    registers: [expected],
  });
  const series = new SeriesHistogram('x_seconds', 'A "help" \\ text', LABELS, BUCKETS, actual);
  const observe = (value: number, ...labels: string[]) => {
    reference.labels(...labels).observe(value);
    series.observe(value, ...labels);
  };
  return { expected, actual, observe, reset: () => (reference.reset(), series.reset()) };
}

describe('SeriesHistogram', () => {
  it('prints what prom-client prints for the same observations: bounds inclusive, above every bound, escaped labels, first-seen order', async () => {
    const { expected, actual, observe } = both();
    const observations: [number, string, string, string][] = [
      [0.003, '/a', 'GET', '200'],
      [0.005, '/a', 'GET', '200'],
      [0.0051, '/a', 'GET', '200'],
      [31, '/a', 'GET', '200'],
      [0.2, '/b"\\\n', 'POST', '422'],
      [0.01, '/a', 'POST', '200'],
      [10, '/b"\\\n', 'POST', '422'],
      [0, '/a', 'GET', '500'],
    ];
    for (let round = 0; round < 50; round++) for (const [value, ...labels] of observations) observe(value * (1 + round / 100), ...labels);
    const text = await actual.metrics();
    expect(text).toBe(await expected.metrics());
    expect(text).toContain('x_seconds_bucket{le="+Inf",route="/a",method="GET",status="200"} 200');
  });

  it('prints nothing but its help and type before the first observation, and again after a reset', async () => {
    const { expected, actual, observe, reset } = both();
    expect(await actual.metrics()).toBe(await expected.metrics());
    observe(0.1, '/a', 'GET', '200');
    reset();
    expect(await actual.metrics()).toBe(await expected.metrics());
    expect(await actual.metrics()).not.toContain('x_seconds_count');
  });
});
