/**
 * Jobs as they run (contract 7.2): items fairly across organizations, the progress subscription
 * (GraphQL over SSE), and the job fields on `/graphql`.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { FakeVendor } from '../support/fake-vendor.js';
import type { TestService } from '../support/harness.js';
import { setupBillingOrg, uniqueAddress } from '../support/billing.js';
import { openStream, type SseStream } from '../support/sse-client.js';
import { jobEnded, longAndShortJobs, postJob, useJobServices } from '../support/jobs.js';

let vendor: FakeVendor;
let service: TestService;
const streams: SseStream[] = [];

useJobServices([{ SKIPTRACE_JOB_CONCURRENCY: '2' }], (started) => {
  [service] = started.services;
  vendor = started.vendor;
});
afterAll(() => {
  for (const stream of streams) stream.close();
});

const items = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `k${i}`, address: uniqueAddress() }));

const WATCH = `subscription($id: ID!) { watchSkipTraceJob(id: $id) {
  id status counts { total pending recordsFound noRecordsFound failed cancelled charged } } }`;

async function watch(key: string, id: string) {
  const stream = await openStream(`${service.baseUrl}/graphql`, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' },
    body: { query: WATCH, variables: { id } },
  });
  streams.push(stream);
  return stream;
}

describe('fairness', () => {
  it("one organization's long job does not hold back another's few items", async () => {
    const { shortDone, longThen } = await longAndShortJobs(service, vendor, { long: 60, short: 4, delayMs: 150 });
    expect(shortDone.counts).toMatchObject({ recordsFound: 4, pending: 0 });
    // Two at a time, 150 ms each: the long job is far from done when the short one is.
    expect(longThen.counts.pending).toBeGreaterThan(30);
  });
});

describe('watchSkipTraceJob', () => {
  it('sends the job as its counts change (at most every 250 ms) and when it ends, then completes', async () => {
    vendor.setMode('slow');
    vendor.setDelay(100);
    try {
      const org = await setupBillingOrg(service, 20);
      const { id } = (await postJob(service, org.key, { items: items(12) })).body;
      const stream = await watch(org.key, id);
      expect(stream.status).toBe(200);
      await stream.ended;
      const nexts = stream.events.filter((e) => e.event === 'next');
      const jobs = nexts.map((e) => JSON.parse(e.data).data.watchSkipTraceJob);
      expect(jobs.length).toBeGreaterThan(2);
      expect(jobs[jobs.length - 1]).toMatchObject({ id, status: 'completed', counts: { pending: 0, recordsFound: 12, charged: 12 } });
      // Each event says something new, and the pending count only goes down.
      for (let i = 1; i < jobs.length; i++) {
        expect(JSON.stringify(jobs[i])).not.toBe(JSON.stringify(jobs[i - 1]));
        expect(jobs[i].counts.pending).toBeLessThanOrEqual(jobs[i - 1].counts.pending);
      }
      for (let i = 2; i < nexts.length; i++) expect(nexts[i].at - nexts[i - 1].at).toBeGreaterThan(200);
      expect(stream.events[stream.events.length - 1].event).toBe('complete');
    } finally {
      vendor.reset();
    }
  });

  it("is NOT_FOUND for another organization's job, and ends at once for a finished one", async () => {
    const owner = await setupBillingOrg(service, 5);
    const stranger = await setupBillingOrg(service, 5);
    const { id } = (await postJob(service, owner.key, { items: items(1) })).body;
    const job = await jobEnded(service, owner.key, id);
    const refused = await watch(stranger.key, id);
    await refused.ended;
    // Refused as it opens: an error answer, or an error event, never the job.
    expect(JSON.stringify([refused.status, refused.body, refused.events])).toContain('NOT_FOUND');
    expect(JSON.stringify(refused.events)).not.toContain('watchSkipTraceJob":{');
    const finished = await watch(owner.key, id);
    await finished.ended;
    const nexts = finished.events.filter((e) => e.event === 'next').map((e) => JSON.parse(e.data).data.watchSkipTraceJob);
    expect(nexts).toEqual([{ id, status: 'completed', counts: job.counts }]);
  });
});

describe('the job fields on /graphql', () => {
  it('create from items or csv (exactly one), read, list, results and cancel, with the skip trace key', async () => {
    const org = await setupBillingOrg(service, 10);
    const gql = (query: string, variables: Record<string, unknown>) => service.graphql(query, variables, org.key);
    const create = `mutation($items: [SkipTraceItemInput!], $csv: String) { createSkipTraceJob(items: $items, csv: $csv) { job { id status counts { total } } replayed } }`;
    const a = uniqueAddress();
    const fromCsv = await gql(create, { csv: `Key,LINE1,city,state,zip,crm\nx1,${a.line1},${a.city},${a.state},${a.zip},42\n` });
    expect(fromCsv.body.data.createSkipTraceJob).toMatchObject({ job: { status: 'queued', counts: { total: 1 } }, replayed: false });
    const fromItems = await gql(create, { items: [...items(2), { key: 'bad', address: { ...uniqueAddress(), state: 'ZZ' } }] });
    const id = fromItems.body.data.createSkipTraceJob.job.id;
    for (const variables of [{}, { items: items(1), csv: 'line1,city,state,zip\n' }]) {
      const refused = await gql(create, variables);
      expect(refused.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    }
    const duplicate = await gql(create, {
      items: [
        { key: 'a', address: uniqueAddress() },
        { key: 'a', address: uniqueAddress() },
      ],
    });
    expect(duplicate.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT' });
    await jobEnded(service, org.key, id);
    const read = await gql(
      `query($id: ID!) { skipTraceJob(id: $id) { status counts { recordsFound failed } }
        skipTraceJobResults(id: $id, limit: 2) { results { index key status error { code details { path } } } nextCursor }
        skipTraceJobs(limit: 1) { jobs { id } nextCursor } }`,
      { id },
    );
    expect(read.body.data.skipTraceJob).toEqual({ status: 'completed', counts: { recordsFound: 2, failed: 1 } });
    expect(read.body.data.skipTraceJobResults.results.map((r: any) => r.index)).toEqual([0, 1]);
    const next = await gql(
      `query($id: ID!, $c: String) { skipTraceJobResults(id: $id, cursor: $c) { results { key status error { code details { path } } } } }`,
      {
        id,
        c: read.body.data.skipTraceJobResults.nextCursor,
      },
    );
    expect(next.body.data.skipTraceJobResults.results).toEqual([
      { key: 'bad', status: 'failed', error: { code: 'invalid_request', details: [{ path: 'address.state' }] } },
    ]);
    expect(read.body.data.skipTraceJobs.jobs).toEqual([{ id }]);
    const stranger = await setupBillingOrg(service, 1);
    const hidden = await service.graphql(`query($id: ID!) { skipTraceJob(id: $id) { id } }`, { id }, stranger.key);
    expect(hidden.body.errors[0].extensions.code).toBe('NOT_FOUND');
    const cancelled = await gql(`mutation($id: ID!) { cancelSkipTraceJob(id: $id) { status } }`, { id });
    expect(cancelled.body.data.cancelSkipTraceJob.status).toBe('completed');
  });
});
