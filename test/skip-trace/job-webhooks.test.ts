/**
 * A job's webhook (contract 7.2): the URL and the organization's secret are checked when the job
 * is created; one signed POST when the job ends (completed or cancelled) with the job as its data,
 * retried past a receiver's failures, each attempt shown in the job's `webhook`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import type { FakeVendor } from '../support/fake-vendor.js';
import type { TestService } from '../support/harness.js';
import { eventually, setupBillingOrg, uniqueAddress } from '../support/billing.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { rotateSecret } from '../support/webhooks.js';
import { cancelJob, getJob, jobEnded, postCsvJob, postJob, useJobServices } from '../support/jobs.js';

let vendor: FakeVendor;
let service: TestService;
let strict: TestService;
let receiver: Receiver;

// Each on a database of its own: the strict one's webhook worker must not take the other's deliveries.
useJobServices(
  [{ WEBHOOK_POLL_INTERVAL_MS: '50', SKIPTRACE_WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '100' }, {}],
  (started) => {
    [service, strict] = started.services;
    vendor = started.vendor;
  },
);
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver?.close());

const items = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `k${i}`, address: uniqueAddress() }));

describe('a job with webhookUrl', () => {
  it('is refused (422, nothing queued) while the organization has no webhook secret', async () => {
    const org = await setupBillingOrg(service, 5);
    const refused = await postJob(service, org.key, { items: items(1), webhookUrl: receiver.url });
    expect([refused.status, refused.body.error.code]).toEqual([422, 'invalid_request']);
    expect(refused.body.error.message).toContain('no webhook secret');
    expect(refused.body.error.details[0].path).toBe('webhookUrl');
  });

  it('is refused for a private or plain http address unless SKIPTRACE_WEBHOOK_ALLOW_PRIVATE, as CSV too', async () => {
    const org = await setupBillingOrg(strict, 5);
    await rotateSecret(strict, org.key);
    for (const url of [receiver.url, 'https://127.0.0.1/hooks', 'https://169.254.169.254/latest', 'not a url']) {
      const refused = await postJob(strict, org.key, { items: items(1), webhookUrl: url });
      expect([refused.status, refused.body.error.details?.[0]?.path], url).toEqual([422, 'webhookUrl']);
    }
    const a = uniqueAddress();
    const csv = `line1,city,state,zip\n${a.line1},${a.city},${a.state},${a.zip}\n`;
    const refused = await postCsvJob(strict, org.key, csv, `?webhookUrl=${encodeURIComponent('https://10.0.0.1/x')}`);
    expect([refused.status, refused.body.error.details?.[0]?.path]).toEqual([422, 'webhookUrl']);
    expect((await strict.request('/api/v1/skiptrace/jobs', { headers: { authorization: `Bearer ${org.key}` } })).body.jobs).toEqual([]);
  });

  it('gets one signed POST when it completes, retried past two failures, each attempt in its webhook field', async () => {
    const org = await setupBillingOrg(service, 5);
    const secret = await rotateSecret(service, org.key);
    receiver.script([{ status: 500 }, { status: 502 }, { status: 204 }]);
    const before = receiver.received.length;
    const created = await postJob(service, org.key, { items: items(2), webhookUrl: receiver.url });
    expect(created.status).toBe(202);
    const running = await getJob(service, org.key, created.body.id);
    expect(running.body.webhook).toMatchObject({ url: receiver.url, deliveredAt: null });
    const job = await jobEnded(service, org.key, created.body.id);
    await receiver.waitFor(before + 3);
    const delivered = await eventually(async () => {
      const now = (await getJob(service, org.key, created.body.id)).body;
      return now.webhook.deliveredAt ? now : undefined;
    }, 15_000);
    expect(delivered.webhook).toMatchObject({ url: receiver.url, attempts: 3, lastStatus: 204 });
    const requests = receiver.received.slice(before);
    expect(new Set(requests.map((r) => r.headers['webhook-id'])).size).toBe(1);
    const payload = new Webhook(secret).verify(requests[2].body, {
      'webhook-id': String(requests[2].headers['webhook-id']),
      'webhook-timestamp': String(requests[2].headers['webhook-timestamp']),
      'webhook-signature': String(requests[2].headers['webhook-signature']),
    }) as any;
    expect(payload.type).toBe('skiptrace.job.completed');
    expect(payload.data).toMatchObject({ id: job.id, status: 'completed', counts: job.counts, completedAt: job.completedAt });
  });

  it('gets skiptrace.job.cancelled when cancelled', async () => {
    const org = await setupBillingOrg(service, 50);
    await rotateSecret(service, org.key);
    vendor.setMode('slow');
    vendor.setDelay(300);
    try {
      const before = receiver.received.length;
      const created = await postJob(service, org.key, { items: items(30), webhookUrl: receiver.url });
      await cancelJob(service, org.key, created.body.id);
      const job = await jobEnded(service, org.key, created.body.id);
      expect(job.status).toBe('cancelled');
      const [request] = (await receiver.waitFor(before + 1)).slice(before);
      expect(JSON.parse(request.body)).toMatchObject({ type: 'skiptrace.job.cancelled', data: { id: job.id, status: 'cancelled' } });
    } finally {
      vendor.reset();
    }
  });
});
