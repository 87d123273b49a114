import { Migration } from '@mikro-orm/migrations';

/**
 * A skip trace of a list (a batch or a job) audits each item as a request of its own: the usage
 * row names the list it belongs to and the caller's key of the item (null for single calls).
 */
export class Migration20261129000000_list_usage extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `alter table skip_trace_requests add column if not exists batch_id uuid, add column if not exists job_id uuid, add column if not exists key text;`,
    );
  }
}
