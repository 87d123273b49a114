import { Migration } from '@mikro-orm/migrations';

/**
 * The counter trigger's delete branch named no columns (`unread_delta` and `read_delta` came only
 * from the insert branch's aliases), so every DELETE of notifications failed, and with it deleting
 * a user who had any. Deletes now subtract with an UPDATE instead of an upsert: a deleted row was
 * counted when it was inserted, so its counter row exists, unless that is being deleted too (a
 * user's cascade), and then there is nothing left to keep exact. Counter rows are still locked in
 * (user, type) order first, as every other writer takes them.
 */
export class Migration20261127000000_counter_deletes extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create or replace function notification_counters_apply() returns trigger language plpgsql as $fn$
    declare
      added constant text := 'select user_id, notification_type, (not is_seen)::int as unread_delta, is_seen::int as read_delta from new_rows';
      removed constant text := 'select user_id, notification_type, -((not is_seen)::int) as unread_delta, -(is_seen::int) as read_delta from old_rows';
    begin
      if tg_op = 'DELETE' then
        perform 1 from notification_counters c
          where (c.user_id, c.notification_type) in (select distinct user_id, notification_type from old_rows)
          order by c.user_id, c.notification_type
          for update;
        update notification_counters c
          set unread_count = c.unread_count + d.unread, read_count = c.read_count + d.read
          from (select user_id, notification_type, -sum((not is_seen)::int) as unread, -sum(is_seen::int) as read
                  from old_rows group by user_id, notification_type) d
          where c.user_id = d.user_id and c.notification_type = d.notification_type;
        return null;
      end if;
      -- Transition tables exist only for their own event, so the source is chosen per event.
      execute format($sql$
        insert into notification_counters as c (user_id, notification_type, unread_count, read_count)
        select user_id, notification_type, sum(unread_delta), sum(read_delta)
        from (%s) deltas
        group by user_id, notification_type
        having sum(unread_delta) <> 0 or sum(read_delta) <> 0
        order by user_id, notification_type
        on conflict (user_id, notification_type) do update
          set unread_count = c.unread_count + excluded.unread_count,
              read_count = c.read_count + excluded.read_count
      $sql$, case tg_op when 'INSERT' then added else added || ' union all ' || removed end);
      return null;
    end $fn$;`);
  }
}
