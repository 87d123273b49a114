/**
 * Signed, durable webhook deliveries against loopback receivers (SKIPTRACE_WEBHOOK_ALLOW_PRIVATE=true):
 * Standard Webhooks signatures verified with the `standardwebhooks` library, one `webhook-id`
 * across retries, exponential backoff from WEBHOOK_RETRY_BASE_MS, every attempt recorded,
 * redirects never followed, a receiver that never answers given up on after the timeout, a claim
 * of a dead process retried once its lease runs out, organizations' secrets apart.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../support/harness.js';
import { eventually, startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { deliveryRow, enqueue, organizationWithKey, ownDatabase, rotateSecret, type OwnDatabase } from '../support/webhooks.js';
import { webhookStateOf, type Resolve } from '../../src/webhooks/index.js';
import { systemResolve } from '../../src/webhooks/webhook-url.js';

const RETRY_BASE_MS = 400;
const TIMEOUT_MS = 1000;

let database: OwnDatabase;
let service: TestService;
let receivers: Receiver[] = [];
/** The service's log lines (at debug level): what a delivery writes there. */
const logLines: string[] = [];
const logCapture = new Writable({
  write(chunk, _encoding, done) {
    logLines.push(...String(chunk).split('\n').filter(Boolean));
    done();
  },
});

/** Names only this test's resolver knows (the system's does not): a delivery to one connects where it resolved. */
const resolve: Resolve = async (hostname) => (hostname === 'hooks.internal.test' ? ['127.0.0.1'] : systemResolve(hostname));

beforeAll(async () => {
  database = await ownDatabase();
  service = await startService(
    {
      ...database.env,
      SKIPTRACE_WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_BASE_MS: String(RETRY_BASE_MS),
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      WEBHOOK_POLL_INTERVAL_MS: '50',
      LOG_LEVEL: 'debug',
    },
    { app: { webhookResolve: resolve }, logDestination: logCapture },
  );
});
afterAll(async () => {
  await service?.close();
  await database?.drop();
});
afterEach(async () => {
  await Promise.all(receivers.map((receiver) => receiver.close()));
  receivers = [];
});

async function receiver(): Promise<Receiver> {
  const started = await startReceiver();
  receivers.push(started);
  return started;
}

const stateOf = async (subjectId: string) => (await webhookStateOf(service.app.services.sql, [subjectId])).get(subjectId);

/** The headers a receiver got, as `standardwebhooks` reads them. */
const signatureHeaders = (headers: Record<string, unknown>) => ({
  'webhook-id': String(headers['webhook-id']),
  'webhook-timestamp': String(headers['webhook-timestamp']),
  'webhook-signature': String(headers['webhook-signature']),
});

describe('a delivery to a receiver that fails twice before accepting', () => {
  it('is retried with the same webhook-id, signed each time, after the backoff, every attempt recorded', async () => {
    const org = await organizationWithKey(service);
    const secret = await rotateSecret(service, org.key);
    const hook = await receiver();
    // A long body on the first failure: only an excerpt of it is kept.
    hook.script([{ status: 500, body: 'x'.repeat(10_000) }, { status: 503 }, { status: 204 }]);
    const data = { id: randomUUID(), status: 'completed', counts: { total: 2 } };
    const subjectId = await enqueue(service, org.organizationId, hook.url, data);

    await hook.waitFor(1);
    const afterFirst = await eventually(
      () => stateOf(subjectId),
      (state) => state?.lastStatus === 500,
    );
    expect(afterFirst).toMatchObject({ url: hook.url, attempts: 1, deliveredAt: null });
    expect((await deliveryRow(service, subjectId)).last_error.length).toBeLessThanOrEqual(200);

    const received = await hook.waitFor(3);
    const state = await eventually(
      () => stateOf(subjectId),
      (current) => current?.deliveredAt != null,
    );
    expect(state).toMatchObject({ url: hook.url, attempts: 3, lastStatus: 204 });
    expect(state!.lastAttemptAt!.getTime()).toBeGreaterThanOrEqual(received[2].at - 5000);

    const ids = received.map((request) => request.headers['webhook-id']);
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toBe((await deliveryRow(service, subjectId)).id);
    const verifier = new Webhook(secret);
    for (const request of received) {
      expect(request.headers['content-type']).toBe('application/json');
      const payload = verifier.verify(request.body, signatureHeaders(request.headers)) as Record<string, unknown>;
      expect(payload).toEqual({ type: 'skiptrace.job.completed', timestamp: expect.any(String), data });
      expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
      expect(Math.abs(Number(request.headers['webhook-timestamp']) - request.at / 1000)).toBeLessThan(5);
    }
    // The event's body is the same on every attempt (its timestamp is the event's, not the attempt's).
    expect(new Set(received.map((request) => request.body)).size).toBe(1);
    // Backoff: the first retry after the base, the second after twice the base.
    expect(received[1].at - received[0].at).toBeGreaterThanOrEqual(RETRY_BASE_MS - 50);
    expect(received[2].at - received[1].at).toBeGreaterThanOrEqual(2 * RETRY_BASE_MS - 50);

    await new Promise((resolve) => setTimeout(resolve, 3 * RETRY_BASE_MS));
    expect(hook.received).toHaveLength(3);
    expect((await deliveryRow(service, subjectId)).next_attempt_at).toBeNull();
  });

  it('is queued once per subject and type, whatever the number of enqueues', async () => {
    const org = await organizationWithKey(service);
    await rotateSecret(service, org.key);
    const hook = await receiver();
    const subjectId = await enqueue(service, org.organizationId, hook.url);
    const { enqueueWebhook } = await import('../../src/webhooks/index.js');
    const again = await enqueueWebhook(service.app.services.sql, {
      organizationId: org.organizationId,
      subjectId,
      url: hook.url,
      type: 'skiptrace.job.completed',
      data: { other: true },
    });
    expect(again).toBe(false);
    await eventually(
      () => stateOf(subjectId),
      (state) => state?.deliveredAt != null,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hook.received).toHaveLength(1);
    expect(JSON.parse(hook.received[0].body).data).toEqual({ hello: 'world' });
  });
});

