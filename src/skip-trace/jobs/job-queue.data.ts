/**
 * Every write is guarded by the lease, so a claimer whose item was taken over stores and charges nothing.
 * A statement that locks several items either locks them in (job_id, index) order or skips locked
 * ones, so no two of them deadlock.
 */
import { empty, raw, sql, type Db, type Statement } from '../../infra/database/sql.js';
import { settleJobCte, type ClaimedItem, type ItemOutcome } from './jobs.data.js';
import { chargeEachCtes } from '../../billing/charge.js';
import { auditOfCharges, chargedAuditFields, CHARGED_AUDIT_COLUMNS, type AuditEntry } from '../../billing/audit.js';
import type { ChargeOutcome } from '../trace.data.js';

export interface Lease {
  token: string;
  ms: number;
}

const leaseEnd = (lease: Lease) => sql`now() + ${lease.ms}::integer * interval '1 millisecond'`;

interface ClaimedRow {
  job_id: string;
  index: number;
  organization_id: string;
  key_id: string;
  key: string | null;
  input: Record<string, unknown>;
  attempts: number;
}

/**
 * In turns across organizations, counting what each already `running` here, so one organization's
 * long job never holds back another's.
 */
export async function claimItems(db: Db, lease: Lease, limit: number, running: Map<string, number>): Promise<ClaimedItem[]> {
  const runningRows = JSON.stringify([...running].map(([organization_id, n]) => ({ organization_id, n })));
  const rows = await db.rows<ClaimedRow>(
    sql`with orgs as (select distinct organization_id from skip_trace_jobs where status in ('queued', 'running') and not cancel_requested),
      offered as (select c.job_id, c.index, c.organization_id, c.seq from orgs
        cross join lateral (select i.job_id, i.index, i.organization_id, i.seq from skip_trace_job_items i
          where i.organization_id = orgs.organization_id and i.status = 'pending' and (i.lease_until is null or i.lease_until < now())
          order by i.seq limit ${limit} for update skip locked) c),
      picked as (select o.job_id, o.index from offered o
        left join jsonb_to_recordset(${runningRows}::jsonb) as r(organization_id uuid, n integer) on r.organization_id = o.organization_id
        order by row_number() over (partition by o.organization_id order by o.seq) + coalesce(r.n, 0), random() limit ${limit}),
      claimed as (update skip_trace_job_items i set lease_token = ${lease.token}, lease_until = ${leaseEnd(lease)}, attempts = i.attempts + 1
        from picked where i.job_id = picked.job_id and i.index = picked.index
        returning i.job_id, i.index, i.organization_id, i.key, i.input, i.attempts),
      started as (update skip_trace_jobs j set status = 'running', started_at = now()
        where j.id in (select job_id from claimed) and j.status = 'queued')
      select c.*, j.key_id from claimed c join skip_trace_jobs j on j.id = c.job_id`,
  );
  return rows.map((row) => ({
    jobId: row.job_id,
    index: Number(row.index),
    organizationId: row.organization_id,
    keyId: row.key_id,
    key: row.key,
    input: row.input,
    attempts: Number(row.attempts),
  }));
}

const itemKeys = (items: readonly ClaimedItem[]) => JSON.stringify(items.map((item) => ({ job_id: item.jobId, index: item.index })));

export async function renewLeases(db: Db, lease: Lease, items: readonly ClaimedItem[]): Promise<void> {
  if (items.length === 0) return;
  // An item locked now is being settled by its own statement: it needs no renewal, and waiting could deadlock.
  await db.run(
    sql`update skip_trace_job_items i set lease_until = ${leaseEnd(lease)}
        from (select k.job_id, k.index from jsonb_to_recordset(${itemKeys(items)}::jsonb) as k(job_id uuid, index integer)
          cross join lateral (select from skip_trace_job_items it where it.job_id = k.job_id and it.index = k.index
            and it.status = 'pending' and it.lease_token = ${lease.token} for update skip locked) held) renewed
        where i.job_id = renewed.job_id and i.index = renewed.index`,
  );
}

export interface ItemCharge {
  item: ClaimedItem;
  entry: Omit<AuditEntry, 'charged'>;
  outcome: ItemOutcome;
}

/**
 * Each item all or nothing: a lost lease writes nothing ('guard_failed'); when the balance runs
 * out, index order decides who is charged ('no_credit').
 */
