import { Migration } from '@mikro-orm/migrations';

/**
 * Skip trace jobs: a list of up to 10,000 items traced in the background by any instance. Items
 * are claimed from their own table with `for update skip locked` and a lease, so an instance that
 * dies mid-item leaves the item to be claimed again once its lease runs out.
 */
export class Migration20261129000100_skip_trace_jobs extends Migration {
  override async up(): Promise<void> {
    // The counts are kept on the job's row by the statements that change its items, so reading a
    // job (or a page of jobs) never counts its items.
    this.addSql(`create table skip_trace_jobs (
      id uuid primary key,
      organization_id uuid not null references organizations (id) on delete cascade,
      key_id uuid not null,
      status text not null default 'queued',
      created_at timestamptz(3) not null default now(),
      started_at timestamptz(3),
      completed_at timestamptz(3),
      total integer not null,
      pending integer not null,
      records_found integer not null default 0,
      no_records_found integer not null default 0,
      failed integer not null default 0,
      cancelled integer not null default 0,
      charged integer not null default 0,
      cancel_requested boolean not null default false,
      columns jsonb,
      webhook_url text,
      webhook_enqueued boolean not null default false,
      idempotency_key text,
      fingerprint text
    );`);
    this.addSql(`create index skip_trace_jobs_listing_idx on skip_trace_jobs (organization_id, created_at desc, id desc);`);
    this.addSql(
      `create unique index skip_trace_jobs_idempotency_idx on skip_trace_jobs (organization_id, idempotency_key) where idempotency_key is not null;`,
    );
    this.addSql(`create index skip_trace_jobs_active_idx on skip_trace_jobs (organization_id) where status in ('queued', 'running');`);
    this.addSql(
      `create index skip_trace_jobs_webhook_idx on skip_trace_jobs (id) where webhook_url is not null and not webhook_enqueued and status in ('completed', 'cancelled');`,
    );

    // `seq` orders an organization's pending items by job, then index: its older jobs go first.
    this.addSql(`create table skip_trace_job_items (
      job_id uuid not null references skip_trace_jobs (id) on delete cascade,
      index integer not null,
      organization_id uuid not null,
      seq bigserial not null,
      key text,
      input jsonb not null,
      cells jsonb,
      status text not null default 'pending',
      request_id uuid,
      persons jsonb,
      error jsonb,
      lease_token uuid,
      lease_until timestamptz(3),
      attempts integer not null default 0,
      primary key (job_id, index)
    );`);
    this.addSql(`create index skip_trace_job_items_pending_idx on skip_trace_job_items (organization_id, seq) where status = 'pending';`);
  }
}
