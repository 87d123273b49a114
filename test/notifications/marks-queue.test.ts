import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish, startService, usingRealBackends, type HttpResult, type Provisioned, type TestService } from '../support/harness.js';

/**
 * A user's marks wait for their turn per user on an instance, in memory rather than on a pooled
 * connection: the one running and at most MARKS_MAX_IN_FLIGHT_PER_USER (4) waiting are accepted,
 * the next is `429 concurrency_limit` with Retry-After (RATE_LIMITED on /graphql), a waiting
 * caller that goes away gives up its place, and counts stay exact. Other users are not held up
 * (test/processes/marks-starvation.test.ts measures that).
 */

let service: TestService;
beforeAll(async () => {
  service = await startService();
});
afterAll(() => service?.close());

const MAX_WAITING = 4;
/** Enough rows for a mark of all of them to outlast the burst's arrival on PostgreSQL. */
const ROWS = usingRealBackends ? 20_000 : 5_000;

/** `rows` unread rows for the user in one statement (the counter trigger counts them as for a publish). */
async function bigFeed(user: Provisioned, rows: number) {
  await service.sql(
    `insert into notifications (id, user_id, notification_type, title, body, created_at)
     select gen_random_uuid(), ?, (array['call_missed', 'deal_created', 'task_overdue'])[1 + i % 3], 'row ' || i, 'body', now() - i * interval '1 second'
       from generate_series(1, ?) i`,
    [user.userId, rows],
  );
}

const markAll = (user: Provisioned, isSeen: boolean, signal?: AbortSignal) =>
  service.request('/api/v1/call', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${user.key}` },
    body: JSON.stringify({ operationId: 'markAllNotificationsRead', variables: { isSeen } }),
    signal,
  });

const markIds = (user: Provisioned, notificationIds: string[], signal?: AbortSignal) =>
  service.request('/api/v1/call', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${user.key}` },
    body: JSON.stringify({ operationId: 'markNotificationsRead', variables: { notificationIds, isSeen: true } }),
    signal,
  });

function expectRefused(result: HttpResult) {
  expect(result.status, result.text).toBe(429);
  expect(result.body.error.code).toBe('concurrency_limit');
  expect(result.headers.get('retry-after')).toBe('1');
}

/** The counts the service answers, and the same recounted from the rows. */
async function countsAndRecount(user: Provisioned) {
  const counts = await service.call(user.key, { operationId: 'getNotificationCounts', variables: {} });
  const rows = await service.sql<{ notification_type: string; unread: number; read: number }>(
    `select notification_type, (count(*) filter (where not is_seen))::int as unread, (count(*) filter (where is_seen))::int as read
       from notification_states() where user_id = ? group by notification_type order by notification_type`,
    [user.userId],
  );
  const byType = rows.map((r) => ({ notificationType: r.notification_type, unreadCount: Number(r.unread), readCount: Number(r.read) }));
  const recount = {
    unreadCount: byType.reduce((a, t) => a + t.unreadCount, 0),
    readCount: byType.reduce((a, t) => a + t.readCount, 0),
    byType,
  };
  return { counts: counts.body.data, recount };
}

/** Marks of this instance waiting for their turn (its metrics). */
async function waitingMarks() {
  const metrics = await service.request('/metrics', { headers: { authorization: `Bearer ${service.platformToken}` } });
  return Number(/^crm_feed_writes_waiting (\d+)$/m.exec(metrics.text)?.[1] ?? NaN);
}

/** Holds the user's write lock (as a mark's statement takes it) from a session of its own until released. */
async function holdUserLock(userId: string) {
  const session = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await session.connect();
  // In a transaction, as the statements take it: so it is held through a pooler in transaction mode too.
  await session.query('begin');
  await session.query('select pg_advisory_xact_lock($1, hashtext($2::text))', [0x6e6f7466, userId]);
  let ended: Promise<void> | undefined;
  return { session, release: () => (ended ??= session.query('rollback').then(() => session.end())) };
}

