import { Migration } from '@mikro-orm/migrations';

/** The class id of the feed writers' user lock (`userWriteLock` in feed.data.ts). */
const USER_LOCK_CLASS = 0x6e6f7466;
/** A mark-all's event names the changed rows when there are at most this many, found among this many newest rows. */
const IDS_LISTED_MAX = 500;
const IDS_SCANNED_MAX = 1000;

/**
 * Mark-all in constant time: instead of rewriting every row, it records a "read up to" mark per
 * user and type (`notification_read_marks`: the snapshot of the rows it covers, read or unread,
 * when) and moves the counter rows by the number of rows it changed. A row's state is its own
 * unless a mark made after the row was last marked by id (`mark_gen` below the mark's `gen`)
 * covers it; among several such marks, a row reads as if each had been applied to it in turn, so a
 * row already read keeps its `seen_at` (`notification_seen_state`).
 *
 * Existing rows keep their own state: there are no marks yet, so nothing moves and no row
 * changes; `mark_gen` is added with a constant default (a catalog change, no table rewrite).
 * The counter trigger now counts each row's state as read through the marks.
 */
export class Migration20261129000400_read_marks extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table notifications add column if not exists mark_gen bigint not null default 0;`);
    this.addSql(`alter table notification_counters add column if not exists mark_gen bigint not null default 0;`);
    this.addSql(`create table if not exists notification_read_marks (
      user_id uuid not null references users (id) on delete cascade,
      notification_type text not null,
      gen bigint not null,
      as_of pg_snapshot not null,
      is_seen boolean not null,
      marked_at timestamptz(3) not null,
      primary key (user_id, notification_type, gen)
    );`);
    // Rows published after a mark-all's snapshot, found without reading the rest of the feed.
    this.addSql(`create index if not exists notifications_inserted_idx on notifications (user_id, notification_type, inserted_xid);`);
    this.addSql(seenStateFunction);
    this.addSql(statesFunction);
    this.addSql(countersFunction);
    this.addSql(markAllFunction);
  }
}

/**
 * A row's state through the marks that cover it (made after its own last mark, seeing its insert;
 * none while it is archived): the last one's read state; read since the first read mark after the
 * last unread one, or since its own mark if no unread mark came between.
 */
export const seenStateFunction = `create or replace function notification_seen_state(
    p_user uuid, p_type text, p_xid xid8, p_gen bigint, p_archived timestamptz, p_is_seen boolean, p_seen_at timestamptz,
    out is_seen boolean, out seen_at timestamptz) language sql stable as $fn$
  with covering as materialized (
    select m.gen, m.is_seen, m.marked_at from notification_read_marks m
     where p_archived is null and m.user_id = p_user and m.notification_type = p_type and m.gen > p_gen
       and (p_xid is null or pg_visible_in_snapshot(p_xid, m.as_of))),
  latest as (select c.gen, c.is_seen from covering c order by c.gen desc limit 1),
  unread as (select max(c.gen) as gen from covering c where not c.is_seen)
  select coalesce((select l.is_seen from latest l), p_is_seen),
         case when not exists (select 1 from latest) then p_seen_at
              when not (select l.is_seen from latest l) then null
              when (select u.gen from unread u) is null and p_is_seen then p_seen_at
              else (select c.marked_at from covering c where c.is_seen and c.gen > coalesce((select u.gen from unread u), 0)
                     order by c.gen limit 1) end
$fn$;`;

/** Every row with its state as callers see it: what a recount of the counters reads. */
const statesFunction = `create or replace function notification_states()
  returns table (id uuid, user_id uuid, notification_type text, is_seen boolean, seen_at timestamptz, archived_at timestamptz)
  language sql stable as $fn$
  select n.id, n.user_id, n.notification_type, s.is_seen, s.seen_at, n.archived_at from notifications n
   cross join lateral notification_seen_state(n.user_id, n.notification_type, n.inserted_xid, n.mark_gen, n.archived_at, n.is_seen, n.seen_at) s
$fn$;`;

/** The counter trigger, counting rows that are not archived by their state through the marks. */
export const countersFunction = `create or replace function notification_counters_apply() returns trigger language plpgsql as $fn$
declare
  added constant text := 'select r.user_id, r.notification_type, (not s.is_seen)::int as unread_delta, s.is_seen::int as read_delta
    from new_rows r cross join lateral notification_seen_state(r.user_id, r.notification_type, r.inserted_xid, r.mark_gen, r.archived_at, r.is_seen, r.seen_at) s
   where r.archived_at is null';
  removed constant text := 'select r.user_id, r.notification_type, -((not s.is_seen)::int) as unread_delta, -(s.is_seen::int) as read_delta
    from old_rows r cross join lateral notification_seen_state(r.user_id, r.notification_type, r.inserted_xid, r.mark_gen, r.archived_at, r.is_seen, r.seen_at) s
   where r.archived_at is null';
  -- An inserted row is in no mark yet: its own state is its state.
  inserted constant text := 'select user_id, notification_type, (not is_seen)::int as unread_delta, is_seen::int as read_delta
    from new_rows where archived_at is null';
