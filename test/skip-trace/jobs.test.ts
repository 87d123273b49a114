/**
 * Skip trace jobs over HTTP (contract 7.2): creation from JSON or CSV, the 422s that name the item
 * or line, Idempotency-Key, the job, the listing, results as pages and as CSV, cancel, isolation
 * between organizations, and exact credits.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { FakeVendor } from '../support/fake-vendor.js';
import type { HttpResult, TestService } from '../support/harness.js';
import { addCredits, eventually, ledger, setupBillingOrg, uniqueAddress } from '../support/billing.js';
import {
  allResults,
  cancelJob,
  csvRows,
  getJob,
  jobCsv,
  jobEnded,
  jobResults,
  listJobs,
  postCsvJob,
  postJob,
  useJobServices,
} from '../support/jobs.js';

let vendor: FakeVendor;
let service: TestService;

useJobServices([{}], (started) => {
  [service] = started.services;
  vendor = started.vendor;
});

const detailPaths = (result: HttpResult) => (result.body.error.details as { path: string }[]).map((d) => d.path);
const item = (key?: string) => ({ ...(key && { key }), address: uniqueAddress() });
const items = (n: number, prefix = 'k') => Array.from({ length: n }, (_, i) => item(`${prefix}${i}`));

/** A CSV of `rows` addresses with the caller's own `crm_id` column first. */
function crmCsv(rows: number): { csv: string; ids: string[] } {
  const ids = Array.from({ length: rows }, () => randomUUID());
  const lines = ids.map((id) => {
    const a = uniqueAddress();
    return `${id},${a.line1},${a.city},${a.state},${a.zip}`;
  });
  return { csv: ['crm_id,line1,city,state,zip', ...lines].join('\n'), ids };
}

