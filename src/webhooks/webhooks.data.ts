/**
 * A delivery's id is its `webhook-id`, the same across retries. Claims are leases, so a dead
 * process's rows are claimed again (docs/architecture.md, "Webhooks").
 */
import { randomUUID } from 'node:crypto';
import { Sql } from 'sql-template-tag';
import { isUuid } from '../common/uuid.js';
import { pgTextArray } from '../common/pg-array.js';
import { toDate } from '../common/to-date.js';
import { sql, type Db, type Statement } from '../infra/database/sql.js';

export async function storeWebhookSecret(db: Db, organizationId: string, secret: string): Promise<Date> {
  const [row] = await db.rows<{ created_at: Date | string }>(
    sql`insert into webhook_secrets (organization_id, secret) values (${organizationId}, ${secret})
      on conflict (organization_id) do update set secret = excluded.secret, created_at = now()
      returning created_at`,
  );
  return toDate(row.created_at);
}

export async function hasWebhookSecret(db: Db, organizationId: string): Promise<boolean> {
  if (!isUuid(organizationId)) return false;
  const rows = await db.rows(sql`select 1 from webhook_secrets where organization_id = ${organizationId}`);
  return rows.length > 0;
}

/** `data` may be a `sql` fragment, e.g. reading the caller's own CTE. */
export interface WebhookDelivery {
  organizationId: string;
  /** One delivery per subject and type. */
  subjectId: string;
  url: string;
  type: string;
  data: unknown;
}

/** A fragment, so it can be a CTE of the statement that ends its subject and commit with it. */
export function webhookDeliveryInsert(delivery: WebhookDelivery): Statement {
  const data = delivery.data instanceof Sql ? sql`(${delivery.data})::json` : sql`${JSON.stringify(delivery.data)}::json`;
  return sql`insert into webhook_deliveries (id, organization_id, subject_id, type, url, data, next_attempt_at)
    values (${randomUUID()}, ${delivery.organizationId}, ${delivery.subjectId}, ${delivery.type}, ${delivery.url}, ${data}, now())
    on conflict (subject_id, type) do nothing`;
}

/** False when the subject already had this delivery. */
export async function enqueueWebhook(db: Db, delivery: WebhookDelivery): Promise<boolean> {
  return (await db.run(webhookDeliveryInsert(delivery))) > 0;
}

export interface WebhookState {
  url: string;
  /** Begun, not finished: a claim counts. */
  attempts: number;
  /** Null when the last attempt got no answer. */
  lastStatus: number | null;
  lastAttemptAt: Date | null;
  deliveredAt: Date | null;
}

interface StateRow {
  subject_id: string;
  url: string;
  attempts: number;
  last_status: number | null;
  last_attempt_at: Date | string | null;
  delivered_at: Date | string | null;
}

export async function webhookStateOf(db: Db, subjectIds: readonly string[]): Promise<Map<string, WebhookState>> {
  const ids = subjectIds.filter(isUuid).map((id) => id.toLowerCase());
  const states = new Map<string, WebhookState>();
  if (ids.length === 0) return states;
  const rows = await db.rows<StateRow>(
    sql`select distinct on (subject_id) subject_id::text as subject_id, url, attempts, last_status, last_attempt_at, delivered_at
      from webhook_deliveries where subject_id = any(${pgTextArray(ids)}::uuid[])
      order by subject_id, created_at desc`,
  );
  for (const row of rows)
    states.set(row.subject_id, {
      url: row.url,
      attempts: row.attempts,
      lastStatus: row.last_status,
      lastAttemptAt: row.last_attempt_at === null ? null : toDate(row.last_attempt_at),
      deliveredAt: row.delivered_at === null ? null : toDate(row.delivered_at),
    });
  return states;
}

export interface ClaimedDelivery {
  id: string;
  type: string;
  url: string;
  data: unknown;
  createdAt: Date;
  attempts: number;
  secret: string | null;
}

/** Each claim counts as an attempt begun, so a process dying mid-attempt cannot exceed `maxAttempts`. */
export async function claimDueDeliveries(
  db: Db,
  claim: { token: string; limit: number; leaseMs: number; maxAttempts: number },
): Promise<ClaimedDelivery[]> {
  const rows = await db.rows<{
    id: string;
    type: string;
    url: string;
    data: unknown;
    created_at: Date | string;
    attempts: number;
    secret: string | null;
  }>(
    sql`with spent as (
        -- Out of attempts, the last one's process died holding it: nothing more is scheduled.
        update webhook_deliveries set next_attempt_at = null, lease_token = null, lease_expires_at = null
        where next_attempt_at <= now() and attempts >= ${claim.maxAttempts} and lease_expires_at <= now()
      ),
      due as (
        select id from webhook_deliveries
        where next_attempt_at <= now() and attempts < ${claim.maxAttempts}
          and (lease_expires_at is null or lease_expires_at <= now())
        order by next_attempt_at, id
        limit ${claim.limit}
        for update skip locked
      )
      update webhook_deliveries d
      set lease_token = ${claim.token}, lease_expires_at = now() + ${claim.leaseMs}::integer * interval '1 millisecond',
          attempts = d.attempts + 1, last_attempt_at = now()
      from due where d.id = due.id
      returning d.id::text as id, d.type, d.url, d.data, d.created_at, d.attempts,
        (select s.secret from webhook_secrets s where s.organization_id = d.organization_id) as secret`,
  );
  return rows.map((row) => ({
    id: row.id,
    type: row.type,
    url: row.url,
    data: typeof row.data === 'string' ? JSON.parse(row.data) : row.data,
    createdAt: toDate(row.created_at),
    attempts: row.attempts,
    secret: row.secret,
  }));
}

/** `error` never holds more of the response body than an excerpt. */
export interface AttemptOutcome {
  status: number | null;
  delivered: boolean;
  error: string | null;
}

/** False when the claim was lost: only the holder of the lease may record. */
export async function recordAttempt(
  db: Db,
  claim: { id: string; token: string },
  outcome: AttemptOutcome,
  retry: { retryBaseMs: number; maxAttempts: number },
): Promise<boolean> {
  const changed = await db.run(
    sql`update webhook_deliveries
      set last_status = ${outcome.status}::integer, last_error = ${outcome.error}::text,
          delivered_at = case when ${outcome.delivered}::boolean then now() end,
          next_attempt_at = case when ${outcome.delivered}::boolean or attempts >= ${retry.maxAttempts}::integer then null
            else now() + ${retry.retryBaseMs}::double precision * power(2, attempts - 1) * interval '1 millisecond' end,
          lease_token = null, lease_expires_at = null
      where id = ${claim.id} and lease_token = ${claim.token}`,
  );
  return changed > 0;
}

/** On stopping: the row is due again at once, for any instance. */
export async function releaseClaim(db: Db, claim: { id: string; token: string }): Promise<void> {
  await db.run(
    sql`update webhook_deliveries set lease_token = null, lease_expires_at = null
      where id = ${claim.id} and lease_token = ${claim.token}`,
  );
}
