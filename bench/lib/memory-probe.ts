/**
 * Preloaded into a server under study (`node --import ./bench/lib/memory-probe.ts …`): on SIGUSR2
 * it appends the process's memory breakdown as one JSON line to $MEMORY_PROBE_FILE. With
 * `--expose-gc` it also reports the heap after a full collection, which tells live data (a leak)
 * from garbage the collector has not yet reclaimed.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';

const mb = (n: number) => Math.round(n / 2 ** 20);

process.on('SIGUSR2', () => {
  const usage = process.memoryUsage();
  const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, mb(s.space_used_size)]));
  const line: Record<string, unknown> = {
    rss: mb(usage.rss),
    heapTotal: mb(usage.heapTotal),
    heapUsed: mb(usage.heapUsed),
    external: mb(usage.external),
    arrayBuffers: mb(usage.arrayBuffers),
    spaces,
    residentMiB: residentByMapping(),
  };
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    const after = process.memoryUsage();
    line.afterFullGc = { rss: mb(after.rss), heapTotal: mb(after.heapTotal), heapUsed: mb(after.heapUsed) };
  }
  appendFileSync(process.env.MEMORY_PROBE_FILE ?? '/tmp/memory-probe.jsonl', `${JSON.stringify(line)}\n`);
});

/** Resident memory by mapping (from /proc/self/smaps): V8's heap and native allocations are both anonymous, so large anonymous regions are listed by size. */
export function residentByMapping(): Record<string, number> {
  const totals: Record<string, number> = {};
  let name = '';
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) name = header[1] || '[anon]';
    else if (line.startsWith('Rss:')) totals[name] = (totals[name] ?? 0) + Number(line.split(/\s+/)[1]) / 1024;
  }
  return Object.fromEntries(
    Object.entries(totals)
      .filter(([, mb]) => mb >= 1)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8)
      .map(([k, v]) => [k.replace(/^.*node_modules\//, ''), Math.round(v)]),
  );
}
