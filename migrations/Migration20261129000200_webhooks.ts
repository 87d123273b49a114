import { Migration } from '@mikro-orm/migrations';

/**
 * Signed webhook deliveries: each organization's signing secret, and the deliveries themselves,
 * claimed by any instance's worker with `for update skip locked` and a lease, so attempts survive restarts.
 * Safe to run again (`if not exists`).
 */
export class Migration20261129000200_webhooks extends Migration {
  override async up(): Promise<void> {
    // The secret signs (HMAC), so it is kept as issued, not hashed; each rotation replaces the row's value.
    this.addSql(`create table if not exists webhook_secrets (
      organization_id uuid primary key references organizations (id) on delete cascade,
      secret text not null,
      created_at timestamptz(3) not null default now()
    );`);
    // One row per (subject, event type): its id is the `webhook-id` every attempt carries.
    // `next_attempt_at` is null once it is delivered or out of attempts; a claim holds the row until `lease_expires_at`.
    this.addSql(`create table if not exists webhook_deliveries (
      id uuid primary key,
      organization_id uuid not null references organizations (id) on delete cascade,
      subject_id uuid not null,
      type text not null,
      url text not null,
      data json not null,
      created_at timestamptz(3) not null default now(),
      attempts integer not null default 0,
      next_attempt_at timestamptz(3),
      lease_token uuid,
      lease_expires_at timestamptz(3),
      last_status integer,
      last_error text,
      last_attempt_at timestamptz(3),
      delivered_at timestamptz(3),
      unique (subject_id, type)
    );`);
    this.addSql(
      `create index if not exists webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at) where next_attempt_at is not null;`,
    );
  }
}
