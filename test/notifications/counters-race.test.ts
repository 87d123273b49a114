import { afterAll, beforeAll, expect, it } from 'vitest';
import { publish, startService, usingRealBackends, type HttpResult, type Provisioned, type TestService } from '../support/harness.js';

/**
 * Counts come from `notification_counters` rows kept by triggers. Under concurrent marks (read and
 * unread, overlapping ids, the same ids from several requests at once) and concurrent publishes,
 * they must stay equal to the rows, and `updatedCount` must never count a row twice.
 */

/**
 * Many marks of one user at once are the point here, so the per-user queue lets them all wait
 * (its refusals are tested in marks-queue.test.ts). On PostgreSQL a second instance serves every
 * other mark: marks of one user still meet in the database, where its user lock orders them, as
 * they do across instances.
 */
const RACE_ENV = { MARKS_MAX_IN_FLIGHT_PER_USER: '1000' };
let service: TestService;
let peer: TestService;
beforeAll(async () => {
  service = await startService(RACE_ENV);
  peer = usingRealBackends ? await startService(RACE_ENV) : service;
});
afterAll(async () => {
  if (peer !== service) await peer?.close();
  await service?.close();
});

/** The instance for the next mark: the two take turns. */
let marks = 0;
const instance = () => (marks++ % 2 === 0 ? service : peer);

const TYPES = ['deal_created', 'task_overdue', 'call_missed', 'reply_received', 'note_mention'];
const BASE = Date.UTC(2025, 0, 1);

/** Deterministic pseudo-random numbers (mulberry32), so a failure can be replayed. */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(random: () => number, from: readonly T[], n: number): T[] {
  const copy = [...from];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy.slice(0, n);
}

async function mark(user: Provisioned, notificationIds: string[], isSeen: boolean): Promise<number> {
  const result: HttpResult = await instance().call(user.key, {
    operationId: 'markNotificationsRead',
    variables: { notificationIds, isSeen },
  });
  expect(result.status, result.text).toBe(200);
  expect(result.body.data.success).toBe(true);
  return result.body.data.updatedCount as number;
}

async function rowState(userId: string) {
  const rows = await service.sql<{ id: string; is_seen: boolean }>('select id, is_seen from notification_states() where user_id = ?', [
    userId,
  ]);
  return new Map(rows.map((r) => [r.id, r.is_seen]));
}

