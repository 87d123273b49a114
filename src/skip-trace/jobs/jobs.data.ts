/**
 * A job's counts live on its row and change in the statement that changes its items, so a job reads
 * in one indexed lookup whatever its size (docs/architecture.md, "Jobs").
 */
import { empty, raw, sql, type Db } from '../../infra/database/sql.js';
import type { KeysetPosition } from '../../common/keyset-page.js';
import { toDate } from '../../common/to-date.js';
import type { ItemStatus } from '../items/item-result.js';

export const JOB_STATUSES = ['queued', 'running', 'completed', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export interface JobCounts {
  total: number;
  pending: number;
  recordsFound: number;
  noRecordsFound: number;
  failed: number;
  cancelled: number;
  charged: number;
}

export interface Job {
  id: string;
  organizationId: string;
  status: JobStatus;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
  counts: JobCounts;
  webhookUrl: string | null;
  columns: string[] | null;
}

export interface NewJobItem {
  key: string | null;
  input: Record<string, unknown>;
  cells: string[] | null;
}

export interface JobItemRow {
  index: number;
  key: string | null;
  status: ItemStatus;
  requestId: string | null;
  persons: unknown[] | null;
  error: { code: string; message: string; details?: unknown } | null;
  input: Record<string, unknown>;
  cells: string[] | null;
}

export interface ClaimedItem {
  jobId: string;
  index: number;
  organizationId: string;
  keyId: string;
  key: string | null;
  input: Record<string, unknown>;
  attempts: number;
}

export interface ItemOutcome {
  status: Exclude<ItemStatus, 'pending' | 'cancelled'>;
  id: string | null;
  persons: unknown[];
  error: { code: string; message: string; details?: unknown } | null;
}

const JOB_COLUMNS = sql`j.id, j.organization_id, j.status, j.created_at, j.started_at, j.completed_at, j.total, j.pending,
  j.records_found, j.no_records_found, j.failed, j.cancelled, j.charged, j.webhook_url, j.columns`;

interface JobRow {
  id: string;
  organization_id: string;
  status: JobStatus;
  created_at: Date | string;
  started_at: Date | string | null;
  completed_at: Date | string | null;
  total: number;
  pending: number;
  records_found: number;
  no_records_found: number;
  failed: number;
  cancelled: number;
  charged: number;
  webhook_url: string | null;
  columns: string[] | null;
}

const date = (value: Date | string | null): Date | null => (value === null ? null : toDate(value));

export function jobOf(row: JobRow): Job {
  return {
    id: row.id,
    organizationId: row.organization_id,
    status: row.status,
    createdAt: toDate(row.created_at),
    startedAt: date(row.started_at),
    completedAt: date(row.completed_at),
    counts: {
      total: Number(row.total),
      pending: Number(row.pending),
      recordsFound: Number(row.records_found),
      noRecordsFound: Number(row.no_records_found),
      failed: Number(row.failed),
      cancelled: Number(row.cancelled),
      charged: Number(row.charged),
    },
    webhookUrl: row.webhook_url,
    columns: row.columns,
  };
}

export interface NewJob {
  id: string;
  organizationId: string;
  keyId: string;
  columns: string[] | null;
  webhookUrl: string | null;
  idempotency: { key: string; fingerprint: string } | null;
}

/** Null when a job of the organization created within 24 hours holds the Idempotency-Key; older holders give it up first. */
export async function insertJob(db: Db, job: NewJob, items: NewJobItem[]): Promise<Job | null> {
  const { idempotency } = job;
  if (idempotency)
    await db.run(
      sql`update skip_trace_jobs set idempotency_key = null where organization_id = ${job.organizationId}
          and idempotency_key = ${idempotency.key} and created_at < now() - interval '24 hours'`,
    );
  const rows = await db.rows<JobRow>(
    sql`with j as (
        insert into skip_trace_jobs (id, organization_id, key_id, total, pending, columns, webhook_url, idempotency_key, fingerprint)
        values (${job.id}, ${job.organizationId}, ${job.keyId}, ${items.length}, ${items.length}, ${job.columns ? JSON.stringify(job.columns) : null}::jsonb,
          ${job.webhookUrl}, ${idempotency?.key ?? null}, ${idempotency?.fingerprint ?? null})
        on conflict (organization_id, idempotency_key) where idempotency_key is not null do nothing
        returning *),
      items as (
        insert into skip_trace_job_items (job_id, index, organization_id, key, input, cells)
        select j.id, (e.ordinality - 1)::integer, j.organization_id, e.value->>'key', e.value->'input', e.value->'cells'
        from j, jsonb_array_elements(${JSON.stringify(items)}::jsonb) with ordinality e
        order by e.ordinality)
      select ${JOB_COLUMNS} from j`,
  );
  return rows[0] ? jobOf(rows[0]) : null;
}

/** The job that holds an Idempotency-Key, and the fingerprint of the body that created it. */
export async function jobOfIdempotencyKey(db: Db, organizationId: string, key: string): Promise<{ job: Job; fingerprint: string } | null> {
  const [row] = await db.rows<JobRow & { fingerprint: string }>(
    sql`select ${JOB_COLUMNS}, j.fingerprint from skip_trace_jobs j where j.organization_id = ${organizationId} and j.idempotency_key = ${key}`,
  );
  return row ? { job: jobOf(row), fingerprint: row.fingerprint } : null;
}

/** Null for another organization's job, as for an unknown id. */
export async function findJob(db: Db, organizationId: string, id: string): Promise<Job | null> {
  const [row] = await db.rows<JobRow>(
    sql`select ${JOB_COLUMNS} from skip_trace_jobs j where j.id = ${id} and j.organization_id = ${organizationId}`,
  );
  return row ? jobOf(row) : null;
}

/** Newest first, as `skip_trace_jobs_listing_idx` orders them. */
export async function listJobs(db: Db, organizationId: string, after: KeysetPosition | null, limit: number): Promise<Job[]> {
  const rows = await db.rows<JobRow>(
    sql`select ${JOB_COLUMNS} from skip_trace_jobs j where j.organization_id = ${organizationId}
        ${after ? sql`and (j.created_at, j.id) < (${after.createdAt}::timestamptz, ${after.id}::uuid)` : empty}
        order by j.created_at desc, j.id desc limit ${limit}`,
  );
  return rows.map(jobOf);
}

interface ItemDbRow {
  index: number;
  key: string | null;
  status: ItemStatus;
  request_id: string | null;
  persons: unknown[] | null;
  error: JobItemRow['error'];
  input: Record<string, unknown>;
  cells: string[] | null;
}

export async function itemsFrom(db: Db, jobId: string, from: number, limit: number): Promise<JobItemRow[]> {
  const rows = await db.rows<ItemDbRow>(
    sql`select index, key, status, request_id, persons, error, input, cells from skip_trace_job_items
        where job_id = ${jobId} and index >= ${from} order by index limit ${limit}`,
  );
  return rows.map((row) => ({
    index: Number(row.index),
    key: row.key,
    status: row.status,
    requestId: row.request_id,
    persons: row.persons,
    error: row.error,
    input: row.input,
    cells: row.cells,
  }));
}

/** `settled` names a CTE of the items just settled, `(job_id, status)`. */
export const settleJobCte = (settled: string) =>
  sql`settled_job as (update skip_trace_jobs j set
      pending = j.pending - s.n,
      records_found = j.records_found + s.records_found,
      no_records_found = j.no_records_found + s.no_records_found,
      failed = j.failed + s.failed,
      cancelled = j.cancelled + s.cancelled,
      charged = j.charged + s.records_found + s.no_records_found,
      status = case when j.pending - s.n > 0 then j.status when j.cancel_requested then 'cancelled' else 'completed' end,
      completed_at = case when j.pending - s.n > 0 then null else now() end
    from (select job_id, count(*)::integer as n,
        count(*) filter (where status = 'records_found')::integer as records_found,
        count(*) filter (where status = 'no_records_found')::integer as no_records_found,
        count(*) filter (where status = 'failed')::integer as failed,
        count(*) filter (where status = 'cancelled')::integer as cancelled
      from ${raw(settled)} group by job_id) s
    where j.id = s.job_id returning j.id, j.status)`;

/** Running items finish first; those of a dead instance's lease count as not running. */
export async function cancelJob(db: Db, organizationId: string, id: string): Promise<Job | null> {
  // One update of the job's row (two in one statement would not both apply), after its items:
  // every writer locks items before their job, and several items in index order, so none deadlocks.
  await db.run(
    sql`with target as (select id from skip_trace_jobs where id = ${id} and organization_id = ${organizationId}
          and status in ('queued', 'running')),
        idle as (select i.index from skip_trace_job_items i join target on i.job_id = target.id
          where i.status = 'pending' and (i.lease_until is null or i.lease_until < now()) order by i.index for update of i),
        items as (update skip_trace_job_items i set status = 'cancelled', lease_token = null, lease_until = null
          from target, idle where i.job_id = target.id and i.index = idle.index
          returning i.index),
        n as (select count(*)::integer as n from items)
        update skip_trace_jobs j set cancel_requested = true, pending = j.pending - n.n, cancelled = j.cancelled + n.n,
          status = case when j.pending - n.n > 0 then j.status else 'cancelled' end,
          completed_at = case when j.pending - n.n > 0 then null else now() end
        from target, n where j.id = target.id and j.status in ('queued', 'running')`,
  );
  return findJob(db, organizationId, id);
}

export async function endedJobsAwaitingWebhook(db: Db): Promise<Job[]> {
  const rows = await db.rows<JobRow>(
    sql`select ${JOB_COLUMNS} from skip_trace_jobs j where j.webhook_url is not null and not j.webhook_enqueued
        and j.status in ('completed', 'cancelled') limit 100`,
  );
  return rows.map(jobOf);
}

export async function markWebhookQueued(db: Db, id: string): Promise<void> {
  await db.run(sql`update skip_trace_jobs set webhook_enqueued = true where id = ${id}`);
}