async function eventually(condition: () => Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('marks of one user at once', () => {
  it(
    'accepts the running mark and 4 waiting; the rest are 429 concurrency_limit with Retry-After; counts stay exact',
    { timeout: 120_000 },
    async () => {
      const user = await service.provision();
      const other = await service.provision();
      await bigFeed(user, ROWS);
      const otherIds = await publish(service, other.userId, [{ title: 'another user' }]);

      // Mark-alls of the whole feed, alternately read and unread, so each one has all its rows to
      // change. On PostgreSQL another session holds the user's lock (the one every mark's statement
      // takes) until the refusals are in, so the first mark runs and waits for it whatever the
      // machine's speed: exactly it and 4 waiting are accepted. The embedded database runs each
      // statement on the event loop this test's client shares, so there the calls arrive one by
      // one, each after the last one's statement, and none has to wait.
      const lock = usingRealBackends ? await holdUserLock(user.userId) : null;
      let answered = 0;
      const calls = Array.from({ length: 16 }, (_, i) => markAll(user, i % 2 === 0).finally(() => answered++));
      if (lock) await eventually(async () => answered === 16 - 1 - MAX_WAITING).finally(lock.release);
      const results = await Promise.all(calls);
      const accepted = results.filter((r) => r.status === 200);
      const refused = results.filter((r) => r.status !== 200);
      for (const result of refused) expectRefused(result);
      expect(accepted.length).toBeGreaterThanOrEqual(1);
      if (usingRealBackends) expect(accepted).toHaveLength(1 + MAX_WAITING);
      // Each marks the whole feed, or nothing when the one before it marked it the same way.
      for (const result of accepted) expect([0, ROWS]).toContain(result.body.data.updatedCount);

      const { counts, recount } = await countsAndRecount(user);
      expect(counts).toEqual(recount);
      expect(counts.unreadCount + counts.readCount).toBe(ROWS);
      // Another user's marks were never in this user's queue.
      expect((await markIds(other, otherIds)).body.data).toEqual({ success: true, updatedCount: 1 });
      // Nothing is kept for a user with no mark in flight.
      expect(service.app.services.feedWrites.queue.busyKeys).toBe(0);
      expect(await waitingMarks()).toBe(0);
      // Every mark-all marks the whole feed: it is left all read or all unread.
      expect([0, ROWS]).toContain(counts.readCount);
    },
  );
});

describe.skipIf(!process.env.DATABASE_URL)('a full queue, held by a mark waiting in the database (PostgreSQL)', () => {
  it(
    'refuses the next mark on both routes; a waiting caller that leaves frees its place and its mark is not run',
    { timeout: 60_000 },
    async () => {
      const user = await service.provision();
      const ids = await publish(
        service,
        user.userId,
        Array.from({ length: 12 }, (_, i) => ({ title: `row ${i}` })),
      );
      // Another session holds the user's lock (the one every mark's statement takes): the first
      // mark runs and waits for it in the database; the next 4 wait for their turn in the queue.
      const lock = await holdUserLock(user.userId);
      try {
        const { pid } = (await lock.session.query('select pg_backend_pid() as pid')).rows[0];
        const running = markIds(user, [ids[0]]);
        await eventually(async () => {
          // In a transaction pg_stat_activity is read once and kept: read it afresh each time.
          await lock.session.query('select pg_stat_clear_snapshot()');
          const { rows } = await lock.session.query('select 1 from pg_stat_activity where $1::int = any(pg_blocking_pids(pid))', [pid]);
          return rows.length === 1;
        });
        const leaving = [new AbortController(), new AbortController()];
        const staying = [markIds(user, [ids[1]]), markIds(user, [ids[2]])];
        const gone = leaving.map((abort, i) => markIds(user, [ids[3 + i]], abort.signal).catch(() => 'aborted'));
        await eventually(async () => (await waitingMarks()) === MAX_WAITING);

        expectRefused(await markIds(user, [ids[5]]));
        expectRefused(await markAll(user, true));
        const viaGraphql = await service.graphql(
          'mutation($ids: [ID!]!) { markNotificationsRead(notificationIds: $ids, isSeen: true) { updatedCount } }',
          { ids: [ids[5]] },
          user.key,
        );
        expect(viaGraphql.body.errors[0].extensions.code).toBe('RATE_LIMITED');

        // Two waiting callers go away: their places are free at once.
        for (const abort of leaving) abort.abort();
        expect(await Promise.all(gone)).toEqual(['aborted', 'aborted']);
        await eventually(async () => (await waitingMarks()) === MAX_WAITING - 2);
        const later = [markIds(user, [ids[6]]), markIds(user, [ids[7]])];
        await eventually(async () => (await waitingMarks()) === MAX_WAITING);
        expectRefused(await markIds(user, [ids[8]]));

        await lock.release();
        for (const result of await Promise.all([running, ...staying, ...later]))
          expect(result.body.data).toEqual({ success: true, updatedCount: 1 });
      } finally {
        await lock.release();
      }
      // Exactly the accepted marks ran: the callers that left wrote nothing, the refused nothing.
      const read = await service.sql<{ id: string }>('select id from notification_states() where user_id = ? and is_seen', [user.userId]);
      expect(read.map((r) => r.id).sort()).toEqual([ids[0], ids[1], ids[2], ids[6], ids[7]].sort());
      const { counts, recount } = await countsAndRecount(user);
      expect(counts).toEqual(recount);
      expect(counts).toMatchObject({ unreadCount: 7, readCount: 5 });
      expect(service.app.services.feedWrites.queue.busyKeys).toBe(0);
    },
  );
});
