/**
 * The job worker's claims (job-worker.ts), on a queue faked behind its `Db`: a claim fills several
 * free slots at once rather than one per finished item, never runs more than its concurrency, runs
 * every item once, and does not leave slots idle for long when items are slow.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { Db, Statement } from '../../src/infra/database/sql.js';
import { startJobWorker } from '../../src/skip-trace/jobs/job-worker.js';
import type { ClaimedItem } from '../../src/skip-trace/jobs/jobs.data.js';

/** A queue of `items` items as the claim statement returns them; every claim's limit is kept. */
function fakeQueue(items: number) {
  let next = 0;
  const limits: number[] = [];
  const db: Db = {
    rows: async <T>(statement: Statement) => {
      if (!statement.text.includes('for update skip locked')) return [] as T[];
      // The claim's first bound value is its limit.
      const limit = statement.values[0] as number;
      limits.push(limit);
      const rows = [];
      for (; next < items && rows.length < limit; next++)
        rows.push({ job_id: 'job', index: next, organization_id: 'org', key_id: 'key', key: null, input: {}, attempts: 1 });
      return rows as T[];
    },
    run: async () => 0,
    execute: async () => [] as never,
  };
  return { db, limits };
}

/** Runs `items` items of `itemMs` each through a worker of `concurrency`: claims' limits, items run, peak at once, seconds. */
async function runQueue(items: number, itemMs: () => number, concurrency = 10) {
  const { db, limits } = fakeQueue(items);
  const ran: number[] = [];
  let running = 0;
  let peak = 0;
  const started = performance.now();
  let allDone: () => void;
  const done = new Promise<void>((resolve) => (allDone = resolve));
  const worker = startJobWorker({
    db,
    log: pino({ level: 'silent' }),
    concurrency,
    leaseMs: 60_000,
    pollMs: 10,
    runItem: async (item: ClaimedItem) => {
      peak = Math.max(peak, ++running);
      await new Promise((resolve) => setTimeout(resolve, itemMs()));
      running--;
      ran.push(item.index);
      if (ran.length === items) allDone();
    },
  });
  await done;
  const seconds = (performance.now() - started) / 1000;
  await worker.stop();
  return { limits, ran, peak, seconds };
}

describe('the job worker’s claims', () => {
  it('claim several free slots at once while items run: far fewer claims than items, each item run once', async () => {
    const { limits, ran, peak } = await runQueue(300, () => 1 + Math.random() * 4);
    expect([...ran].sort((a, b) => a - b)).toEqual(Array.from({ length: 300 }, (_, i) => i));
    expect(peak).toBeLessThanOrEqual(10);
    const filling = limits.filter((limit) => limit > 0);
    // One claim per finished item would be about 300; claims wait for half the slots (or 25 ms).
    expect(filling.length).toBeLessThan(100);
    expect(filling.filter((limit) => limit >= 5).length).toBeGreaterThan(filling.length / 2);
  });

  it('do not leave slots idle long when items are slow', async () => {
    // 40 items of 100 ms, 10 at a time: 0.4 s with every slot busy; a slot waits at most 25 ms to be refilled.
    const { ran, seconds } = await runQueue(40, () => 100);
    expect(ran).toHaveLength(40);
    expect(seconds).toBeLessThan(0.4 + 0.05 + 4 * 0.025 + 0.3);
  });
});
