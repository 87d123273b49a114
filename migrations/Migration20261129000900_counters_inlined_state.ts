import { Migration } from '@mikro-orm/migrations';
import { countersFunction } from './Migration20261129000400_read_marks.js';

/**
 * The counter trigger reads each changed row's state (before and after) through
 * `notification_seen_states`, which PostgreSQL inlines, instead of a call of the scalar
 * `notification_seen_state` per row and side: a mark by id paid two such calls per row it changed.
 * The trigger is otherwise the read marks migration's.
 */
export class Migration20261129000900_counters_inlined_state extends Migration {
  override async up(): Promise<void> {
    const text = countersFunction.replaceAll('cross join lateral notification_seen_state(', 'cross join lateral notification_seen_states(');
    if (!text.includes('notification_seen_states(') || text.includes('notification_seen_state(')) {
      throw new Error('the counter trigger changed shape');
    }
    this.addSql(text);
  }
}
