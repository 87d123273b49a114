import { Migration } from '@mikro-orm/migrations';

/**
 * The charged items of keyed batches: one row per (organization, Idempotency-Key, body, item
 * index), written by the item's charge statement. The primary key lets an item be charged once
 * per key and body, so a retry after its process died mid-batch finds the earlier charges
 * instead of charging again. Rows last as long as their key (24 h) and are swept with it; a
 * refund of the item's charge deletes its row (`request_id`).
 */
export class Migration20261130000000_batch_item_charges extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table if not exists skip_trace_batch_items (
      organization_id uuid not null references organizations (id) on delete cascade,
      idempotency_key text not null,
      fingerprint text not null,
      item_index integer not null,
      request_id uuid not null,
      result jsonb not null,
      expires_at timestamptz(3) not null,
      primary key (organization_id, idempotency_key, fingerprint, item_index)
    );`);
    this.addSql(`create index if not exists skip_trace_batch_items_request_idx on skip_trace_batch_items (request_id);`);
    this.addSql(`create index if not exists skip_trace_batch_items_expiry_idx on skip_trace_batch_items (expires_at);`);
  }
}
