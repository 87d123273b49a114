import { Migration } from '@mikro-orm/migrations';

/**
 * A charge is final once any response carried its result. `carriers` counts the responses that
 * carried an Idempotency-Key's stored 200 (its first request and each replay) and were not lost:
 * a replay adds one in the statement that reads the answer, a response not written in full takes
 * one away, and only the statement that takes the last one away refunds the charge.
 */
export class Migration20261128000300_answer_carriers extends Migration {
  override async up(): Promise<void> {
    // Safe to run again: a stored 200 always has a carrier once the column exists.
    this.addSql(`alter table skip_trace_idempotency_keys add column if not exists carriers integer not null default 0;`);
    // Answers stored before this column: their first response counts as delivered, so the charge is final.
    this.addSql(`update skip_trace_idempotency_keys set carriers = 1 where request_id is not null and carriers = 0;`);
  }
}
