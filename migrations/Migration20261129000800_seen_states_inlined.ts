import { Migration } from '@mikro-orm/migrations';
import { seenStateFunction } from './Migration20261129000400_read_marks.js';

/**
 * `notification_seen_states`: a row's state through the read marks, as `notification_seen_state`
 * computes it (the same body), declared as a set-returning function so that PostgreSQL inlines it
 * where a statement joins it laterally (feed pages, counts): the scalar function runs as a call of
 * its own per row (a Function Scan, most of a feed page's time when the user has no mark at all),
 * the inlined body as a probe of the marks' primary key. The scalar one stays for expressions
 * (marks by id, mark-all, the counter trigger), where a set-returning function is not allowed.
 */
export class Migration20261129000800_seen_states_inlined extends Migration {
  override async up(): Promise<void> {
    this.addSql(seenStatesFunction());
  }
}

function seenStatesFunction(): string {
  const text = seenStateFunction
    .replace('function notification_seen_state(', 'function notification_seen_states(')
    .replace(
      /,\s*out is_seen boolean, out seen_at timestamptz\) language sql stable as/,
      ') returns table (is_seen boolean, seen_at timestamptz) language sql stable as',
    );
  if (!text.includes('notification_seen_states(') || !text.includes('returns table'))
    throw new Error('the read marks state function changed shape');
  return text;
}