it('keeps counts exact and updatedCount free of double counting under concurrent marks and publishes', async () => {
  const random = rng(20261123);
  const user = await service.provision();
  const items = Array.from({ length: 400 }, (_, i) => ({
    notificationType: TYPES[i % TYPES.length],
    title: `seed ${i}`,
    createdAt: new Date(BASE + i * 1000).toISOString(),
  }));
  const ids = await publish(service, user.userId, items);
  expect(ids).toHaveLength(400);

  // Disjoint id groups, so the expected updatedCount sums are exact:
  //   toRead:   unread rows that only concurrent "mark read" requests touch;
  //   toUnread: read rows (read before the race) that only concurrent "mark unread" requests touch;
  //   churn:    rows that requests mark read and unread at once (only the counters are checked).
  const shuffled = pick(random, ids, ids.length);
  const toRead = shuffled.slice(0, 90);
  const toUnread = shuffled.slice(90, 150);
  const churn = shuffled.slice(150);
  expect(await mark(user, toUnread, true)).toBe(toUnread.length);
  expect(await mark(user, pick(random, churn, 100), true)).toBe(100);

  const readRequests: string[][] = [
    toRead,
    toRead,
    toRead,
    toRead, // the very same ids, four times at once
    ...Array.from({ length: 8 }, (_, k) => toRead.slice(k * 10, k * 10 + 25)), // overlapping windows
    ...Array.from({ length: 4 }, () => pick(random, toRead, 45)), // random overlapping sets
  ];
  const unreadRequests: string[][] = [
    toUnread,
    toUnread,
    toUnread,
    ...Array.from({ length: 6 }, (_, k) => toUnread.slice(k * 8, k * 8 + 20)),
  ];
  const churnRequests = Array.from({ length: 16 }, (_, k) => ({ ids: pick(random, churn, 40 + (k % 4) * 15), isSeen: k % 2 === 0 }));
  const publishBatches = Array.from({ length: 10 }, (_, k) =>
    Array.from({ length: 15 }, (_, i) => ({ notificationType: TYPES[(k + i) % TYPES.length], title: `race ${k}-${i}` })),
  );

  const tasks: Array<Promise<unknown>> = [];
  const readCounts: Array<Promise<number>> = [];
  const unreadCounts: Array<Promise<number>> = [];
  const published: Array<Promise<string[]>> = [];
  // Interleave the kinds so every kind is in flight at once.
  const longest = Math.max(readRequests.length, unreadRequests.length, churnRequests.length, publishBatches.length);
  for (let k = 0; k < longest; k++) {
    if (readRequests[k]) readCounts.push(mark(user, readRequests[k], true));
    if (unreadRequests[k]) unreadCounts.push(mark(user, unreadRequests[k], false));
    if (churnRequests[k]) tasks.push(mark(user, churnRequests[k].ids, churnRequests[k].isSeen));
    if (publishBatches[k]) published.push(publish(service, user.userId, publishBatches[k]));
  }
  const concurrent = readCounts.length + unreadCounts.length + tasks.length + published.length;
  expect(concurrent).toBeGreaterThanOrEqual(40);
  const [reads, unreads, , batches] = await Promise.all([
    Promise.all(readCounts),
    Promise.all(unreadCounts),
    Promise.all(tasks),
    Promise.all(published),
  ]);

  // (b) No double counting: each row of a group changed exactly once, and the sums say so.
  const state = await rowState(user.userId);
  expect(toRead.every((id) => state.get(id) === true)).toBe(true);
  expect(toUnread.every((id) => state.get(id) === false)).toBe(true);
  expect(reads.reduce((a, b) => a + b, 0)).toBe(toRead.length);
  expect(unreads.reduce((a, b) => a + b, 0)).toBe(toUnread.length);

  // (a) Counts equal the rows, in total and per type.
  expect(state.size).toBe(400 + batches.flat().length);
  const [truth] = await service.sql<{ unread: number; read: number }>(
    'select (count(*) filter (where not is_seen))::int as unread, (count(*) filter (where is_seen))::int as read from notification_states() where user_id = ?',
    [user.userId],
  );
  expect(Number(truth.unread) + Number(truth.read)).toBe(550);

  const perTypeRows = await service.sql<{ notification_type: string; unread: number; read: number }>(
    `select notification_type, (count(*) filter (where not is_seen))::int as unread, (count(*) filter (where is_seen))::int as read
       from notification_states() where user_id = ? group by notification_type`,
    [user.userId],
  );
  const counterRows = await service.sql<{ notification_type: string; unread_count: number; read_count: number }>(
    'select notification_type, unread_count, read_count from notification_counters where user_id = ?',
    [user.userId],
  );
  const fromRows = Object.fromEntries(perTypeRows.map((r) => [r.notification_type, { unread: Number(r.unread), read: Number(r.read) }]));
  const fromCounters = Object.fromEntries(
    counterRows
      .filter((r) => Number(r.unread_count) !== 0 || Number(r.read_count) !== 0)
      .map((r) => [r.notification_type, { unread: Number(r.unread_count), read: Number(r.read_count) }]),
  );
  expect(fromCounters).toEqual(fromRows);
  const entry = (type: string) => ({ notificationType: type, unreadCount: fromRows[type].unread, readCount: fromRows[type].read });
  const counts = await service.call(user.key, { operationId: 'getNotificationCounts', variables: {} });
  expect(counts.status).toBe(200);
  expect(counts.body.data).toEqual({
    unreadCount: Number(truth.unread),
    readCount: Number(truth.read),
    byType: Object.keys(fromRows).sort().map(entry),
  });
  for (const type of TYPES) {
    const perType = await service.call(user.key, { operationId: 'getNotificationCounts', variables: { notificationTypeFilter: type } });
    expect(perType.body.data, type).toEqual({ unreadCount: fromRows[type].unread, readCount: fromRows[type].read, byType: [entry(type)] });
  }

  // The feed agrees as well.
  const feed = await service.call(user.key, { operationId: 'listNotifications', variables: { seen: false, limit: 1 } });
  expect(feed.body.data.total).toBe(Number(truth.unread));
  expect(feed.body.data.hasUnread).toBe(Number(truth.unread) > 0);
});

async function markAll(user: Provisioned, variables: Record<string, unknown>): Promise<number> {
  const result = await instance().call(user.key, { operationId: 'markAllNotificationsRead', variables });
  expect(result.status, result.text).toBe(200);
  return result.body.data.updatedCount as number;
}

/**
 * Without one lock order for every writer of a user's rows these bursts can deadlock (a 500): a
 * mark of everything may lock rows in feed order (an index scan) while a mark by id locks them in
 * table order (a bitmap scan). How often depends on the plans the statistics give: with the user
 * lock removed, this test failed 3 runs of 3 on a young test database and passed on one whose
 * statistics gave bitmap scans to both; with the lock no order of events deadlocks.
 */
