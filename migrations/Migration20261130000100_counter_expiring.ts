import { Migration } from '@mikro-orm/migrations';

/**
 * `notification_counters.expiring_count`: how many of the rows a counter row counts carry an
 * `expires_at`. Counts and feed totals subtract the expired rows the sweep has not deleted yet;
 * with no expiring row among the counter rows read there is nothing to subtract, so readers take
 * the counter rows alone and probe the expiry index only when some row may expire (feed.data.ts).
 * The trigger is otherwise the counters' inlined-state one (Migration20261129000900).
 */
export class Migration20261130000100_counter_expiring extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table notification_counters add column if not exists expiring_count integer not null default 0;`);
    this.addSql(countersFunction);
    this.addSql(`update notification_counters c set expiring_count = e.n
      from (select user_id, notification_type, count(*)::int as n from notifications
             where expires_at is not null and archived_at is null group by user_id, notification_type) e
     where c.user_id = e.user_id and c.notification_type = e.notification_type;`);
  }
}

const state = (rows: string) =>
  `cross join lateral notification_seen_states(${rows}.user_id, ${rows}.notification_type, ${rows}.inserted_xid, ${rows}.mark_gen, ${rows}.archived_at, ${rows}.is_seen, ${rows}.seen_at) s`;

const countersFunction = `create or replace function notification_counters_apply() returns trigger language plpgsql as $fn$
declare
  added constant text := 'select r.user_id, r.notification_type, (not s.is_seen)::int as unread_delta, s.is_seen::int as read_delta,
      (r.expires_at is not null)::int as expiring_delta
    from new_rows r ${state('r')}
   where r.archived_at is null';
  removed constant text := 'select r.user_id, r.notification_type, -((not s.is_seen)::int) as unread_delta, -(s.is_seen::int) as read_delta,
      -((r.expires_at is not null)::int) as expiring_delta
    from old_rows r ${state('r')}
   where r.archived_at is null';
  -- An inserted row is in no mark yet: its own state is its state.
  inserted constant text := 'select user_id, notification_type, (not is_seen)::int as unread_delta, is_seen::int as read_delta,
      (expires_at is not null)::int as expiring_delta
    from new_rows where archived_at is null';
begin
  if tg_op = 'DELETE' then
    perform 1 from notification_counters c
      where (c.user_id, c.notification_type) in (select distinct user_id, notification_type from old_rows)
      order by c.user_id, c.notification_type
      for update;
    execute format($sql$
      update notification_counters c
        set unread_count = c.unread_count + d.unread, read_count = c.read_count + d.read, expiring_count = c.expiring_count + d.expiring
        from (select user_id, notification_type, sum(unread_delta) as unread, sum(read_delta) as read, sum(expiring_delta) as expiring
                from (%s) deltas group by user_id, notification_type) d
        where c.user_id = d.user_id and c.notification_type = d.notification_type
    $sql$, removed);
    return null;
  end if;
  -- Transition tables exist only for their own event, so the source is chosen per event.
  execute format($sql$
    insert into notification_counters as c (user_id, notification_type, unread_count, read_count, expiring_count)
    select user_id, notification_type, sum(unread_delta), sum(read_delta), sum(expiring_delta)
    from (%s) deltas
    group by user_id, notification_type
    having sum(unread_delta) <> 0 or sum(read_delta) <> 0 or sum(expiring_delta) <> 0
    order by user_id, notification_type
    on conflict (user_id, notification_type) do update
      set unread_count = c.unread_count + excluded.unread_count,
          read_count = c.read_count + excluded.read_count,
          expiring_count = c.expiring_count + excluded.expiring_count
  $sql$, case tg_op when 'INSERT' then inserted else added || ' union all ' || removed end);
  return null;
end $fn$;`;
