/**
 * The read marks' compaction reads what needs work, not the marks table: with hundreds of users
 * each holding one settled mark and a few users with piled marks, every compaction call reads only
 * a bounded number of mark rows (counted by PostgreSQL in the call's own transaction), and the
 * piles still come down to one mark per type with the counters exact. A database of its own
 * (PostgreSQL with DATABASE_URL, else PGlite), so no other test's sweep holds the lease or adds marks.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { migrationsList } from '../../migrations/index.js';
import { COUNTER_DRIFT } from '../support/counter-drift.js';
import { openScratchDatabase } from '../support/scratch-database.js';

const SETTLED_USERS = 400;
const PILED_USERS = 3;
const TYPES = ['deal_created', 'task_overdue'];
const LIMIT = 5;

const openLatest = () => openScratchDatabase(migrationsList[migrationsList.length - 1].name, 'marks_scan');
let database: Awaited<ReturnType<typeof openLatest>>;
const execute = <T = any>(sql: string, params: unknown[] = []) => database.db.orm.em.fork().execute(sql, params) as Promise<T[]>;
const piled = Array.from({ length: PILED_USERS }, () => randomUUID());

/** Rows of every type for the users, published now (one transaction each call, so marks' snapshots differ). */
const publish = (users: string[], perType: number) =>
  execute(
    `insert into notifications (id, user_id, notification_type, title, body, created_at)
     select gen_random_uuid(), u, t, 'row ' || i, 'body', now() from unnest(?::uuid[]) u, unnest(?::text[]) t, generate_series(1, ?) i`,
    [`{${users.join(',')}}`, `{${TYPES.join(',')}}`, perType],
  );
const markAll = (user: string, isSeen: boolean) =>
  execute(`select updated from notification_mark_all(?::uuid, null, ?, null)`, [user, isSeen]);

beforeAll(async () => {
  database = await openLatest();
  const [org] = await execute<{ id: string }>(`insert into organizations (id, name) values (?, 'scan') returning id`, [randomUUID()]);
  const settled = (
    await execute<{ id: string }>(
      `insert into users (id, organization_id, email) select gen_random_uuid(), ?, 'settled' || i || '@example.com'
         from generate_series(1, ?) i returning id`,
      [org.id, SETTLED_USERS],
    )
  ).map((u) => u.id);
  for (const [i, user] of piled.entries())
    await execute(`insert into users (id, organization_id, email) values (?, ?, ?)`, [user, org.id, `piled${i}@example.com`]);
  await publish(settled, 2);
  // One settled mark per settled user and type: a single mark, which decides its rows' state.
  for (let i = 0; i < settled.length; i += 100)
    await execute(`select notification_mark_all(u, null, true, null) from unnest(?::uuid[]) u`, [
      `{${settled.slice(i, i + 100).join(',')}}`,
    ]);
  // Piles: repeated mark-alls of one direction between publishes (folded), and an unread one.
  for (let round = 0; round < 3; round++) {
    await publish(piled, 3);
    for (const user of piled) await markAll(user, round !== 1);
  }
  await execute('analyze notification_read_marks');
}, 120_000);
afterAll(() => database?.drop());

const marksOf = (users: string[]) =>
  execute<{ user_id: string; notification_type: string; n: number }>(
    `select user_id, notification_type, count(*)::int as n from notification_read_marks where user_id = any(?::uuid[])
      group by user_id, notification_type order by 1, 2`,
    [`{${users.join(',')}}`],
  );

/**
 * The mark rows read so far (sequentially and through indexes) by this backend's transactions whose
 * statistics are not flushed yet, this one's included: nothing is flushed during a transaction.
 */
const MARK_ROWS_READ = `select seq_tup_read + idx_tup_fetch as n from pg_stat_xact_user_tables where relname = 'notification_read_marks'`;

/** One compaction call and the mark rows it read, counted before and after it in its transaction. */
const compactOnce = () =>
  database.db.orm.em.fork().transactional(async (em) => {
    // An index-only scan reads index entries that these counters miss; a plain index scan counts each.
    await em.execute('set local enable_indexonlyscan = off');
    const [before] = await em.execute(MARK_ROWS_READ);
    const [done] = await em.execute(`select marks_deleted, rows_folded from notification_compact_marks(?::int)`, [LIMIT]);
    const [after] = await em.execute(MARK_ROWS_READ);
    return { work: Number(done.marks_deleted) + Number(done.rows_folded), read: Number(after.n) - Number(before.n) };
  });

const recountDrift = () => execute(COUNTER_DRIFT);

it('reads no settled mark: each call reads a bounded number of mark rows, and the piles come down to one mark per type', async () => {
  const [{ n: total }] = await execute<{ n: number }>('select count(*)::int as n from notification_read_marks');
  const piledMarks = (await marksOf(piled)).reduce((sum, pair) => sum + pair.n, 0);
  expect(total - piledMarks).toBe(SETTLED_USERS * TYPES.length);
  expect(piledMarks).toBeGreaterThan(PILED_USERS * TYPES.length);

  const reads: number[] = [];
  for (let calls = 0; calls < 100; calls++) {
    const { work, read } = await compactOnce();
    reads.push(read);
    if (!work && (await marksOf(piled)).every((pair) => pair.n === 1)) break;
  }
  expect(await marksOf(piled)).toEqual(
    piled.toSorted().flatMap((user_id) => TYPES.map((notification_type) => ({ user_id, notification_type, n: 1 }))),
  );
  // A call reads the marks of the pairs it works on, several times over: never the settled users' marks.
  expect(Math.max(...reads)).toBeLessThan(piledMarks * 8);
  expect(Math.max(...reads)).toBeLessThan(SETTLED_USERS);
  const [{ n: left }] = await execute<{ n: number }>('select count(*)::int as n from notification_read_marks');
  expect(left).toBe((SETTLED_USERS + PILED_USERS) * TYPES.length);
  expect(await recountDrift()).toEqual([]);
});