describe('a JSON job', () => {
  it('is accepted (202, Location), runs every item, charges one credit per traced item and lists the results in index order', async () => {
    const org = await setupBillingOrg(service, 10);
    const created = await postJob(service, org.key, {
      items: [
        { key: 'a', address: uniqueAddress() },
        { key: 'b', address: { ...uniqueAddress(), zip: 'nope' } },
        { address: uniqueAddress() },
      ],
    });
    expect(created.status).toBe(202);
    expect(created.headers.get('location')).toBe(`/api/v1/skiptrace/jobs/${created.body.id}`);
    expect(created.body).toEqual({
      id: created.body.id,
      status: 'queued',
      createdAt: expect.any(String),
      counts: { total: 3, pending: 3, recordsFound: 0, noRecordsFound: 0, failed: 0, cancelled: 0, charged: 0 },
    });
    const job = await jobEnded(service, org.key, created.body.id);
    expect(job).toMatchObject({
      status: 'completed',
      webhook: null,
      counts: { total: 3, pending: 0, recordsFound: 2, noRecordsFound: 0, failed: 1, cancelled: 0, charged: 2 },
    });
    expect(Date.parse(job.startedAt)).toBeGreaterThanOrEqual(Date.parse(job.createdAt));
    expect(Date.parse(job.completedAt)).toBeGreaterThanOrEqual(Date.parse(job.startedAt));
    const results = await allResults(service, org.key, created.body.id);
    expect(results.map((r) => [r.index, r.key, r.status])).toEqual([
      [0, 'a', 'records_found'],
      [1, 'b', 'failed'],
      [2, null, 'records_found'],
    ]);
    expect(results[0].persons.length).toBeGreaterThan(0);
    expect(results[1]).toMatchObject({ persons: [], error: { code: 'invalid_request', details: [{ path: 'address.zip' }] } });
    // Each charge is an item's result: its id is a usage row naming the job and the key.
    const { credits, charges } = await ledger(service, org.organizationId);
    expect(credits).toBe(8);
    expect(charges).toEqual([results[0].id, results[2].id].sort());
    const usage = await service.request('/api/v1/skiptrace/usage', { headers: { authorization: `Bearer ${org.key}` } });
    const row = usage.body.requests.find((r: any) => r.id === results[0].id);
    expect(row).toMatchObject({ jobId: created.body.id, key: 'a', charged: true });
  });

  it('answers no_records_found items and charges them too', async () => {
    const org = await setupBillingOrg(service, 5);
    vendor.setMode('unmatched');
    const created = await postJob(service, org.key, { items: items(2) });
    const job = await jobEnded(service, org.key, created.body.id);
    expect(job.counts).toMatchObject({ noRecordsFound: 2, charged: 2 });
    expect((await ledger(service, org.organizationId)).credits).toBe(3);
  });

  it('refuses a body that is not a list, naming the path, and queues nothing', async () => {
    const org = await setupBillingOrg(service, 5);
    const cases: [unknown, string[]][] = [
      [[], ['(body)']],
      [{}, ['items']],
      [{ items: [] }, ['items']],
      [{ items: 'x' }, ['items']],
      [{ items: [item('a'), 'x'] }, ['items[1]']],
      [{ items: [item('a'), item('a')] }, ['items[1].key']],
      [{ items: [{ ...item('a'), extra: 1 }] }, ['items[0].extra']],
      [{ items: [item('bad key!')] }, ['items[0].key']],
      [{ items: [item('a')], colour: 'red' }, ['colour']],
      [{ items: items(10_001) }, ['items']],
      // Wrong JSON types inside an item are the request's shape too, as a batch's (the one list check of the REST layer).
      [{ items: [{ address: { ...uniqueAddress(), zip: 78701 } }] }, ['items[0].address.zip']],
      [{ items: [item('a')], webhookUrl: 7 }, ['webhookUrl']],
    ];
    for (const [body, paths] of cases) {
      const refused = await postJob(service, org.key, body);
      expect(refused.status, JSON.stringify(body).slice(0, 80)).toBe(422);
      expect(refused.body.error.code).toBe('invalid_request');
      expect(detailPaths(refused)).toEqual(paths);
    }
    expect((await postJob(service, org.key, '{"items": [')).status).toBe(422);
    expect((await listJobs(service, org.key)).body.jobs).toEqual([]);
  });

  it('takes 10,000 items', async () => {
    const org = await setupBillingOrg(service, 1);
    const created = await postJob(service, org.key, { items: items(10_000) });
    expect(created.status).toBe(202);
    expect(created.body.counts.total).toBe(10_000);
    const cancelled = await cancelJob(service, org.key, created.body.id);
    expect(cancelled.status).toBe(200);
    await jobEnded(service, org.key, created.body.id);
  });

  it('is 403 for an organization that may not trace and 402 for one without credits, queuing nothing', async () => {
    const broke = await setupBillingOrg(service, 0);
    expect((await postJob(service, broke.key, { items: items(1) })).body.error.code).toBe('insufficient_credits');
    const disabled = await setupBillingOrg(service, 5);
    await service.graphql(`mutation($o: ID!) { setSkipTraceEnabled(organizationId: $o, enabled: false) { id } }`, {
      o: disabled.organizationId,
    });
    const refused = await postJob(service, disabled.key, { items: items(1) });
    expect([refused.status, refused.body.error.code]).toEqual([403, 'feature_unavailable']);
    expect((await listJobs(service, disabled.key)).body.jobs).toEqual([]);
  });
});

