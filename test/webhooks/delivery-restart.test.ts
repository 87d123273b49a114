/**
 * Deliveries live in the database, so they outlive the process: a service stopped between two
 * attempts, or during one (its claim given back on the way out), leaves the delivery to the next
 * start on the same database (PostgreSQL, or the same embedded data dir), which sends it with the
 * same `webhook-id` and signature key, its attempts counted across both.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { webhookStateOf } from '../../src/webhooks/index.js';
import { startService, type TestService } from '../support/harness.js';
import { eventually, startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { enqueue, organizationWithKey, ownDatabase, rotateSecret, type OwnDatabase } from '../support/webhooks.js';

const RETRY_BASE_MS = 1500;

let database: OwnDatabase;
let hook: Receiver;
const running: TestService[] = [];

const start = async () => {
  const service = await startService({
    ...database.env,
    SKIPTRACE_WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_BASE_MS: String(RETRY_BASE_MS),
    WEBHOOK_POLL_INTERVAL_MS: '50',
  });
  running.push(service);
  return service;
};
const stop = async (service: TestService) => {
  running.splice(running.indexOf(service), 1);
  await service.close();
};

beforeAll(async () => {
  database = await ownDatabase({ persistent: true });
  hook = await startReceiver();
});
afterEach(async () => {
  await Promise.all(running.map((service) => service.close()));
  running.length = 0;
});
afterAll(async () => {
  await hook?.close();
  await database?.drop();
});

describe('a delivery across a restart', () => {
  it('is finished by the next start: stopped between attempts and during one, the same webhook-id throughout', async () => {
    const before = await start();
    const org = await organizationWithKey(before);
    const secret = await rotateSecret(before, org.key);
    hook.script([{ status: 500 }, 'hang', { status: 200 }]);
    const subjectId = await enqueue(before, org.organizationId, hook.url, { n: 1 });
    const stateOf = async (service: TestService) => (await webhookStateOf(service.app.services.sql, [subjectId])).get(subjectId);

    await hook.waitFor(1);
    await eventually(
      () => stateOf(before),
      (state) => state?.lastStatus === 500,
    );
    // The retry is under way (the receiver holds it) when the service stops: it does not wait for the answer.
    await hook.waitFor(2, 10_000);
    const stopping = Date.now();
    await stop(before);
    expect(Date.now() - stopping).toBeLessThan(5000);

    const after = await start();
    const received = await hook.waitFor(3, 30_000);
    const state = await eventually(
      () => stateOf(after),
      (current) => current?.deliveredAt != null,
    );
    expect(state).toMatchObject({ attempts: 3, lastStatus: 200 });
    expect(new Set(received.map((request) => request.headers['webhook-id'])).size).toBe(1);
    const last = received[2];
    const headers = {
      'webhook-id': String(last.headers['webhook-id']),
      'webhook-timestamp': String(last.headers['webhook-timestamp']),
      'webhook-signature': String(last.headers['webhook-signature']),
    };
    expect(new Webhook(secret).verify(last.body, headers)).toMatchObject({ type: 'skiptrace.job.completed', data: { n: 1 } });
  });
});
