/**
 * A webhook delivery outlives a process killed in the middle of an attempt: the row stays claimed
 * by the dead process until its lease runs out, then another process (the service's bundle, as
 * `npm start` runs it) claims it and delivers it with the same `webhook-id`, signed as before.
 * On a PostgreSQL database of its own, so no other file's deliveries come its way.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { ownDatabase, type OwnDatabase } from '../support/webhooks.js';
import { graphql, json, requireRealBackends, spawnService, type ServiceProcess } from './spawn-service.js';

const TIMEOUT_MS = 1000;
/** The worker's lease: the attempt's timeout and its margin (webhook-worker.ts). */
const LEASE_MS = TIMEOUT_MS + 20_000;

let database: OwnDatabase;
let client: pg.Client;
let hook: Receiver;
const processes: ServiceProcess[] = [];

const start = async () => {
  const service = await spawnService({
    ...database.env,
    REDIS_URL: requireRealBackends().redisUrl,
    SKIPTRACE_WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    WEBHOOK_POLL_INTERVAL_MS: '50',
  });
  processes.push(service);
  return service;
};

beforeAll(async () => {
  requireRealBackends();
  database = await ownDatabase();
  client = new pg.Client({ connectionString: database.env.DATABASE_URL });
  await client.connect();
  hook = await startReceiver();
});
afterAll(async () => {
  await Promise.all(processes.map((service) => service.stop('SIGKILL')));
  await hook?.close();
  await client?.end();
  await database?.drop();
});

const deliveryOf = async (id: string) =>
  (
    await client.query(
      `select attempts, lease_token, delivered_at, last_status, lease_expires_at > now() as leased from webhook_deliveries where id = $1`,
      [id],
    )
  ).rows[0];

describe('a webhook delivery and a killed process', () => {
  it('is claimed again once the dead claim runs out, and delivered with the same webhook-id', async () => {
    const first = await start();
    const org = await graphql(
      first,
      `
        mutation {
          createOrganization(name: "Webhook kill") {
            id
          }
        }
      `,
    );
    const organizationId = org.body.data.createOrganization.id as string;
    const key = await graphql(
      first,
      `
        mutation ($o: ID!) {
          generateSkipTraceKey(organizationId: $o) {
            secret
          }
        }
      `,
      { o: organizationId },
    );
    const issued = await json(`${first.url}/api/v1/skiptrace/webhook-secret`, { bearer: key.body.data.generateSkipTraceKey.secret });
    expect(issued.status).toBe(200);
    const secret = issued.body.secret as string;

    hook.script(['hang']);
    const id = randomUUID();
    await client.query(
      `insert into webhook_deliveries (id, organization_id, subject_id, type, url, data, next_attempt_at)
       values ($1, $2, $3, 'skiptrace.job.completed', $4, '{"job": "kill"}', now())`,
      [id, organizationId, randomUUID(), hook.url],
    );
    await hook.waitFor(1);
    const claimedAt = Date.now();
    first.child.kill('SIGKILL');
    await first.exited;
    expect(await deliveryOf(id)).toMatchObject({ attempts: 1, leased: true, delivered_at: null });

    await start();
    const received = await hook.waitFor(2, LEASE_MS + 30_000);
    // Not before the dead process's lease ran out.
    expect(received[1].at - claimedAt).toBeGreaterThanOrEqual(LEASE_MS - 2000);
    expect(received.map((request) => request.headers['webhook-id'])).toEqual([id, id]);
    const last = received[1];
    const payload = new Webhook(secret).verify(last.body, {
      'webhook-id': String(last.headers['webhook-id']),
      'webhook-timestamp': String(last.headers['webhook-timestamp']),
      'webhook-signature': String(last.headers['webhook-signature']),
    });
    expect(payload).toMatchObject({ type: 'skiptrace.job.completed', data: { job: 'kill' } });
    expect(
      await eventually(
        () => deliveryOf(id),
        (row) => row.delivered_at !== null,
      ),
    ).toMatchObject({ attempts: 2, last_status: 200, lease_token: null });
  });
});
