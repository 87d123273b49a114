import { Migration } from '@mikro-orm/migrations';

/** The class ids of the feed writers' user lock (`userWriteLock` in feed.data.ts) and of the sweep's lease. */
const USER_LOCK_CLASS = 0x6e6f7466;
const SWEEP_LEASE_CLASS = 0x6e6f7477;

/**
 * `notification_compact_marks`: deletes read marks that no longer decide any row's state, so
 * `notification_read_marks` does not grow with every mark-all. A row reads as if the marks that
 * cover it were applied in turn (read keeps an earlier `seen_at`, unread clears it), so:
 *
 * - a mark is redundant when a later unread mark covers every row it covers (checked on the rows
 *   the later mark's snapshot does not see, through `notifications_inserted_idx`): nothing before
 *   an unread mark shows through it;
 * - the oldest mark of a user and type is folded: the rows it covers whose own state differs from
 *   the one it gives them get that state written into them with `mark_gen` at the mark's number
 *   (so later marks cover them as before), in bounded batches; once none is left the mark decides
 *   nothing and goes. Rows are rewritten only while a later mark exists: a user's single mark stays
 *   (reads gate it per row) unless it covers no row whose state it changes (its rows gone).
 *
 * Pairs looked at: more than one mark, a user the sweep just swept (`p_users`), or no row counted.
 * Runs under the sweep's lease, and per user under the user lock (skipped when busy), taken before
 * any row as every writer does; a folded row's state is unchanged, so the counter trigger moves
 * no counter row, and counters stay exact at every commit. `p_limit` bounds rows and marks.
 */
export class Migration20261130000300_read_marks_compaction extends Migration {
  override async up(): Promise<void> {
    this.addSql(compactFunction);
  }
}

/** The pair's rows that `mark` (an alias or a record) covers: not archived, not marked by id since, published within its snapshot. */
export const coveredBy = (mark: string) => `x.user_id = pair.user_id and x.notification_type = pair.notification_type
       and x.archived_at is null and x.mark_gen < ${mark}.gen
       and (x.inserted_xid is null or pg_visible_in_snapshot(x.inserted_xid, ${mark}.as_of))`;

/** Deletes the pair's marks that a later unread mark covers row for row (a statement of the loop over pairs). */
export const dropShadowedMarks = `    -- Marks a later unread mark covers row for row: no row it covers escapes the later mark's snapshot.
    with gone as (
      delete from notification_read_marks m
       where m.user_id = pair.user_id and m.notification_type = pair.notification_type
         and exists (select from notification_read_marks u
                      where u.user_id = m.user_id and u.notification_type = m.notification_type and u.gen > m.gen and not u.is_seen
                        and not exists (select from notifications x where ${coveredBy('m')}
                                           and x.inserted_xid >= pg_snapshot_xmin(u.as_of) and not pg_visible_in_snapshot(x.inserted_xid, u.as_of)))
      returning 1)
    select count(*) into n from gone;
    marks_deleted := marks_deleted + n;
    budget := budget - n;`;

/** The pair's oldest mark, and whether a later one exists, into `oldest` (all null without marks). */
export const findOldest = `    select m.gen, m.as_of, m.is_seen, m.marked_at,
           exists (select from notification_read_marks l where l.user_id = m.user_id and l.notification_type = m.notification_type and l.gen > m.gen) as has_later
      into oldest from notification_read_marks m
     where m.user_id = pair.user_id and m.notification_type = pair.notification_type order by m.gen limit 1;`;

/** Folds the oldest mark into up to `budget` rows it changes, while a later mark exists. */
export const foldOldest = `    if oldest.has_later and budget > 0 then
      with folded as (
        update notifications set is_seen = oldest.is_seen, seen_at = case when oldest.is_seen then oldest.marked_at end, mark_gen = oldest.gen
         where id in (select x.id from notifications x where ${coveredBy('oldest')} and x.is_seen <> oldest.is_seen limit budget)
        returning 1)
      select count(*) into n from folded;
      rows_folded := rows_folded + n;
      budget := budget - n;
    end if;`;

/** Deletes the oldest mark once no row it covers has an own state other than the one it gives. */
export const dropIdleOldest = `    if not exists (select from notifications x where ${coveredBy('oldest')} and x.is_seen <> oldest.is_seen) then
      delete from notification_read_marks m where m.user_id = pair.user_id and m.notification_type = pair.notification_type and m.gen = oldest.gen;
      marks_deleted := marks_deleted + 1;
      budget := budget - 1;
    end if;`;

/** The variables of the loop over pairs and its statements. */
export const loopDeclarations = `declare
  pair record;
  oldest record;
  budget int := p_limit;
  n bigint;`;

const compactFunction = `create or replace function notification_compact_marks(p_users uuid[], p_limit int,
    out marks_deleted bigint, out rows_folded bigint) language plpgsql as $fn$
${loopDeclarations}
begin
  marks_deleted := 0;
  rows_folded := 0;
  if not pg_try_advisory_xact_lock(${SWEEP_LEASE_CLASS}, 0) then return; end if;
  for pair in select m.user_id, m.notification_type from notification_read_marks m
                left join notification_counters c on c.user_id = m.user_id and c.notification_type = m.notification_type
               group by m.user_id, m.notification_type
              having count(*) > 1 or m.user_id = any(p_users) or coalesce(max(c.unread_count + c.read_count), 0) = 0
               order by m.user_id, m.notification_type limit p_limit loop
    exit when budget <= 0;
    continue when not pg_try_advisory_xact_lock(${USER_LOCK_CLASS}, hashtext(pair.user_id::text));
${dropShadowedMarks}
${findOldest}
    continue when oldest.gen is null;
${foldOldest}
${dropIdleOldest}
  end loop;
end $fn$;`;
