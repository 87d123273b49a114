import { Migration } from '@mikro-orm/migrations';

/**
 * Billing a customer can see and trust: stored `Idempotency-Key`s of `POST /api/v1/skiptrace`,
 * and the usage listing's index on the request audit.
 */
export class Migration20261126000000_billing extends Migration {
  override async up(): Promise<void> {
    // One row per (organization, key): claimed while its first request is in flight (`outcome`
    // null, held until `lease_expires_at` at most, so a crashed instance cannot hold it for good),
    // then that request's answer, replayed until `expires_at` (24 h); expired rows are swept.
    this.addSql(`create table skip_trace_idempotency_keys (
      organization_id uuid not null references organizations (id) on delete cascade,
      idempotency_key text not null,
      fingerprint text not null,
      claim_token uuid not null,
      lease_expires_at timestamptz(3) not null,
      request_id uuid,
      outcome jsonb,
      created_at timestamptz(3) not null default now(),
      expires_at timestamptz(3) not null,
      primary key (organization_id, idempotency_key)
    );`);
    this.addSql(`create index skip_trace_idempotency_keys_expiry_idx on skip_trace_idempotency_keys (expires_at);`);
    // A refund forgets the answer that carried the refunded charge.
    this.addSql(
      `create index skip_trace_idempotency_keys_request_idx on skip_trace_idempotency_keys (request_id) where request_id is not null;`,
    );

    // The usage listing walks an organization's requests newest first, (created_at, id) as its keyset.
    this.addSql(`create index skip_trace_requests_usage_idx on skip_trace_requests (organization_id, created_at desc, id desc);`);
    this.addSql(`drop index skip_trace_requests_org_idx;`);
  }
}