describe('a CSV job', () => {
  it('reads a BOM, CRLF, RFC 4180 quoting and mixed-case headers, and keeps the caller’s own columns unchanged', async () => {
    const org = await setupBillingOrg(service, 10);
    const [a, b] = [uniqueAddress(), uniqueAddress()];
    const csv =
      `\ufeffCRM_ID,Key,Line1,CITY,State,zip,notes\r\n` +
      `7,k1,"${a.line1}",${a.city},${a.state},${a.zip},"says ""hi"", twice\r\nsecond line"\r\n` +
      `8,,${b.line1},${b.city},${b.state},${b.zip},\r\n`;
    const created = await postCsvJob(service, org.key, csv);
    expect(created.status).toBe(202);
    await jobEnded(service, org.key, created.body.id);
    const download = await jobCsv(service, org.key, created.body.id);
    expect(download.headers.get('content-type')).toMatch(/^text\/csv/);
    const rows = await csvRows(download.text);
    expect(rows).toHaveLength(3);
    expect(rows[0].slice(0, 10)).toEqual(['CRM_ID', 'Key', 'Line1', 'CITY', 'State', 'zip', 'notes', 'status', 'trace_id', 'error_code']);
    expect(rows[1].slice(0, 8)).toEqual(['7', 'k1', a.line1, a.city, a.state, a.zip, 'says "hi", twice\r\nsecond line', 'records_found']);
    expect(rows[2].slice(0, 8)).toEqual(['8', '', b.line1, b.city, b.state, b.zip, '', 'records_found']);
    const results = await allResults(service, org.key, created.body.id);
    expect(results.map((r) => r.key)).toEqual(['k1', null]);
    expect(rows[1][8]).toBe(results[0].id);
  });

  it('refuses a malformed file naming the line, and queues nothing', async () => {
    const org = await setupBillingOrg(service, 5);
    const a = uniqueAddress();
    const row = `${a.line1},${a.city},${a.state},${a.zip}`;
    const cases: [string, string, RegExp][] = [
      ['line1,city,state\n1 A St,Austin,TX\n', 'line 1', /zip/],
      ['Line1,City,Zip\n', 'line 1', /state/],
      ['', 'line 1', /empty/],
      ['line1,city,state,zip\n', 'line 2', /no data rows/],
      [`line1,city,state,zip\n${row}\n"unclosed,x,y,z\n`, 'line 3', /malformed/],
      [`line1,city,state,zip\n${row}\n${row},extra\n`, 'line 3', /malformed/],
      [`key,line1,city,state,zip\nk1,${row}\nk2,${row}\nk1,${row}\n`, 'line 4', /invalid/],
      [`key,line1,city,state,zip\nnot a key,${row}\n`, 'line 2', /invalid/],
    ];
    for (const [csv, line, message] of cases) {
      const refused = await postCsvJob(service, org.key, csv);
      expect(refused.status, csv).toBe(422);
      expect(refused.body.error.message, csv).toMatch(message);
      expect(detailPaths(refused), csv).toContain(line);
    }
    const tooMany = ['line1,city,state,zip', ...Array.from({ length: 10_001 }, () => row)].join('\n');
    const refused = await postCsvJob(service, org.key, tooMany);
    expect(refused.status).toBe(422);
    expect(detailPaths(refused)).toEqual(['line 10002']);
    expect((await listJobs(service, org.key)).body.jobs).toEqual([]);
  });

  it('takes webhookUrl as a query parameter, refuses unknown ones, and limits the body to 5 MiB', async () => {
    const org = await setupBillingOrg(service, 5);
    const a = uniqueAddress();
    const csv = `line1,city,state,zip\n${a.line1},${a.city},${a.state},${a.zip}\n`;
    expect(detailPaths(await postCsvJob(service, org.key, csv, '?colour=red'))).toEqual(['colour']);
    const big = `line1,city,state,zip,pad\n${a.line1},${a.city},${a.state},${a.zip},${'x'.repeat(5 * 1024 * 1024)}\n`;
    expect((await postCsvJob(service, org.key, big)).status).toBe(413);
    const plain = await service.request('/api/v1/skiptrace/jobs', {
      method: 'POST',
      headers: { authorization: `Bearer ${org.key}`, 'content-type': 'text/plain' },
      body: csv,
    });
    expect([plain.status, plain.body.error.code]).toEqual([415, 'unsupported_media_type']);
    expect(plain.body.error.message).toContain('text/csv');
  });

  it('returns 500 rows with every crm_id in place, as the README shows', async () => {
    const org = await setupBillingOrg(service, 500);
    const { csv, ids } = crmCsv(500);
    const created = await postCsvJob(service, org.key, csv);
    expect(created.status).toBe(202);
    const job = await jobEnded(service, org.key, created.body.id, 60_000);
    expect(job.counts).toMatchObject({ total: 500, recordsFound: 500, charged: 500 });
    const rows = await csvRows((await jobCsv(service, org.key, created.body.id)).text);
    expect(rows).toHaveLength(501);
    expect(rows[0][0]).toBe('crm_id');
    expect(rows.slice(1).map((r) => r[0])).toEqual(ids);
    expect(rows.every((r) => r.length === rows[0].length)).toBe(true);
  });
});

