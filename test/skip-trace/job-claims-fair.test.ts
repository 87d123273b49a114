/**
 * Claims filling several slots at once (job-worker.ts at concurrency 6, a full claim on start and
 * after a stall) stay fair across organizations: a second organization's few items are claimed in
 * the next claim, not after the first organization's long job.
 */
import { describe, expect, it } from 'vitest';
import type { FakeVendor } from '../support/fake-vendor.js';
import type { TestService } from '../support/harness.js';
import { longAndShortJobs, useJobServices } from '../support/jobs.js';

let vendor: FakeVendor;
let service: TestService;

useJobServices([{ SKIPTRACE_JOB_CONCURRENCY: '6' }], (started) => {
  [service] = started.services;
  vendor = started.vendor;
});

describe('coalesced claims', () => {
  it("still let another organization's few items through before one organization's long job", async () => {
    const { shortDone, longThen, longEnded } = await longAndShortJobs(service, vendor, { long: 150, short: 6, delayMs: 150 });
    expect(shortDone.counts).toMatchObject({ recordsFound: 6, pending: 0, charged: 6 });
    // Six at a time, 150 ms each: the long job is far from done when the short one is.
    expect(longThen.counts.pending).toBeGreaterThan(100);
    // Every item settled once: charged ones are the traced ones, the rest cancelled.
    expect(longEnded.counts.charged).toBe(longEnded.counts.recordsFound);
    expect(longEnded.counts.recordsFound + longEnded.counts.cancelled).toBe(150);
  });
});