export async function chargeItems(db: Db, lease: Lease, organizationId: string, charges: readonly ItemCharge[]): Promise<ChargeOutcome[]> {
  const input = JSON.stringify(
    charges.map(({ item, entry, outcome }, i) => ({
      ...chargedAuditFields(entry),
      i,
      job_id: item.jobId,
      index: item.index,
      status: outcome.status,
      persons: outcome.persons,
      error: outcome.error,
    })),
  );
  // `held` locks its items one at a time by primary key, in (job_id, index) order: the sorted subquery's.
  const rows = await db.rows<{ guarded: boolean; credits_remaining: number | null }>(
    sql`with input as (select * from jsonb_to_recordset(${input}::jsonb) as x(i integer, index integer, status text, persons jsonb, error jsonb, ${CHARGED_AUDIT_COLUMNS})),
      held as (select x.*, row_number() over (order by x.job_id, x.index) as n from (select * from input order by job_id, index) x
        where exists (select from skip_trace_job_items it where it.job_id = x.job_id and it.index = x.index and it.status = 'pending' and it.lease_token = ${lease.token} for update)),
      ${chargeEachCtes(organizationId, 'held')}, ${auditOfCharges(organizationId, 'charged')},
      stored as (update skip_trace_job_items i set status = c.status, request_id = c.request_id, persons = c.persons, error = c.error,
          lease_token = null, lease_until = null
        from charged c where i.job_id = c.job_id and i.index = c.index returning i.job_id, i.status),
      ${settleJobCte('stored')}
      select exists (select from held h where h.i = x.i) as guarded, (select c.credits_remaining from charged c where c.i = x.i) as credits_remaining
      from input x order by x.i`,
  );
  return rows.map((row) => {
    if (!row.guarded) return 'guard_failed';
    return row.credits_remaining == null ? 'no_credit' : { creditsRemaining: Number(row.credits_remaining) };
  });
}

const heldItem = (item: ClaimedItem, lease: Lease, alias = '') =>
  sql`${raw(alias)}job_id = ${item.jobId} and ${raw(alias)}index = ${item.index} and ${raw(alias)}status = 'pending' and ${raw(alias)}lease_token = ${lease.token}`;

const storeCte = (item: ClaimedItem, lease: Lease, outcome: ItemOutcome, onlyIf: Statement) =>
  sql`stored as (update skip_trace_job_items i set status = ${outcome.status}, request_id = ${outcome.id}::uuid, persons = ${JSON.stringify(outcome.persons)}::jsonb,
    error = ${outcome.error ? JSON.stringify(outcome.error) : null}::jsonb, lease_token = null, lease_until = null
    where ${heldItem(item, lease, 'i.')} ${onlyIf} returning i.job_id, i.status)`;

export async function storeUncharged(db: Db, item: ClaimedItem, lease: Lease, outcome: ItemOutcome): Promise<boolean> {
  const [row] = await db.rows<{ n: number }>(
    sql`with ${storeCte(item, lease, outcome, empty)}, ${settleJobCte('stored')}
        select count(*)::integer as n from stored`,
  );
  return Number(row.n) > 0;
}

/** Otherwise a cancelled job whose instance died would wait forever on its running items. */
export async function cancelAbandoned(db: Db): Promise<void> {
  await db.run(
    sql`with abandoned as (select i.job_id, i.index from skip_trace_job_items i join skip_trace_jobs j on j.id = i.job_id
          where j.cancel_requested and j.status in ('queued', 'running') and i.status = 'pending' and i.lease_until < now()
          for update of i skip locked),
        items as (update skip_trace_job_items i set status = 'cancelled', lease_token = null, lease_until = null
          from abandoned a where i.job_id = a.job_id and i.index = a.index
          returning i.job_id, i.status),
        ${settleJobCte('items')}
        select 1`,
  );
}

/** For a trace that timed out: by `delayMs` its result is cached, or its single flight's lock has run out. */
export async function releaseForRetry(db: Db, item: ClaimedItem, lease: Lease, delayMs: number): Promise<void> {
  await db.run(
    sql`update skip_trace_job_items set lease_token = null, lease_until = now() + ${delayMs}::integer * interval '1 millisecond'
        where job_id = ${item.jobId} and index = ${item.index} and status = 'pending' and lease_token = ${lease.token}`,
  );
}