describe('what a delivery never does', () => {
  it('never follows a redirect: a 302 is a failed attempt, and its Location is never requested', async () => {
    const org = await organizationWithKey(service);
    await rotateSecret(service, org.key);
    const elsewhere = await receiver();
    const hook = await receiver();
    hook.script([
      { status: 302, headers: { location: elsewhere.url } },
      { status: 307, headers: { location: elsewhere.url } },
    ]);
    const subjectId = await enqueue(service, org.organizationId, hook.url);
    await hook.waitFor(1);
    const state = await eventually(
      () => stateOf(subjectId),
      (current) => current?.lastStatus === 302,
    );
    expect(state).toMatchObject({ attempts: 1, deliveredAt: null });
    // The retry goes to the webhook's own URL again.
    await hook.waitFor(3);
    await eventually(
      () => stateOf(subjectId),
      (current) => current?.deliveredAt != null,
    );
    expect(elsewhere.received).toHaveLength(0);
  });

  it('never waits past WEBHOOK_TIMEOUT_MS: a receiver that never answers is a failed attempt without a status', async () => {
    const org = await organizationWithKey(service);
    await rotateSecret(service, org.key);
    const hook = await receiver();
    hook.script(['hang']);
    const subjectId = await enqueue(service, org.organizationId, hook.url);
    const [first] = await hook.waitFor(1);
    const row = await eventually(
      () => deliveryRow(service, subjectId),
      (current) => current.attempts === 1 && current.lease_token === null,
    );
    expect(row).toMatchObject({ last_status: null, delivered_at: null, last_error: 'no answer in time' });
    // The service gave up on it: the receiver sees the connection closed.
    await eventually(
      async () => first.closedAt,
      (closedAt) => closedAt !== undefined,
    );
    expect(first.closedAt! - first.at).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
    expect(first.closedAt! - first.at).toBeLessThan(TIMEOUT_MS + 1500);
    // Then retried like any failure.
    await hook.waitFor(2);
    await eventually(
      () => stateOf(subjectId),
      (state) => state?.deliveredAt != null && state.attempts === 2 && state.lastStatus === 200,
    );
  });
});

describe('what a delivery keeps of an answer', () => {
  it("logs and stores at most an excerpt of the receiver's body, never the secret or the URL's path and query", async () => {
    const org = await organizationWithKey(service);
    const secret = await rotateSecret(service, org.key);
    const hook = await receiver();
    hook.script([{ status: 500, body: `BODY-START ${'y'.repeat(20_000)}` }]);
    const subjectId = await enqueue(service, org.organizationId, `${hook.url}/private-path?token=hunter2`);
    await hook.waitFor(2);
    const row = await deliveryRow(service, subjectId);
    expect(row.last_error === null || row.last_error.length <= 200).toBe(true);
    const mentions = logLines.filter((line) => line.includes('BODY-START'));
    expect(mentions.length).toBeGreaterThan(0);
    for (const line of logLines) {
      expect(line).not.toContain('hunter2');
      expect(line).not.toContain('private-path');
      expect(line).not.toContain(secret.slice('whsec_'.length));
      expect(line.match(/y+/g)?.reduce((longest, run) => Math.max(longest, run.length), 0) ?? 0).toBeLessThanOrEqual(200);
    }
  });
});

