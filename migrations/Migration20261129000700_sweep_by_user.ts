import { Migration } from '@mikro-orm/migrations';

/** The class ids of the feed writers' user lock (`userWriteLock` in feed.data.ts) and of the sweep's lease. */
const USER_LOCK_CLASS = 0x6e6f7466;
const SWEEP_LEASE_CLASS = 0x6e6f7477;

/**
 * The sweep takes a user's expired rows together, and deletes a batch in one statement.
 *
 * Expiring rows of many users interleave, so a batch of the globally oldest expired rows held one
 * or two rows of each of hundreds of users: each user's delete ran the counter trigger on its own,
 * and each swept user's event then read its counts, which subtract the user's expired rows not
 * deleted yet, read through the marks: every batch read the whole backlog again (quadratic in it).
 * Now a batch takes the users of the oldest expired rows in that order and, for each whose lock is
 * free (never waiting, as before), all its expired rows, oldest first, up to the batch's size in
 * all; a swept user is left with none (but the batch's last), so its counts read no expired row.
 * The retention's part is as before. One delete for the batch runs the trigger once, which locks
 * the counter rows sorted. The user locks are the transaction's, held to its end either way.
 */
export class Migration20261129000700_sweep_by_user extends Migration {
  override async up(): Promise<void> {
    this.addSql(sweepFunction);
  }
}

const sweepFunction = `create or replace function notification_sweep(p_cutoff timestamptz, p_limit int)
  returns table (swept_user uuid, deleted bigint) language plpgsql as $fn$
declare
  due record;
  mine uuid[];
  left_in_batch int := p_limit;
  users uuid[] := '{}';
  ids uuid[] := '{}';
begin
  if not pg_try_advisory_xact_lock(${SWEEP_LEASE_CLASS}, 0) then return; end if;
  for due in select o.user_id from (select x.user_id, x.expires_at from notifications x where x.expires_at <= now()
                                      order by x.expires_at limit p_limit) o
              group by o.user_id order by min(o.expires_at), o.user_id loop
    exit when left_in_batch <= 0;
    continue when not pg_try_advisory_xact_lock(${USER_LOCK_CLASS}, hashtext(due.user_id::text));
    select array_agg(e.id) into mine from (select x.id from notifications x where x.user_id = due.user_id and x.expires_at <= now()
                                             order by x.expires_at limit left_in_batch) e;
    users := users || due.user_id;
    ids := ids || coalesce(mine, '{}');
    left_in_batch := left_in_batch - coalesce(cardinality(mine), 0);
  end loop;
  for due in select x.user_id, array_agg(x.id) as retired from (select r.id, r.user_id from notifications r
                where p_cutoff is not null and r.created_at < p_cutoff order by r.created_at limit p_limit) x
              group by x.user_id order by x.user_id loop
    continue when not (due.user_id = any(users) or pg_try_advisory_xact_lock(${USER_LOCK_CLASS}, hashtext(due.user_id::text)));
    users := users || due.user_id;
    ids := ids || due.retired;
  end loop;
  return query
    with gone as (delete from notifications x where x.user_id = any(users) and x.id = any(ids) returning x.user_id)
    select g.user_id, count(*) from gone g group by g.user_id;
end $fn$;`;
