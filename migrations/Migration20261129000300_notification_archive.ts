import { Migration } from '@mikro-orm/migrations';

/**
 * Archived notifications: `archived_at` set while a row is archived. An archived row leaves every
 * badge number, so the counter trigger counts only rows that are not archived: archiving subtracts
 * a row as a delete would, restoring adds it back as an insert would. Existing rows are not
 * archived, so their counter rows stay as they are. The archived listing has its own partial index
 * (few rows), the feed's indexes keep serving the rows that are not archived.
 */
export class Migration20261129000300_notification_archive extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table notifications add column if not exists archived_at timestamptz(3);`);
    this.addSql(`create index if not exists notifications_archived_feed_idx on notifications (user_id, created_at desc, id desc)
      where archived_at is not null;`);
    this.addSql(`create or replace function notification_counters_apply() returns trigger language plpgsql as $fn$
    declare
      added constant text := 'select user_id, notification_type, (not is_seen)::int as unread_delta, is_seen::int as read_delta
                                from new_rows where archived_at is null';
      removed constant text := 'select user_id, notification_type, -((not is_seen)::int) as unread_delta, -(is_seen::int) as read_delta
                                  from old_rows where archived_at is null';
    begin
      if tg_op = 'DELETE' then
        perform 1 from notification_counters c
          where (c.user_id, c.notification_type) in (select distinct user_id, notification_type from old_rows)
          order by c.user_id, c.notification_type
          for update;
        update notification_counters c
          set unread_count = c.unread_count + d.unread, read_count = c.read_count + d.read
          from (select user_id, notification_type, -sum((not is_seen)::int) as unread, -sum(is_seen::int) as read
                  from old_rows where archived_at is null group by user_id, notification_type) d
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
