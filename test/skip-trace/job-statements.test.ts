/**
 * The statements a job's items send (job-items.ts, job-worker.ts): the opening reads of the items
 * a claim started go as one statement, and the charges of the items ready together (each with its
 * own result) as one more, so a job of cached traces sends fewer of either than it has items.
 * Counted on the statements the service's own connection to the database sends.
 */
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { FakeVendor } from '../support/fake-vendor.js';
import type { TestService } from '../support/harness.js';
import { ledger, setupBillingOrg, uniqueAddress } from '../support/billing.js';
import { allResults, jobEnded, postJob, useJobServices } from '../support/jobs.js';

let vendor: FakeVendor;
let service: TestService;

useJobServices([{}], (started) => {
  [service] = started.services;
  vendor = started.vendor;
});

/** Records the text and values of every statement the service sends until `stop` is called. */
async function recordStatements(target: TestService): Promise<{ sent: { text: string; values: unknown[] }[]; stop: () => void }> {
  const sent: { text: string; values: unknown[] }[] = [];
  const connection = target.app.services.orm.em.getConnection();
  if (process.env.DATABASE_URL) {
    const pool = (await connection.getNativeClient()) as pg.Pool & { query: (...args: unknown[]) => unknown };
    const query = pool.query;
    pool.query = function (this: unknown, ...args: unknown[]) {
      const config = args[0] as { text?: string; values?: unknown[] } | string;
      if (typeof config === 'object' && config.text) sent.push({ text: config.text, values: config.values ?? [] });
      return query.apply(pool, args as Parameters<typeof query>);
    } as typeof pool.query;
    return { sent, stop: () => (pool.query = query) };
  }
  const client = connection.getClient() as unknown as {
    executeQuery: (compiled: { sql: string; parameters: readonly unknown[] }) => Promise<unknown>;
  };
  const executeQuery = client.executeQuery;
  client.executeQuery = function (compiled) {
    sent.push({ text: compiled.sql, values: [...compiled.parameters] });
    return executeQuery.call(client, compiled);
  };
  return { sent, stop: () => (client.executeQuery = executeQuery) };
}

const isBatchedOpen = (text: string) => text.includes('jsonb_to_recordset') && text.includes('from skip_trace_results');
const isSingleOpen = (text: string) => text.includes('left join (select status, persons from skip_trace_results');
const isCharge = (text: string) => text.includes('insert into skip_trace_credit_ledger') && text.includes('jsonb_to_recordset');

describe("a job's statements", () => {
  it('one opening read for the items a claim started, one charge statement for the items ready together: fewer than the items', async () => {
    const org = await setupBillingOrg(service, 100);
    const addresses = Array.from({ length: 20 }, () => uniqueAddress());
    // Every address traced (and cached) first.
    const warm = await postJob(service, org.key, { items: addresses.map((address) => ({ address })) });
    expect((await jobEnded(service, org.key, warm.body.id)).counts.recordsFound).toBe(20);
    expect(vendor.calls).toHaveLength(20);

    const recording = await recordStatements(service);
    const job = await postJob(service, org.key, { items: [...addresses, ...addresses].map((address) => ({ address })) });
    const ended = await jobEnded(service, org.key, job.body.id);
    recording.stop();

    expect(ended.counts).toMatchObject({ recordsFound: 40, charged: 40, pending: 0 });
    expect(vendor.calls).toHaveLength(20);
    const results = await allResults(service, org.key, job.body.id);
    expect(results.map((result) => result.status)).toEqual(Array(40).fill('records_found'));
    expect((await ledger(service, org.organizationId)).credits).toBe(40);

    const { sent } = recording;
    expect(sent.filter((s) => isSingleOpen(s.text))).toHaveLength(0);
    const opens = sent.filter((s) => isBatchedOpen(s.text));
    // Each batched read names its items: together, every item once.
    const opened = opens.flatMap((s) => JSON.parse(s.values[0] as string) as { cache_key: string }[]);
    expect(opened).toHaveLength(40);
    expect(opens.length).toBeLessThan(40);
    // Likewise the charges: each item charged once, items ready together in one statement.
    const charges = sent.filter((s) => isCharge(s.text));
    const charged = charges.flatMap((s) => JSON.parse(s.values[0] as string) as { index: number }[]);
    expect(charged.map((c) => c.index).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(charges.length).toBeLessThan(40);
  });
});