begin
  if tg_op = 'DELETE' then
    perform 1 from notification_counters c
      where (c.user_id, c.notification_type) in (select distinct user_id, notification_type from old_rows)
      order by c.user_id, c.notification_type
      for update;
    execute format($sql$
      update notification_counters c
        set unread_count = c.unread_count + d.unread, read_count = c.read_count + d.read
        from (select user_id, notification_type, sum(unread_delta) as unread, sum(read_delta) as read from (%s) deltas
               group by user_id, notification_type) d
        where c.user_id = d.user_id and c.notification_type = d.notification_type
    $sql$, removed);
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
  $sql$, case tg_op when 'INSERT' then inserted else added || ' union all ' || removed end);
  return null;
end $fn$;`;

/**
 * Marks every row of the user's (of one type) that \`p_as_of\` sees and that is not archived; one
 * mark and one counter update per type, whatever the feed size. The snapshot is taken before
 * the user's lock (unless the caller took it earlier, as it arrived); after the lock every
 * statement sees every earlier writer's commit. Lock order as every writer's: the user, then the
 * counter rows (sorted); no feed row is locked. The rows the counters count that the snapshot does
 * not see (published since) are counted apart, through the index on their insert.
 */
const markAllFunction = `create or replace function notification_mark_all(p_user uuid, p_type text, p_is_seen boolean, p_as_of pg_snapshot,
    out updated bigint, out ids uuid[]) language plpgsql as $fn$
declare
  as_of pg_snapshot := coalesce(p_as_of, pg_current_snapshot());
  c record;
  later bigint;
  types text[] := '{}';
  changes bigint[] := '{}';
  gens bigint[] := '{}';
begin
  perform pg_advisory_xact_lock(${USER_LOCK_CLASS}, hashtext(p_user::text));
  updated := 0;
  for c in select notification_type, mark_gen, case when p_is_seen then unread_count else read_count end as others
             from notification_counters
            where user_id = p_user and (p_type is null or notification_type = p_type)
            order by notification_type for update loop
    select count(*) into later from notifications n
     where n.user_id = p_user and n.notification_type = c.notification_type and n.archived_at is null
       and n.inserted_xid >= pg_snapshot_xmin(as_of) and not pg_visible_in_snapshot(n.inserted_xid, as_of)
       and (notification_seen_state(n.user_id, n.notification_type, n.inserted_xid, n.mark_gen, n.archived_at, n.is_seen, n.seen_at)).is_seen <> p_is_seen;
    if c.others - later > 0 then
      types := types || c.notification_type::text;
      changes := changes || (c.others - later);
      gens := gens || (c.mark_gen + 1);
      updated := updated + c.others - later;
    end if;
  end loop;
  -- A few changed rows are named (the event lists them), if the newest rows hold them all.
  if updated between 1 and ${IDS_LISTED_MAX} then
    select array_agg(r.id) into ids from (
      select n.id from notifications n
       where n.user_id = p_user and n.notification_type = any(types) and n.archived_at is null
       order by n.created_at desc, n.id desc limit ${IDS_SCANNED_MAX}) r
      join notifications n on n.id = r.id
     where (n.inserted_xid is null or pg_visible_in_snapshot(n.inserted_xid, as_of))
       and (notification_seen_state(n.user_id, n.notification_type, n.inserted_xid, n.mark_gen, n.archived_at, n.is_seen, n.seen_at)).is_seen <> p_is_seen;
    if coalesce(cardinality(ids), 0) <> updated then ids := null; end if;
  end if;
  for i in 1 .. coalesce(array_length(types, 1), 0) loop
    insert into notification_read_marks (user_id, notification_type, gen, as_of, is_seen, marked_at)
      values (p_user, types[i], gens[i], as_of, p_is_seen, now());
    update notification_counters
       set mark_gen = gens[i],
           unread_count = unread_count + case when p_is_seen then -changes[i] else changes[i] end,
           read_count = read_count + case when p_is_seen then changes[i] else -changes[i] end
     where user_id = p_user and notification_type = types[i];
  end loop;
end $fn$;`;
