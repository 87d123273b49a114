import { Migration } from '@mikro-orm/migrations';

/**
 * Drops `notifications_seen_feed_idx`: since the read marks, a row's read state is computed
 * through the marks (`notification_seen_states`), so no read filters on the row's own `is_seen`
 * and the planner never picks the index; every mark by id still paid for it, and it kept those
 * updates from being heap-only (HOT), since they change `is_seen`.
 */
export class Migration20261129001000_drop_seen_feed_index extends Migration {
  override async up(): Promise<void> {
    this.addSql(`drop index if exists notifications_seen_feed_idx;`);
  }
}
