import { Migration } from '@mikro-orm/migrations';
import {
  dropIdleOldest,
  dropShadowedMarks,
  findOldest,
  foldOldest,
  loopDeclarations,
} from './Migration20261130000300_read_marks_compaction.js';

/** The class ids of the feed writers' user lock (`userWriteLock` in feed.data.ts) and of the sweep's lease. */
const USER_LOCK_CLASS = 0x6e6f7466;
const SWEEP_LEASE_CLASS = 0x6e6f7477;

/**
 * The read marks' compaction looks only at the pairs (user, type) that may have work: its search
 * grouped the whole `notification_read_marks` table on every call, a cost that grew with every user
 * who ever marked all, where the work grows only with the pairs that changed.
 *
 * `notification_marks_pending` holds those pairs: a mark inserted where the pair has another (a
 * trigger on the marks), and a covered row deleted (a statement trigger on the feed: the sweep's
 * deletes, a user's cascade, any other delete), whose mark may now decide nothing. The function
 * reads up to `p_limit` of them through the primary key, works on each as before (same lease, same
 * user lock taken first and skipped when busy, counters exact at every commit), and drops a pair
 * once it is down to the mark it just kept (it decides rows still there) or to none; a pair cut off
 * by the budget or a busy lock stays. The "no row counted" search goes: rows leave only by deletes,
 * which queue their pairs; a type whose rows are all archived keeps its one mark until its next
 * mark-all (at most one per type). The sweep's users need no argument any more (its deletes queue
 * them), so the function takes only its limit. The backfill queues the pairs the previous search
 * would have found.
 */
export class Migration20261130000400_read_marks_pending extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table if not exists notification_marks_pending (
      user_id uuid not null,
      notification_type text not null,
      primary key (user_id, notification_type)
    );`);
    this.addSql(queueOnMark);
    this.addSql(`create or replace trigger notification_read_marks_pending after insert on notification_read_marks
      for each row execute function notification_marks_queue_mark();`);
    this.addSql(queueOnDelete);
    this.addSql(`create or replace trigger notifications_marks_pending after delete on notifications
      referencing old table as old_rows for each statement execute function notification_marks_queue_deleted();`);
    // After the triggers, whose locks keep marks and deletes out until the commit: no pair is missed.
    this.addSql(`insert into notification_marks_pending (user_id, notification_type)
      select m.user_id, m.notification_type from notification_read_marks m
        left join notification_counters c on c.user_id = m.user_id and c.notification_type = m.notification_type
       group by m.user_id, m.notification_type
      having count(*) > 1 or coalesce(max(c.unread_count + c.read_count), 0) = 0
      on conflict do nothing;`);
    // The signature and the result change, which `create or replace` cannot do.
    this.addSql(`drop function if exists notification_compact_marks(uuid[], int);`);
    this.addSql(compactFunction);
  }
}

/** A mark-all inserts marks under the user lock, so the pair's queue row is written under it too. */
const queueOnMark = `create or replace function notification_marks_queue_mark() returns trigger language plpgsql as $fn$
begin
  insert into notification_marks_pending (user_id, notification_type)
  select new.user_id, new.notification_type
   where exists (select from notification_read_marks m
                  where m.user_id = new.user_id and m.notification_type = new.notification_type and m.gen <> new.gen)
  on conflict do nothing;
  return null;
end $fn$;`;

/** Only rows a mark covered (not archived, marked by id before the pair's latest mark) can leave it deciding nothing. */
const queueOnDelete = `create or replace function notification_marks_queue_deleted() returns trigger language plpgsql as $fn$
begin
  insert into notification_marks_pending (user_id, notification_type)
  select distinct r.user_id, r.notification_type from old_rows r
   where r.archived_at is null
     and exists (select from notification_read_marks m
                  where m.user_id = r.user_id and m.notification_type = r.notification_type and m.gen > r.mark_gen)
   order by 1, 2
  on conflict do nothing;
  return null;
end $fn$;`;

/** The pairs one call looks at: the queue's first `p_limit`, through its primary key. */
const candidatePairs = `select q.user_id, q.notification_type from notification_marks_pending q
               order by q.user_id, q.notification_type limit p_limit`;

const compactFunction = `create or replace function notification_compact_marks(p_limit int,
    out marks_deleted bigint, out rows_folded bigint, out pairs_settled bigint) language plpgsql as $fn$
${loopDeclarations}
begin
  marks_deleted := 0;
  rows_folded := 0;
  pairs_settled := 0;
  if not pg_try_advisory_xact_lock(${SWEEP_LEASE_CLASS}, 0) then return; end if;
  for pair in ${candidatePairs} loop
    exit when budget <= 0;
    continue when not pg_try_advisory_xact_lock(${USER_LOCK_CLASS}, hashtext(pair.user_id::text));
${dropShadowedMarks}
${findOldest}
    if oldest.gen is not null then
${foldOldest}
${dropIdleOldest}
    end if;
    -- Settled: no mark left but the oldest just kept (it decides rows still there), or none at all.
    if not exists (select from notification_read_marks m
                    where m.user_id = pair.user_id and m.notification_type = pair.notification_type and m.gen <> oldest.gen) then
      delete from notification_marks_pending q where q.user_id = pair.user_id and q.notification_type = pair.notification_type;
      pairs_settled := pairs_settled + 1;
    end if;
  end loop;
end $fn$;`;
