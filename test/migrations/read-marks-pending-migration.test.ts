/**
 * The read marks' queue migration on a database whose marks piled up before it: the queue starts
 * with the pairs (user, type) the previous compaction would have looked at (more than one mark, or
 * no row counted) and no settled pair, and compaction through the queue brings the piles down to
 * one mark per pair, deletes the marks whose rows are gone, leaves settled marks alone, and keeps
 * the counters exact. PostgreSQL (a database of its own) with DATABASE_URL, else PGlite.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { COUNTER_DRIFT } from '../support/counter-drift.js';
import { openScratchDatabase } from '../support/scratch-database.js';

const BEFORE_QUEUE = 'Migration20261130000300_read_marks_compaction';
const TYPES = ['deal_created', 'task_overdue'];

const openBefore = () => openScratchDatabase(BEFORE_QUEUE, 'marks_queue');
let database: Awaited<ReturnType<typeof openBefore>>;
const execute = <T = any>(sql: string, params: unknown[] = []) => database.db.orm.em.fork().execute(sql, params) as Promise<T[]>;
const [piled, settled, rowless] = [randomUUID(), randomUUID(), randomUUID()];

const publish = (user: string, perType: number) =>
  execute(
    `insert into notifications (id, user_id, notification_type, title, body, created_at)
     select gen_random_uuid(), ?, t, 'row ' || i, 'body', now() from unnest(?::text[]) t, generate_series(1, ?) i`,
    [user, `{${TYPES.join(',')}}`, perType],
  );
const markAll = (user: string, isSeen: boolean) =>
  execute(`select updated from notification_mark_all(?::uuid, null, ?, null)`, [user, isSeen]);
const pairs = <T>(rows: T[]) => rows.map((r) => JSON.stringify(r)).sort();
const queued = async () => pairs(await execute(`select user_id, notification_type from notification_marks_pending`));
const marks = async () =>
  pairs(await execute(`select user_id, notification_type, count(*)::int as n from notification_read_marks group by 1, 2`));
const pair = (user_id: string, notification_type: string, n?: number) => ({ user_id, notification_type, ...(n !== undefined && { n }) });

const recountDrift = () => execute(COUNTER_DRIFT);

beforeAll(async () => {
  database = await openBefore();
  const [org] = await execute<{ id: string }>(`insert into organizations (id, name) values (?, 'old') returning id`, [randomUUID()]);
  for (const [i, user] of [piled, settled, rowless].entries())
    await execute(`insert into users (id, organization_id, email) values (?, ?, ?)`, [user, org.id, `queue${i}@example.com`]);
  // A pile: mark-alls of one direction between publishes, and an unread one between them.
  for (const isSeen of [true, false, true]) {
    await publish(piled, 3);
    await markAll(piled, isSeen);
  }
  await publish(settled, 3);
  await markAll(settled, true);
  // One mark per type whose rows are then all gone (deleted before the queue's trigger exists).
  await publish(rowless, 2);
  await markAll(rowless, true);
  await execute(`delete from notifications where user_id = ?`, [rowless]);
  await database.db.orm.migrator.up();
}, 120_000);
afterAll(() => database?.drop());

it('queues the piled pairs and the pairs without rows, not the settled ones', async () => {
  expect(await queued()).toEqual(pairs(TYPES.flatMap((t) => [pair(piled, t), pair(rowless, t)])));
});

it('compacts through the queue until it is empty: one mark per piled pair, none without rows, settled ones kept', async () => {
  for (let calls = 0; calls < 50 && (await queued()).length > 0; calls++) await execute(`select * from notification_compact_marks(2)`);
  expect(await queued()).toEqual([]);
  expect(await marks()).toEqual(pairs(TYPES.flatMap((t) => [pair(piled, t, 1), pair(settled, t, 1)])));
  expect(await recountDrift()).toEqual([]);
});

it('queues a pair again when a row its mark covers is deleted, or when another mark-all adds a mark to it', async () => {
  await execute(`delete from notifications where id = (select id from notifications where user_id = ? and notification_type = ? limit 1)`, [
    settled,
    TYPES[0],
  ]);
  expect(await queued()).toEqual(pairs([pair(settled, TYPES[0])]));
  await publish(piled, 1);
  await markAll(piled, true);
  expect(await queued()).toEqual(pairs([pair(settled, TYPES[0]), ...TYPES.map((t) => pair(piled, t))]));
});