describe('Idempotency-Key', () => {
  it('replays the same job for the same body, counts each submission once against the window, and refuses another body', async () => {
    const org = await setupBillingOrg(service, 20);
    const body = { items: items(15) };
    const first = await postJob(service, org.key, body, { 'idempotency-key': 'job-1' });
    const again = await postJob(service, org.key, body, { 'idempotency-key': 'job-1' });
    expect(again.status).toBe(202);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // One point per request: fifteen items do not spend fifteen.
    expect(Number(first.headers.get('x-ratelimit-remaining')) - Number(again.headers.get('x-ratelimit-remaining'))).toBe(1);
    const other = await postJob(service, org.key, { items: items(1) }, { 'idempotency-key': 'job-1' });
    expect([other.status, other.body.error.code]).toEqual([422, 'idempotency_key_reused']);
    expect((await listJobs(service, org.key)).body.jobs).toHaveLength(1);
    // The items run without spending the window: only this test's own requests do.
    let polls = 0;
    await eventually(async () => {
      polls++;
      return (await getJob(service, org.key, first.body.id)).body.status === 'completed' ? true : undefined;
    });
    const after = await listJobs(service, org.key);
    expect(Number(again.headers.get('x-ratelimit-remaining')) - Number(after.headers.get('x-ratelimit-remaining'))).toBe(3 + polls);
  });
});

