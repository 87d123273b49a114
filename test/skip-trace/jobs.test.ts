/**
 * Skip trace jobs over HTTP (contract 7.2): creation from JSON or CSV, the 422s that name the item
 * or line, the job, the listing, results as pages and as CSV, cancel, isolation between
 * organizations, and exact credits.
 */
import { describe, expect, it } from 'vitest';
import type { FakeVendor } from '../support/fake-vendor.js';
import type { TestService } from '../support/harness.js';
import { ledger, setupBillingOrg, uniqueAddress, useServiceWithVendor } from '../support/billing.js';
import { allResults, csvRows, getJob, jobCsv, jobEnded, postCsvJob, postJob } from '../support/jobs.js';

let _vendor: FakeVendor;
let service: TestService;

useServiceWithVendor({ SKIPTRACE_JOB_POLL_MS: '50' }, (started) => ({ service, vendor: _vendor } = started));

describe('a JSON job', () => {
  it('is accepted (202, Location), runs every item, charges one credit per traced item and lists the results in index order', async () => {
    const org = await setupBillingOrg(service, 10);
    const items = [
      { key: 'a', address: uniqueAddress() },
      { key: 'b', address: { ...uniqueAddress(), zip: 'nope' } },
      { address: uniqueAddress() },
    ];
    const created = await postJob(service, org.key, { items });
    expect(created.status).toBe(202);
    expect(created.headers.get('location')).toBe(`/api/v1/skiptrace/jobs/${created.body.id}`);
    expect(created.body).toMatchObject({ status: 'queued', counts: { total: 3, pending: 3, charged: 0 } });
    const job = await jobEnded(service, org.key, created.body.id);
    expect(job).toMatchObject({ status: 'completed', counts: { total: 3, pending: 0, recordsFound: 2, failed: 1, charged: 2 } });
    const results = await allResults(service, org.key, created.body.id);
    expect(results.map((r) => [r.index, r.key, r.status])).toEqual([
      [0, 'a', 'records_found'],
      [1, 'b', 'failed'],
      [2, null, 'records_found'],
    ]);
    expect(results[1].error).toMatchObject({ code: 'invalid_request', details: [{ path: 'address.zip' }] });
    expect((await ledger(service, org.organizationId)).credits).toBe(8);
    const csv = await jobCsv(service, org.key, created.body.id);
    expect(csv.status).toBe(200);
    const rows = await csvRows(csv.text);
    expect(rows[0].slice(0, 13)).toEqual([
      'key',
      'line1',
      'line2',
      'city',
      'state',
      'zip',
      'actor_type',
      'first_name',
      'last_name',
      'actor_name',
      'status',
      'trace_id',
      'error_code',
    ]);
    expect(rows).toHaveLength(4);
  });
});

describe('a CSV job', () => {
  it('keeps the caller’s own columns', async () => {
    const org = await setupBillingOrg(service, 10);
    const a = uniqueAddress();
    const csv = `\ufeffCRM_ID,Line1,CITY,State,zip,notes\r\n7,${a.line1},${a.city},${a.state},${a.zip},"says ""hi"", twice\nsecond line"\r\n`;
    const created = await postCsvJob(service, org.key, csv);
    expect(created.status).toBe(202);
    await jobEnded(service, org.key, created.body.id);
    const rows = await csvRows((await jobCsv(service, org.key, created.body.id)).text);
    expect(rows[0].slice(0, 6)).toEqual(['CRM_ID', 'Line1', 'CITY', 'State', 'zip', 'notes']);
    expect(rows[1].slice(0, 7)).toEqual(['7', a.line1, a.city, a.state, a.zip, 'says "hi", twice\nsecond line', 'records_found']);
    expect((await getJob(service, org.key, created.body.id)).body.counts.charged).toBe(1);
  });
});
