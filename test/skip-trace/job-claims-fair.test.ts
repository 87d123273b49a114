/**
 * Claims gathered several slots at a time (job-worker.ts: concurrency 6 claims 3 or more at once
 * while items run) stay fair across organizations: a second organization's few items are claimed
 * in the next claim, not after the first organization's long job.
 */
import { describe, expect, it } from 'vitest';
import type { FakeVendor } from '../support/fake-vendor.js';
import type { TestService } from '../support/harness.js';
import { setupBillingOrg, uniqueAddress } from '../support/billing.js';
import { getJob, jobEnded, postJob, useJobServices } from '../support/jobs.js';

let vendor: FakeVendor;
let service: TestService;

useJobServices([{ SKIPTRACE_JOB_CONCURRENCY: '6' }], (started) => {
  [service] = started.services;
  vendor = started.vendor;
});

const items = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `k${i}`, address: uniqueAddress() }));

describe('coalesced claims', () => {
  it("still let another organization's few items through before one organization's long job", async () => {
    vendor.setMode('slow');
    vendor.setDelay(150);
    try {
      const big = await setupBillingOrg(service, 200);
      const small = await setupBillingOrg(service, 10);
      const long = (await postJob(service, big.key, { items: items(150) })).body.id;
      const short = (await postJob(service, small.key, { items: items(6) })).body.id;
      const done = await jobEnded(service, small.key, short);
      expect(done.counts).toMatchObject({ recordsFound: 6, pending: 0, charged: 6 });
      // Six at a time, 150 ms each: the long job is far from done when the short one is.
      const other = (await getJob(service, big.key, long)).body;
      expect(other.counts.pending).toBeGreaterThan(100);
      await service.request(`/api/v1/skiptrace/jobs/${long}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${big.key}` } });
      const cancelled = await jobEnded(service, big.key, long);
      // Every item settled once: charged ones are the traced ones, the rest cancelled.
      expect(cancelled.counts.charged).toBe(cancelled.counts.recordsFound);
      expect(cancelled.counts.recordsFound + cancelled.counts.cancelled).toBe(150);
    } finally {
      vendor.reset();
    }
  });
});