describe('deliveries side by side', () => {
  it("are not held up by a receiver that does not answer: another organization's delivery arrives meanwhile", async () => {
    const slowOrg = await organizationWithKey(service);
    const quickOrg = await organizationWithKey(service);
    await rotateSecret(service, slowOrg.key);
    await rotateSecret(service, quickOrg.key);
    const slow = await receiver();
    const quick = await receiver();
    slow.script(['hang']);
    await enqueue(service, slowOrg.organizationId, slow.url);
    const [held] = await slow.waitFor(1);
    await enqueue(service, quickOrg.organizationId, quick.url);
    const [arrived] = await quick.waitFor(1);
    expect(held.closedAt).toBeUndefined();
    expect(arrived.at - held.at).toBeLessThan(TIMEOUT_MS);
  });
});

describe('where a delivery connects', () => {
  it('to the address its name was just resolved to and checked, not a second resolution of the name', async () => {
    const org = await organizationWithKey(service);
    await rotateSecret(service, org.key);
    const hook = await receiver();
    const subjectId = await enqueue(service, org.organizationId, `http://hooks.internal.test:${hook.port}/hooks?token=abc`);
    const [request] = await hook.waitFor(1);
    expect(request.headers.host).toBe(`hooks.internal.test:${hook.port}`);
    expect(
      await eventually(
        () => stateOf(subjectId),
        (state) => state?.deliveredAt != null,
      ),
    ).toMatchObject({
      attempts: 1,
      lastStatus: 200,
    });
  });
});

describe('a delivery claimed by a process that died', () => {
  it('is left alone while its lease runs, then claimed again and delivered with the same webhook-id', async () => {
    const org = await organizationWithKey(service);
    await rotateSecret(service, org.key);
    const hook = await receiver();
    const id = randomUUID();
    const subjectId = randomUUID();
    // What a process killed mid-attempt leaves: an attempt begun, a claim whose lease runs for a while yet.
    await service.sql(
      `insert into webhook_deliveries
         (id, organization_id, subject_id, type, url, data, next_attempt_at, attempts, last_attempt_at, lease_token, lease_expires_at)
       values (?, ?, ?, 'skiptrace.job.completed', ?, '{"n": 1}', now(), 1, now(), ?, now() + interval '1500 milliseconds')`,
      [id, org.organizationId, subjectId, hook.url, randomUUID()],
    );
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(hook.received).toHaveLength(0);
    const [request] = await hook.waitFor(1);
    expect(request.headers['webhook-id']).toBe(id);
    expect(
      await eventually(
        () => stateOf(subjectId),
        (state) => state?.deliveredAt != null,
      ),
    ).toMatchObject({
      attempts: 2,
      lastStatus: 200,
    });
  });
});

describe('organizations apart', () => {
  it("signs each organization's deliveries with its own secret, and shows each subject's state only", async () => {
    const first = await organizationWithKey(service);
    const second = await organizationWithKey(service);
    const firstSecret = await rotateSecret(service, first.key);
    const secondSecret = await rotateSecret(service, second.key);
    expect(firstSecret).not.toBe(secondSecret);
    const hook = await receiver();
    const firstSubject = await enqueue(service, first.organizationId, hook.url, { who: 'first' });
    const secondSubject = await enqueue(service, second.organizationId, hook.url, { who: 'second' });
    const received = await hook.waitFor(2);
    for (const request of received) {
      const who = JSON.parse(request.body).data.who as string;
      const [own, other] = who === 'first' ? [firstSecret, secondSecret] : [secondSecret, firstSecret];
      expect(() => new Webhook(own).verify(request.body, signatureHeaders(request.headers))).not.toThrow();
      expect(() => new Webhook(other).verify(request.body, signatureHeaders(request.headers))).toThrow();
    }
    const states = await eventually(
      () => webhookStateOf(service.app.services.sql, [firstSubject, randomUUID(), 'not-a-uuid']),
      (found) => found.get(firstSubject)?.deliveredAt != null,
    );
    expect([...states.keys()]).toEqual([firstSubject]);
    expect(secondSubject).not.toBe(firstSubject);
  });

  it('sends nothing for an organization without a secret: the attempt is recorded as failed', async () => {
    const org = await organizationWithKey(service);
    const hook = await receiver();
    const subjectId = await enqueue(service, org.organizationId, hook.url);
    const row = await eventually(
      () => deliveryRow(service, subjectId),
      (current) => current.attempts === 1 && current.lease_token === null,
    );
    expect(row.last_error).toMatch(/no webhook secret/);
    expect(hook.received).toHaveLength(0);
  });
});
