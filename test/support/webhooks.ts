/**
 * Helpers of the webhook tests. Every instance's worker sends any due delivery of its database,
 * so a test file whose deliveries must reach its own receivers runs on a database of its own:
 * with DATABASE_URL, a fresh PostgreSQL database (dropped afterwards); embedded, its own PGlite
 * (in memory, or under a temporary data dir when the file restarts the service on it).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { enqueueWebhook } from '../../src/webhooks/index.js';
import type { TestService } from './harness.js';

export interface OwnDatabase {
  /** The environment that points a service at it. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

export async function ownDatabase(options: { persistent?: boolean } = {}): Promise<OwnDatabase> {
  if (!process.env.DATABASE_URL) {
    if (!options.persistent) return { env: { DATA_DIR: 'memory://' }, drop: async () => undefined };
    const dataDir = mkdtempSync(join(tmpdir(), 'webhooks-'));
    return { env: { DATA_DIR: dataDir }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const name = `webhooks_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(process.env.DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    env: { DATABASE_URL: url.toString() },
    async drop() {
      const dropper = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await dropper.connect();
      try {
        await dropper.query(`drop database if exists ${name} with (force)`);
      } finally {
        await dropper.end();
      }
    },
  };
}

/** An organization with a skip trace key (no credits: webhooks cost none). */
export async function organizationWithKey(service: TestService): Promise<{ organizationId: string; key: string }> {
  const org = await service.graphql(`mutation($n: String!) { createOrganization(name: $n) { id } }`, { n: `Hooks ${randomUUID()}` });
  const organizationId = org.body.data.createOrganization.id as string;
  const key = await service.graphql(`mutation($o: ID!) { generateSkipTraceKey(organizationId: $o) { secret } }`, { o: organizationId });
  return { organizationId, key: key.body.data.generateSkipTraceKey.secret as string };
}

/** `POST /api/v1/skiptrace/webhook-secret` with the organization's key: the new secret. */
export async function rotateSecret(service: TestService, key: string): Promise<string> {
  const answer = await service.request('/api/v1/skiptrace/webhook-secret', { method: 'POST', headers: { authorization: `Bearer ${key}` } });
  if (answer.status !== 200) throw new Error(`webhook-secret answered ${answer.status}: ${answer.text}`);
  return answer.body.secret as string;
}

/** Queues a delivery of a new subject to `url`; answers the subject's id. */
export async function enqueue(
  service: TestService,
  organizationId: string,
  url: string,
  data: unknown = { hello: 'world' },
  type = 'skiptrace.job.completed',
): Promise<string> {
  const subjectId = randomUUID();
  await enqueueWebhook(service.app.services.sql, { organizationId, subjectId, url, type, data });
  return subjectId;
}

/** The delivery row of a subject, as stored (for what `webhookStateOf` does not show). */
export async function deliveryRow(service: TestService, subjectId: string): Promise<any> {
  const [row] = await service.sql(
    `select id::text as id, attempts, last_status, last_error, next_attempt_at, delivered_at, lease_token::text as lease_token
     from webhook_deliveries where subject_id = ?`,
    [subjectId],
  );
  return row;
}
