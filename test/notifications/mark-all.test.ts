import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish, startService, type HttpResult, type Provisioned, type TestService } from '../support/harness.js';

/**
 * markAllNotificationsRead over HTTP: what it changes, what it leaves alone (other users, other
 * types, rows published while it runs) and exact counters afterwards. Its races with marks by id
 * and publishes are in counters-race.test.ts.
 */

let service: TestService;
beforeAll(async () => {
  // No sweep while these tests run: an expired row stays stored until the end (the sweep is expiry.test.ts's).
  service = await startService({ NOTIFICATION_SWEEP_INTERVAL_MS: '3600000' });
});
afterAll(() => service?.close());

/** Five types, rows spread over them in turn; rows dated from BASE on, a second apart. */
const TYPES = ['call_missed', 'deal_created', 'note_mention', 'reply_received', 'task_overdue'];
const BASE = Date.UTC(2025, 6, 1);

function ok(result: HttpResult) {
  expect(result.status, result.text).toBe(200);
  return result.body.data;
}

async function markAll(user: Provisioned, variables: Record<string, unknown>): Promise<number> {
  const data = ok(await service.call(user.key, { operationId: 'markAllNotificationsRead', variables }));
  expect(Object.keys(data).sort()).toEqual(['success', 'updatedCount']);
  expect(data.success).toBe(true);
  return data.updatedCount;
}

async function markIds(user: Provisioned, notificationIds: string[], isSeen: boolean): Promise<number> {
  const data = ok(await service.call(user.key, { operationId: 'markNotificationsRead', variables: { notificationIds, isSeen } }));
  return data.updatedCount;
}

async function counts(user: Provisioned, notificationTypeFilter?: string) {
  return ok(
    await service.call(user.key, {
      operationId: 'getNotificationCounts',
      variables: notificationTypeFilter ? { notificationTypeFilter } : {},
    }),
  );
}

/** The user's counts recounted from the rows themselves, in the shape getNotificationCounts answers. */
async function recount(userId: string) {
  const rows = await service.sql<{ notification_type: string; unread: number; read: number }>(
    `select notification_type, (count(*) filter (where not is_seen))::int as unread, (count(*) filter (where is_seen))::int as read
       from notification_states() where user_id = ? group by notification_type order by notification_type`,
    [userId],
  );
  const byType = rows.map((r) => ({ notificationType: r.notification_type, unreadCount: Number(r.unread), readCount: Number(r.read) }));
  return {
    unreadCount: byType.reduce((a, t) => a + t.unreadCount, 0),
    readCount: byType.reduce((a, t) => a + t.readCount, 0),
    byType,
  };
}

async function seenState(userId: string) {
  const rows = await service.sql<{ id: string; is_seen: boolean; seen_at: Date | string | null }>(
    'select id, is_seen, seen_at from notification_states() where user_id = ?',
    [userId],
  );
  return new Map(rows.map((r) => [r.id, { isSeen: r.is_seen, seenAt: r.seen_at }]));
}

function items(n: number, offsetSeconds = 0) {
  return Array.from({ length: n }, (_, i) => ({
    notificationType: TYPES[i % TYPES.length],
    title: `row ${offsetSeconds + i}`,
    createdAt: new Date(BASE + (offsetSeconds + i) * 1000).toISOString(),
  }));
}

