import { Migration } from '@mikro-orm/migrations';

/** The class ids of the feed writers' user lock (`userWriteLock` in feed.data.ts) and of the sweep's lease. */
const USER_LOCK_CLASS = 0x6e6f7466;
const SWEEP_LEASE_CLASS = 0x6e6f7477;

/**
 * Expiry and retention: `expires_at` (set by a publish, null for every existing row, so nothing
 * moves) and the sweep that deletes expired rows and rows past the retention. Partial indexes find
 * a user's expired rows (counts leave them out until they are deleted) and the sweep's next batch;
 * the retention batch reads `created_at` in order.
 */
export class Migration20261129000500_notification_expiry extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table notifications add column if not exists expires_at timestamptz(3);`);
    this.addSql(
      `create index if not exists notifications_user_expiry_idx on notifications (user_id, expires_at) where expires_at is not null;`,
    );
    this.addSql(`create index if not exists notifications_expiry_idx on notifications (expires_at) where expires_at is not null;`);
    this.addSql(`create index if not exists notifications_created_idx on notifications (created_at);`);
    this.addSql(sweepFunction);
  }
}

/**
 * One bounded batch of the sweep: the oldest expired rows and rows created before `p_cutoff` (null:
 * no retention), at most `p_limit` of each, deleted per user under that user's lock, so the
 * counter trigger subtracts each row's state exactly as the user's marks left it. Only the holder
 * of the lease sweeps (another instance's call returns nothing), and a user whose writer holds the
 * user lock now is left for the next batch: the sweep never waits for a user, nor a user for it
 * longer than one user's delete. Returns the users swept and how many rows each lost.
 */
const sweepFunction = `create or replace function notification_sweep(p_cutoff timestamptz, p_limit int)
  returns table (swept_user uuid, deleted bigint) language plpgsql as $fn$
declare
  due record;
  n bigint;
begin
  if not pg_try_advisory_xact_lock(${SWEEP_LEASE_CLASS}, 0) then return; end if;
  for due in select d.user_id, array_agg(d.id) as ids from (
      (select x.id, x.user_id from notifications x where x.expires_at <= now() order by x.expires_at limit p_limit)
      union
      (select x.id, x.user_id from notifications x where p_cutoff is not null and x.created_at < p_cutoff order by x.created_at limit p_limit)
    ) d group by d.user_id order by d.user_id loop
    continue when not pg_try_advisory_xact_lock(${USER_LOCK_CLASS}, hashtext(due.user_id::text));
    delete from notifications x where x.user_id = due.user_id and x.id = any(due.ids);
    get diagnostics n = row_count;
    if n > 0 then
      swept_user := due.user_id;
      deleted := n;
      return next;
    end if;
  end loop;
end $fn$;`;
