/**
 * The read marks migration on a database that holds feeds written before it (read rows with their
 * seenAt, unread rows, archived rows, rows of several users and types): every row reads the same
 * state afterwards, the counter rows still equal a recount, and a mark-all and marks by id on the
 * migrated rows behave as on new ones. PostgreSQL (a database of its own) with DATABASE_URL, else PGlite.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { COUNTER_DRIFT } from '../support/counter-drift.js';
import { openScratchDatabase } from '../support/scratch-database.js';

const BEFORE_READ_MARKS = 'Migration20261129000300_notification_archive';

const openBefore = () => openScratchDatabase(BEFORE_READ_MARKS, 'read_marks');

let database: Awaited<ReturnType<typeof openBefore>>;
const execute = <T = any>(sql: string, params: unknown[] = []) => database.db.orm.em.fork().execute(sql, params) as Promise<T[]>;
const users = [randomUUID(), randomUUID()];

type Row = { id: string; user_id: string; is_seen: boolean; seen_at: string | null; archived_at: string | null };
let before: Row[];

const stateOf = (rows: Row[]) =>
  rows
    .map((r) => ({
      ...r,
      seen_at: r.seen_at && new Date(r.seen_at).toISOString(),
      archived_at: r.archived_at && new Date(r.archived_at).toISOString(),
    }))
    .sort((a, b) => a.id.localeCompare(b.id));

const recountDrift = () => execute(COUNTER_DRIFT);

beforeAll(async () => {
  database = await openBefore();
  const [org] = await execute<{ id: string }>(`insert into organizations (id, name) values (?, 'old') returning id`, [randomUUID()]);
  for (const [u, userId] of users.entries()) {
    await execute(`insert into users (id, organization_id, email) values (?, ?, ?)`, [userId, org.id, `old${u}@example.com`]);
    // Rows as the service wrote them before: some read (by id or by a mark-all that rewrote rows), some archived.
    await execute(
      `insert into notifications (id, user_id, notification_type, title, body, created_at, is_seen, seen_at, archived_at)
       select gen_random_uuid(), ?, (array['deal_created', 'task_overdue', 'call_missed'])[1 + i % 3], 'old ' || i, 'body',
              now() - i * interval '1 minute', i % 4 = 0, case when i % 4 = 0 then now() - i * interval '30 second' end,
              case when i % 7 = 0 then now() end
         from generate_series(1, 60) i`,
      [userId],
    );
  }
  before = await execute<Row>(`select id, user_id, is_seen, seen_at, archived_at from notifications`);
  expect(await recountDrift().catch(() => 'no states yet')).toBe('no states yet');
  await database.db.orm.migrator.up();
}, 120_000);
afterAll(() => database?.drop());

it('keeps every row state and the counter rows exact', async () => {
  const after = await execute<Row>(`select id, user_id, is_seen, seen_at, archived_at from notification_states()`);
  expect(stateOf(after)).toEqual(stateOf(before));
  expect(await recountDrift()).toEqual([]);
  const [counts] = await execute<{ unread: number; read: number }>(
    `select sum(unread_count)::int as unread, sum(read_count)::int as read from notification_counters where user_id = ?`,
    [users[0]],
  );
  const live = before.filter((r) => r.user_id === users[0] && r.archived_at === null);
  expect({ unread: Number(counts.unread), read: Number(counts.read) }).toEqual({
    unread: live.filter((r) => !r.is_seen).length,
    read: live.filter((r) => r.is_seen).length,
  });
});

it('marks the migrated rows: a mark-all reads unread ones read and keeps the seenAt of rows read before', async () => {
  const [{ updated }] = await execute<{ updated: string }>(`select updated from notification_mark_all(?::uuid, null, true, null)`, [
    users[0],
  ]);
  const live = before.filter((r) => r.user_id === users[0] && r.archived_at === null);
  expect(Number(updated)).toBe(live.filter((r) => !r.is_seen).length);
  const states = new Map(
    stateOf(
      await execute<Row>(`select id, user_id, is_seen, seen_at, archived_at from notification_states() where user_id = ?`, [users[0]]),
    ).map((r) => [r.id, r]),
  );
  for (const row of stateOf(before.filter((r) => r.user_id === users[0]))) {
    const now = states.get(row.id)!;
    if (row.archived_at !== null) expect(now).toEqual(row);
    else if (row.is_seen) expect(now.seen_at).toBe(row.seen_at);
    else expect(now.is_seen).toBe(true);
  }
  expect(await recountDrift()).toEqual([]);
  // The other user's rows are as they were.
  const other = await execute<Row>(`select id, user_id, is_seen, seen_at, archived_at from notification_states() where user_id = ?`, [
    users[1],
  ]);
  expect(stateOf(other)).toEqual(stateOf(before.filter((r) => r.user_id === users[1])));
});
