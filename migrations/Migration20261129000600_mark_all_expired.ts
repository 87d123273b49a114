import { Migration } from '@mikro-orm/migrations';

/** The class id of the feed writers' user lock (`userWriteLock` in feed.data.ts). */
const USER_LOCK_CLASS = 0x6e6f7466;

/**
 * A mark of everything answers for the rows callers see: an expired row the sweep has not deleted
 * yet is never shown nor counted, so it is not in `updated` nor among the listed ids either. The
 * mark still covers it and the counter rows still move by it: they count it until the sweep deletes
 * it, and the delete subtracts it as the mark left it. The read marks migration's function does the
 * marking under its new name; `notification_mark_all` counts the user's expired rows it changes
 * (a probe of the partial expiry index, empty for users without expiring rows) and takes them out.
 */
export class Migration20261129000600_mark_all_expired extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter function notification_mark_all(uuid, text, boolean, pg_snapshot) rename to notification_mark_all_stored;`);
    this.addSql(markAllFunction);
  }
}

/**
 * The snapshot is taken as the call arrives (before the user's lock, as the marking function
 * takes it), and the expired rows are counted under the lock, before the marking changes them.
 */
const markAllFunction = `create or replace function notification_mark_all(p_user uuid, p_type text, p_is_seen boolean, p_as_of pg_snapshot,
    out updated bigint, out ids uuid[]) language plpgsql as $fn$
declare
  as_of pg_snapshot := coalesce(p_as_of, pg_current_snapshot());
  expired uuid[];
begin
  perform pg_advisory_xact_lock(${USER_LOCK_CLASS}, hashtext(p_user::text));
  select coalesce(array_agg(n.id), '{}') into expired from notifications n
   where n.user_id = p_user and n.expires_at <= now() and n.archived_at is null and (p_type is null or n.notification_type = p_type)
     and (n.inserted_xid is null or pg_visible_in_snapshot(n.inserted_xid, as_of))
     and (notification_seen_state(n.user_id, n.notification_type, n.inserted_xid, n.mark_gen, n.archived_at, n.is_seen, n.seen_at)).is_seen <> p_is_seen;
  select m.updated, m.ids into updated, ids from notification_mark_all_stored(p_user, p_type, p_is_seen, as_of) m;
  updated := updated - cardinality(expired);
  if ids is not null then
    ids := array(select i from unnest(ids) i where i <> all (expired));
    if cardinality(ids) <> updated then ids := null; end if;
  end if;
end $fn$;`;