describe('markAllNotificationsRead', () => {
  it("marks every row of the caller's read and back unread, setting and clearing seenAt; updatedCount counts changes", async () => {
    const user = await service.provision();
    const other = await service.provision();
    const ids = await publish(service, user.userId, items(12));
    const otherIds = await publish(service, other.userId, items(3));
    await markIds(user, ids.slice(0, 4), true);

    expect(await markAll(user, { isSeen: true })).toBe(8);
    let state = await seenState(user.userId);
    expect([...state.values()].every((r) => r.isSeen && r.seenAt !== null)).toBe(true);
    expect(await markAll(user, { isSeen: true })).toBe(0); // nothing left to change
    expect(await counts(user)).toEqual(await recount(user.userId));
    expect((await counts(user)).unreadCount).toBe(0);

    expect(await markAll(user, { isSeen: false })).toBe(12);
    state = await seenState(user.userId);
    expect([...state.values()].every((r) => !r.isSeen && r.seenAt === null)).toBe(true);
    expect(await counts(user)).toEqual({ ...(await recount(user.userId)), unreadCount: 12, readCount: 0 });

    // The other user's rows were never touched.
    const others = await seenState(other.userId);
    expect(otherIds.every((id) => others.get(id)?.isSeen === false)).toBe(true);
    expect((await counts(other)).unreadCount).toBe(3);
  });

  it('narrows to notificationTypeFilter; an empty filter means every type; an unknown type marks nothing', async () => {
    const user = await service.provision();
    await publish(service, user.userId, items(10)); // two of each of the five types
    expect(await markAll(user, { isSeen: true, notificationTypeFilter: 'call_missed' })).toBe(2);
    const after = await counts(user);
    expect(after).toEqual(await recount(user.userId));
    expect(after.byType.find((t: { notificationType: string }) => t.notificationType === 'call_missed')).toEqual({
      notificationType: 'call_missed',
      unreadCount: 0,
      readCount: 2,
    });
    expect(after.unreadCount).toBe(8);
    expect(await counts(user, 'deal_created')).toMatchObject({ unreadCount: 2, readCount: 0 });

    expect(await markAll(user, { isSeen: true, notificationTypeFilter: 'no_such_type' })).toBe(0);
    expect(await markAll(user, { isSeen: true, notificationTypeFilter: 'skip_trace_completed' })).toBe(0);
    expect(await counts(user)).toEqual(after);

    expect(await markAll(user, { isSeen: true, notificationTypeFilter: '' })).toBe(8);
    expect(await counts(user)).toEqual({ ...(await recount(user.userId)), unreadCount: 0, readCount: 10 });
  });

  it('leaves out an expired row the sweep has not deleted yet: updatedCount and counts as if it were gone', async () => {
    const user = await service.provision();
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const ids = await publish(service, user.userId, [
      { title: 'stays' },
      { title: 'expires', expiresAt: later },
      { title: 'stays too', notificationType: 'task_overdue' },
      { title: 'expires read', notificationType: 'task_overdue', expiresAt: later },
    ]);
    expect(await markIds(user, [ids[3]], true)).toBe(1);
    // Their time passes at once, not after a wait a loaded machine could outlast before the mark above.
    await service.sql("update notifications set expires_at = now() - interval '1 second' where id in (?, ?)", [ids[1], ids[3]]);
    const stored = async () =>
      Number((await service.sql<{ n: number }>('select count(*)::int as n from notifications where user_id = ?', [user.userId]))[0].n);
    expect(await stored()).toBe(4);

    expect(await markAll(user, { isSeen: true })).toBe(2);
    expect(await counts(user)).toMatchObject({ unreadCount: 0, readCount: 2 });
    expect(await markAll(user, { isSeen: false, notificationTypeFilter: 'task_overdue' })).toBe(1);
    expect(await markAll(user, { isSeen: false })).toBe(1);
    expect(await counts(user)).toEqual({
      unreadCount: 2,
      readCount: 0,
      byType: [
        { notificationType: 'deal_created', unreadCount: 1, readCount: 0 },
        { notificationType: 'task_overdue', unreadCount: 1, readCount: 0 },
      ],
    });
    // Nothing left to change among the rows shown: an expired row changes nothing either.
    expect(await markAll(user, { isSeen: false })).toBe(0);
    expect(await stored()).toBe(4);
  });

  it('needs WRITE scope and checks its variables like every operation', async () => {
    const reader = await service.provision({ scopes: ['READ'] });
    const denied = await service.call(reader.key, { operationId: 'markAllNotificationsRead', variables: { isSeen: true } });
    expect({ status: denied.status, code: denied.body.error.code }).toEqual({ status: 403, code: 'insufficient_scope' });

    const user = await service.provision();
    const cases: Array<[Record<string, unknown> | undefined, string]> = [
      [undefined, 'variables.isSeen'],
      [{}, 'variables.isSeen'],
      [{ isSeen: 'yes' }, 'variables.isSeen'],
      [{ isSeen: true, notificationTypeFilter: 5 }, 'variables.notificationTypeFilter'],
      [{ isSeen: true, notificationTypeFilter: null, extra: 1 }, 'variables.extra'],
    ];
    for (const [variables, path] of cases) {
      const result = await service.call(user.key, { operationId: 'markAllNotificationsRead', ...(variables ? { variables } : {}) });
      expect(result.status, result.text).toBe(422);
      expect(result.body.error.code).toBe('invalid_request');
      expect(result.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    }
  });

  it('is served on /graphql as well', async () => {
    const user = await service.provision();
    await publish(service, user.userId, items(3));
    const result = await service.graphql(
      'mutation { markAllNotificationsRead(isSeen: true, notificationTypeFilter: "deal_created") { success updatedCount } }',
      {},
      user.key,
    );
    expect(result.body).toEqual({ data: { markAllNotificationsRead: { success: true, updatedCount: 1 } } });
  });

  it('marks a large feed in one call with exact counters', { timeout: 180_000 }, async () => {
    const user = await service.provision();
    const rows = 20_000;
    // Inserted in one statement (the counter trigger runs as for a publish): 20 publish calls would only slow the test.
    await service.sql(
      `insert into notifications (id, user_id, notification_type, title, body, created_at)
       select gen_random_uuid(), ?, (array['deal_created', 'task_overdue', 'call_missed'])[1 + i % 3], 'row ' || i, 'body', now() - i * interval '1 second'
         from generate_series(1, ?) i`,
      [user.userId, rows],
    );
    expect(await counts(user)).toMatchObject({ unreadCount: rows, readCount: 0 });
    const started = performance.now();
    expect(await markAll(user, { isSeen: true })).toBe(rows);
    const ms = performance.now() - started;
    expect(await counts(user)).toEqual({ ...(await recount(user.userId)), unreadCount: 0, readCount: rows });
    console.info(`markAllNotificationsRead of ${rows} rows: ${ms.toFixed(0)} ms`);
    expect(ms).toBeLessThan(60_000);
    const callMissed = Array.from({ length: rows }, (_, k) => k + 1).filter((i) => i % 3 === 2).length;
    expect(await markAll(user, { isSeen: false, notificationTypeFilter: 'call_missed' })).toBe(callMissed);
    expect(await counts(user)).toEqual(await recount(user.userId));
  });
});

describe.skipIf(!process.env.DATABASE_URL)('markAllNotificationsRead while rows are published (PostgreSQL: a second connection)', () => {
  let peer: TestService;
  beforeAll(async () => {
    peer = await startService();
  });
  afterAll(() => peer?.close());

  /** Marks of this instance waiting for their turn behind the same user's marks (its metrics). */
  const waitingMarks = async () => {
    const metrics = await service.request('/metrics', { headers: { authorization: `Bearer ${service.platformToken}` } });
    return Number(/^crm_feed_writes_waiting (\d+)$/m.exec(metrics.text)?.[1] ?? 0);
  };

  // Another instance's mark of everything waits in the database for the user's lock; this
  // instance's waits in memory, behind the mark by id, for its turn.
  for (const [where, waiting] of [
    ['another instance', 'in the database'],
    ['the same instance', 'in its queue'],
  ] as const)
    it(
      `leaves rows published during the call unread, backfills included, even while it waits for another mark (sent to ${where}, waiting ${waiting})`,
      { timeout: 60_000 },
      async () => {
        const user = await service.provision();
        const existing = await publish(service, user.userId, items(300));
        const held = existing[150];
        const blocker = new pg.Client({ connectionString: process.env.DATABASE_URL });
        await blocker.connect();
        /** Waits until a session is blocked by `pid`; returns that session's pid. */
        const blockedBy = async (pid: number) => {
          let blocked = 0;
          await waitUntil(async () => {
            // Inside the blocker's transaction pg_stat_activity is read once and kept: read it afresh,
            // since behind a pooler the waiting statement may run on a server connection opened since.
            await blocker.query('select pg_stat_clear_snapshot()');
            const { rows } = await blocker.query(
              'select pid from pg_stat_activity where datname = current_database() and $1::int = any(pg_blocking_pids(pid))',
              [pid],
            );
            blocked = rows[0]?.pid ?? 0;
            return blocked !== 0;
          });
          return blocked;
        };
        try {
          // A chain of waits keeps the call running while rows are published: this connection holds a
          // row; a mark by id of that row waits for it; the mark of everything waits for that mark.
          await blocker.query('begin');
          await blocker.query('select id from notifications where id = $1 for update', [held]);
          const byId = service.call(user.key, {
            operationId: 'markNotificationsRead',
            variables: { notificationIds: [held], isSeen: true },
          });
          const markById = await blockedBy((await blocker.query('select pg_backend_pid() as pid')).rows[0].pid);
          const all = (where === 'another instance' ? peer : service).call(user.key, {
            operationId: 'markAllNotificationsRead',
            variables: { isSeen: true },
          });
          if (where === 'another instance') await blockedBy(markById);
          else await waitUntil(async () => (await waitingMarks()) === 1);

          // Published while the call runs: new rows and a backfill dated before every existing row.
          const during = await publish(service, user.userId, [
            ...items(20, 50_000),
            { notificationType: 'deal_created', title: 'backfill', createdAt: new Date(BASE - 86_400_000).toISOString() },
          ]);
          // Reads are not held up by the running marks.
          expect(await counts(user)).toMatchObject({ unreadCount: 321, readCount: 0 });
          await blocker.query('commit');

          const [byIdResult, allResult] = await Promise.all([byId, all]);
          expect(byIdResult.body).toEqual({ data: { success: true, updatedCount: 1 } });
          // The held row was read by then: it is not counted twice.
          expect(allResult.body).toEqual({ data: { success: true, updatedCount: 299 } });
          const state = await seenState(user.userId);
          expect(existing.every((id) => state.get(id)?.isSeen === true)).toBe(true);
          expect(during.every((id) => state.get(id)?.isSeen === false)).toBe(true);
          expect(await counts(user)).toEqual({ ...(await recount(user.userId)), unreadCount: 21, readCount: 300 });
        } finally {
          await blocker.query('rollback').catch(() => undefined);
          await blocker.end();
        }
      },
    );
});

async function waitUntil(condition: () => Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