describe('reading jobs', () => {
  it('lists the organization’s jobs newest first in keyset pages, and refuses a bad limit or a foreign cursor', async () => {
    const org = await setupBillingOrg(service, 10);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await postJob(service, org.key, { items: items(1) })).body.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: HttpResult = await listJobs(service, org.key, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      expect(page.body.jobs.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.jobs.map((job: any) => job.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    expect((await listJobs(service, org.key, '?limit=0')).status).toBe(422);
    expect((await listJobs(service, org.key, '?limit=201')).status).toBe(422);
    const other = await setupBillingOrg(service, 1);
    await postJob(service, other.key, { items: items(1) });
    await postJob(service, other.key, { items: items(1) });
    const foreign = (await listJobs(service, other.key, '?limit=1')).body.nextCursor;
    const refused = await listJobs(service, org.key, `?cursor=${foreign}`);
    expect([refused.status, detailPaths(refused)]).toEqual([422, ['cursor']]);
  });

  it('answers 404 not_found for another organization’s job and for unknown or malformed ids, on every route', async () => {
    const owner = await setupBillingOrg(service, 5);
    const stranger = await setupBillingOrg(service, 5);
    const { id } = (await postJob(service, owner.key, { items: items(2) })).body;
    for (const [key, jobId] of [
      [stranger.key, id],
      [owner.key, randomUUID()],
      [owner.key, 'not-a-uuid'],
    ]) {
      for (const answer of [
        await getJob(service, key, jobId),
        await jobResults(service, key, jobId),
        await jobCsv(service, key, jobId),
        await cancelJob(service, key, jobId),
      ]) {
        expect([answer.status, answer.body?.error?.code]).toEqual([404, 'not_found']);
      }
    }
    expect((await listJobs(service, stranger.key)).body.jobs).toEqual([]);
    const job = await jobEnded(service, owner.key, id);
    expect(job.counts.cancelled).toBe(0);
  });

  it('pages results in index order (pending items included while the job runs), limit 1 to 1000', async () => {
    const org = await setupBillingOrg(service, 10);
    vendor.setMode('slow');
    vendor.setDelay(400);
    const { id } = (await postJob(service, org.key, { items: items(25) })).body;
    const early = await jobResults(service, org.key, id, '?limit=1000');
    expect(early.body.results).toHaveLength(25);
    expect(early.body.results.some((r: any) => r.status === 'pending' && r.id === null && r.error === null)).toBe(true);
    const walked = await allResults(service, org.key, id, 7);
    expect(walked.map((r) => r.index)).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect((await jobResults(service, org.key, id, '?limit=1001')).status).toBe(422);
    expect((await jobResults(service, org.key, id, '?cursor=abc')).status).toBe(422);
    await cancelJob(service, org.key, id);
    await jobEnded(service, org.key, id);
  });
});

describe('cancel', () => {
  it('cancels items not started (not charged), lets running ones finish, ends the job cancelled; a finished job stays as it is', async () => {
    const org = await setupBillingOrg(service, 100);
    vendor.setMode('slow');
    vendor.setDelay(500);
    const { id } = (await postJob(service, org.key, { items: items(40) })).body;
    await eventually(async () => ((await getJob(service, org.key, id)).body.status === 'running' ? true : undefined));
    const cancelled = await cancelJob(service, org.key, id);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.counts.cancelled).toBeGreaterThan(0);
    const job = await jobEnded(service, org.key, id);
    expect(job.status).toBe('cancelled');
    const { counts } = job;
    expect(counts.pending).toBe(0);
    expect(counts.recordsFound + counts.failed + counts.cancelled).toBe(40);
    expect(counts.charged).toBe(counts.recordsFound);
    const results = await allResults(service, org.key, id);
    expect(results.filter((r) => r.status === 'cancelled')).toHaveLength(counts.cancelled);
    const { credits, charges } = await ledger(service, org.organizationId);
    expect(charges).toHaveLength(counts.charged);
    expect(credits).toBe(100 - counts.charged);
    const again = await cancelJob(service, org.key, id);
    expect(again.body).toEqual(job);
    vendor.reset();
    const done = (await postJob(service, org.key, { items: items(1) })).body.id;
    const completed = await jobEnded(service, org.key, done);
    expect((await cancelJob(service, org.key, done)).body).toEqual(completed);
  });
});

describe('credits', () => {
  it('runs out mid-job exactly: the balance never goes below zero, and the rest fail insufficient_credits', async () => {
    const org = await setupBillingOrg(service, 5);
    const { id } = (await postJob(service, org.key, { items: items(12) })).body;
    const job = await jobEnded(service, org.key, id);
    expect(job.counts).toMatchObject({ recordsFound: 5, failed: 7, charged: 5 });
    const results = await allResults(service, org.key, id);
    const failed = results.filter((r) => r.status === 'failed');
    expect(failed.every((r) => r.error.code === 'insufficient_credits')).toBe(true);
    const { credits, charges } = await ledger(service, org.organizationId);
    expect(credits).toBe(0);
    expect(charges).toEqual(
      results
        .filter((r) => r.status === 'records_found')
        .map((r) => r.id)
        .sort(),
    );
  });

  it('two jobs of one organization racing for the last credits charge exactly the balance', async () => {
    const org = await setupBillingOrg(service, 6);
    const [a, b] = await Promise.all([postJob(service, org.key, { items: items(5) }), postJob(service, org.key, { items: items(5) })]);
    const [jobA, jobB] = await Promise.all([jobEnded(service, org.key, a.body.id), jobEnded(service, org.key, b.body.id)]);
    expect(jobA.counts.charged + jobB.counts.charged).toBe(6);
    expect(jobA.counts.failed + jobB.counts.failed).toBe(4);
    const { credits, charges } = await ledger(service, org.organizationId);
    expect([credits, charges.length]).toEqual([0, 6]);
    await addCredits(service, org.organizationId, 1);
  });
});
