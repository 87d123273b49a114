import { Migration } from '@mikro-orm/migrations';

/**
 * The counter trigger with one static statement per event instead of a statement text run with
 * `execute`: PL/pgSQL plans a static statement once per session and keeps the plan, where
 * `execute` planned the deltas (the inlined state, twice for an update) on every mark. The same
 * statements, and the same lock order, as Migration20261130000100's.
 */
export class Migration20261130000200_counters_static extends Migration {
  override async up(): Promise<void> {
    this.addSql(countersFunction);
  }
}

const state = `cross join lateral notification_seen_states(r.user_id, r.notification_type, r.inserted_xid, r.mark_gen, r.archived_at, r.is_seen, r.seen_at) s`;
const added = `select r.user_id, r.notification_type, (not s.is_seen)::int as unread_delta, s.is_seen::int as read_delta,
        (r.expires_at is not null)::int as expiring_delta
      from new_rows r ${state} where r.archived_at is null`;
const removed = `select r.user_id, r.notification_type, -((not s.is_seen)::int) as unread_delta, -(s.is_seen::int) as read_delta,
        -((r.expires_at is not null)::int) as expiring_delta
      from old_rows r ${state} where r.archived_at is null`;
// An inserted row is in no mark yet: its own state is its state.
const inserted = `select user_id, notification_type, (not is_seen)::int as unread_delta, is_seen::int as read_delta,
        (expires_at is not null)::int as expiring_delta
      from new_rows where archived_at is null`;
const upsert = (
  deltas: string,
) => `insert into notification_counters as c (user_id, notification_type, unread_count, read_count, expiring_count)
    select user_id, notification_type, sum(unread_delta), sum(read_delta), sum(expiring_delta)
    from (${deltas}) deltas
    group by user_id, notification_type
    having sum(unread_delta) <> 0 or sum(read_delta) <> 0 or sum(expiring_delta) <> 0
    order by user_id, notification_type
    on conflict (user_id, notification_type) do update
      set unread_count = c.unread_count + excluded.unread_count,
          read_count = c.read_count + excluded.read_count,
          expiring_count = c.expiring_count + excluded.expiring_count`;

// Transition tables exist only for their own event, so each event has its own statement.
const countersFunction = `create or replace function notification_counters_apply() returns trigger language plpgsql as $fn$
begin
  if tg_op = 'INSERT' then
    ${upsert(inserted)};
  elsif tg_op = 'UPDATE' then
    ${upsert(`${added} union all ${removed}`)};
  else
    perform 1 from notification_counters c
      where (c.user_id, c.notification_type) in (select distinct user_id, notification_type from old_rows)
      order by c.user_id, c.notification_type
      for update;
    update notification_counters c
      set unread_count = c.unread_count + d.unread, read_count = c.read_count + d.read, expiring_count = c.expiring_count + d.expiring
      from (select user_id, notification_type, sum(unread_delta) as unread, sum(read_delta) as read, sum(expiring_delta) as expiring
              from (${removed}) deltas group by user_id, notification_type) d
      where c.user_id = d.user_id and c.notification_type = d.notification_type;
  end if;
  return null;
end $fn$;`;
