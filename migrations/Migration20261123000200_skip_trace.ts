import { Migration } from '@mikro-orm/migrations';

/** Skip trace keys, the credit ledger, the result cache and the request audit. */
export class Migration20261123000200_skip_trace extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table skip_trace_keys (
      id uuid primary key,
      organization_id uuid not null references organizations (id) on delete cascade,
      key_hash text not null unique,
      hint text not null,
      created_at timestamptz(3) not null default now(),
      revoked_at timestamptz(3)
    );`);
    // One active key per organization, enforced by the database rather than only by code.
    this.addSql(`create unique index skip_trace_keys_one_active_idx on skip_trace_keys (organization_id) where revoked_at is null;`);

    // Every change of an organization's balance, in the same transaction as the balance update.
    this.addSql(`create table skip_trace_credit_ledger (
      id uuid primary key,
      organization_id uuid not null references organizations (id) on delete cascade,
      kind text not null check (kind in ('purchase', 'charge')),
      amount integer not null,
      reference text,
      request_id uuid,
      created_at timestamptz(3) not null default now(),
      check ((kind = 'purchase' and amount > 0 and reference is not null and request_id is null)
          or (kind = 'charge' and amount = -1 and request_id is not null and reference is null))
    );`);
    this.addSql(
      `create unique index skip_trace_credit_ledger_purchase_ref_idx on skip_trace_credit_ledger (organization_id, reference) where kind = 'purchase';`,
    );
    this.addSql(
      `create unique index skip_trace_credit_ledger_charge_request_idx on skip_trace_credit_ledger (request_id) where kind = 'charge';`,
    );
    this.addSql(`create index skip_trace_credit_ledger_org_idx on skip_trace_credit_ledger (organization_id, created_at desc);`);

    // Durable result cache per standardized address + normalized actor.
    this.addSql(`create table skip_trace_results (
      cache_key text primary key,
      status text not null check (status in ('records_found', 'no_records_found')),
      persons jsonb not null,
      provider text not null,
      created_at timestamptz(3) not null default now(),
      expires_at timestamptz(3) not null
    );`);

    // Every call that passed the credential check: "was I charged for this?".
    this.addSql(`create table skip_trace_requests (
      id uuid primary key,
      organization_id uuid not null references organizations (id) on delete cascade,
      key_id uuid,
      cache_key text,
      outcome text not null,
      cache_hit boolean not null default false,
      charged boolean not null,
      duration_ms integer not null,
      created_at timestamptz(3) not null default now()
    );`);
    this.addSql(`create index skip_trace_requests_org_idx on skip_trace_requests (organization_id, created_at desc);`);
  }
}