it('answers 200 to every request and keeps counts exact when large marks by id, marks of everything and publishes race', async () => {
  const random = rng(20261124);
  const user = await service.provision();
  const items = (n: number, from: number) =>
    Array.from({ length: n }, (_, i) => ({
      notificationType: TYPES[(from + i) % TYPES.length],
      title: `row ${from + i}`,
      createdAt: new Date(BASE + (from + i) * 1000).toISOString(),
    }));
  const ids = await publish(service, user.userId, items(1000, 0));
  await mark(user, pick(random, ids, 500), true);

  // Six bursts, alternately marking read and unread, each of 12 marks by id (225 to 475 ids in random order), 6 marks of
  // everything (every other one of one type) and 4 publishes, all in flight at once and in the same direction, so the
  // marks contend for the same rows.
  const ROUNDS = 6;
  for (let round = 0; round < ROUNDS; round++) {
    const isSeen = round % 2 === 0;
    const requests: Array<Promise<unknown>> = [];
    for (let k = 0; k < 12; k++) {
      requests.push(mark(user, pick(random, ids, 225 + ((k * 25 + round * 50) % 275)), isSeen));
      if (k % 2 === 0) {
        const filter = k % 4 === 0 ? { notificationTypeFilter: TYPES[(k + round) % TYPES.length] } : {};
        requests.push(markAll(user, { isSeen, ...filter }));
      }
      if (k % 3 === 0) requests.push(publish(service, user.userId, items(40, 10_000 + round * 1000 + k * 100)));
    }
    await Promise.all(requests); // each helper checks its 200
  }

  const perType = await service.sql<{ notification_type: string; unread: number; read: number }>(
    `select notification_type, (count(*) filter (where not is_seen))::int as unread, (count(*) filter (where is_seen))::int as read
       from notification_states() where user_id = ? group by notification_type order by notification_type`,
    [user.userId],
  );
  const byType = perType.map((r) => ({ notificationType: r.notification_type, unreadCount: Number(r.unread), readCount: Number(r.read) }));
  const unreadCount = byType.reduce((a, t) => a + t.unreadCount, 0);
  const readCount = byType.reduce((a, t) => a + t.readCount, 0);
  expect(unreadCount + readCount).toBe(1000 + ROUNDS * 4 * 40);
  const counts = await service.call(user.key, { operationId: 'getNotificationCounts', variables: {} });
  expect(counts.body.data).toEqual({ unreadCount, readCount, byType });
  const counterRows = await service.sql<{ notification_type: string; unread_count: number; read_count: number }>(
    'select notification_type, unread_count, read_count from notification_counters where user_id = ? order by notification_type',
    [user.userId],
  );
  expect(
    counterRows.map((r) => ({
      notificationType: r.notification_type,
      unreadCount: Number(r.unread_count),
      readCount: Number(r.read_count),
    })),
  ).toEqual(byType);
});

it('keeps counts exact when notifications are deleted, and a user who has notifications can be deleted', async () => {
  const user = await service.provision({ scopes: ['READ', 'WRITE'] });
  const ids = await publish(
    service,
    user.userId,
    TYPES.flatMap((notificationType) => [0, 1, 2].map((i) => ({ notificationType, title: `${notificationType} ${i}` }))),
  );
  await mark(user, ids.slice(0, 4), true);
  // Deletes by the trigger's delete branch: one of each state, in two types, in one statement.
  await service.sql('delete from notifications where id = any(?::uuid[])', [`{${[ids[0], ids[5], ids[7]].join(',')}}`]);
  const counts = await service.call(user.key, { operationId: 'getNotificationCounts' });
  const rows = await service.sql<{ is_seen: boolean }>('select is_seen from notification_states() where user_id = ?', [user.userId]);
  expect(counts.body.data).toMatchObject({
    unreadCount: rows.filter((r) => !r.is_seen).length,
    readCount: rows.filter((r) => r.is_seen).length,
  });
  expect(counts.body.data.unreadCount + counts.body.data.readCount).toBe(ids.length - 3);

  // A user's cascade deletes its notifications and its counter rows together.
  await service.sql('delete from api_keys where user_id = ?', [user.userId]);
  await service.sql('delete from users where id = ?', [user.userId]);
  expect(await service.sql('select 1 from notifications where user_id = ?', [user.userId])).toEqual([]);
  expect(await service.sql('select 1 from notification_counters where user_id = ?', [user.userId])).toEqual([]);
});
