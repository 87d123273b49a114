/** Counter rows that differ from a recount of every row's state through the read marks: none while the counters are exact. */
export const COUNTER_DRIFT = `select c.user_id, c.notification_type from notification_counters c
    left join (select user_id, notification_type, count(*) filter (where not is_seen) as unread, count(*) filter (where is_seen) as read
                 from notification_states() where archived_at is null group by user_id, notification_type) r
      on r.user_id = c.user_id and r.notification_type = c.notification_type
   where c.unread_count <> coalesce(r.unread, 0) or c.read_count <> coalesce(r.read, 0)`;
