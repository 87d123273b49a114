/**
 * Preloaded into a server under study (`node --import ./bench/lib/memory-probe.ts …`): on SIGUSR2
 * it appends the process's memory breakdown as one JSON line to $MEMORY_PROBE_FILE.
 */
import { appendFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';

process.on('SIGUSR2', () => {
  const mb = (n: number) => Math.round(n / 2 ** 20);
  const usage = process.memoryUsage();
  const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, mb(s.space_used_size)]));
  const line = { rss: mb(usage.rss), heapTotal: mb(usage.heapTotal), heapUsed: mb(usage.heapUsed), external: mb(usage.external), arrayBuffers: mb(usage.arrayBuffers), spaces };
  appendFileSync(process.env.MEMORY_PROBE_FILE ?? '/tmp/memory-probe.jsonl', `${JSON.stringify(line)}\n`);
});
