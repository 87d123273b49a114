import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../../src/infra/logger.js';
import { startFeedSweeper, type FeedSweeper } from '../../src/notifications/feed-sweeper.js';
import { publish, startService, usingRealBackends, type Provisioned, type TestService } from '../support/harness.js';
import { alternatingGateway } from '../support/alternating-gateway.js';

/**
 * Read marks are compacted by the feed sweep: marks that decide no row's state any more (a later
 * unread mark covers their rows, their rows are gone, or the oldest one is folded into the rows it
 * changes) are deleted in bounded batches, the feed and the counts answering exactly as before,
 * and the counters equal a recount at every moment while compaction races marks and publishes.
 */

const RACE_ENV = { MARKS_MAX_IN_FLIGHT_PER_USER: '1000' };
let service: TestService;
let peer: TestService;
/** The service's own sweep code, run on demand (the service's interval is far off); small batches. */
let sweeper: FeedSweeper;
beforeAll(async () => {
  service = await startService(RACE_ENV);
  peer = usingRealBackends ? await startService(RACE_ENV) : service;
  sweeper = startFeedSweeper(
    { db: service.app.database.sql, events: service.app.services.notificationEvents, log: createLogger('silent') },
    { retentionDays: 0, intervalMs: 3_600_000, batch: 5 },
  );
});
afterAll(async () => {
  await sweeper?.stop();
  if (peer !== service) await peer?.close();
  await service?.close();
});

const TYPES = ['deal_created', 'task_overdue', 'call_missed'];
const BASE = Date.UTC(2025, 5, 1);
const { call, markAll, markIds } = alternatingGateway(() => [service, peer]);
const items = (n: number, from: number) =>
  Array.from({ length: n }, (_, i) => ({
    notificationType: TYPES[(from + i) % TYPES.length],
    title: `row ${from + i}`,
    createdAt: new Date(BASE + (from + i) * 1000).toISOString(),
  }));

const markCount = async (userId: string) =>
  Number((await service.sql<{ n: number }>('select count(*)::int as n from notification_read_marks where user_id = ?', [userId]))[0].n);

/** Every answer compaction must leave as it was: whole feed pages (isSeen, seenAt) of every filter, and the counts. */
async function answers(user: Provisioned) {
  const filters = [
    {},
    { seen: true },
    { seen: false },
    ...TYPES.flatMap((t) => [{ notificationTypeFilter: t }, { notificationTypeFilter: t, seen: false }]),
  ];
  const pages = [];
  for (const filter of filters) {
    let cursor: string | null = null;
    do {
      const page: any = await call(user, 'listNotifications', { limit: 50, ...filter, ...(cursor && { cursor }) });
      pages.push(page);
      cursor = page.nextCursor;
    } while (cursor);
  }
  const counts = [await call(user, 'getNotificationCounts')];
  for (const t of TYPES) counts.push(await call(user, 'getNotificationCounts', { notificationTypeFilter: t }));
  return { pages, counts };
}

/** Counter rows that differ from a recount through the marks, in one statement (one snapshot). */
const counterDrift = (userId: string) =>
  service.sql(
    `select c.notification_type from notification_counters c
       left join (select s.notification_type, count(*) filter (where not s.is_seen) as unread, count(*) filter (where s.is_seen) as read
                    from notification_states() s where s.user_id = ? and s.archived_at is null group by s.notification_type) r
         on r.notification_type = c.notification_type
      where c.user_id = ? and (c.unread_count <> coalesce(r.unread, 0) or c.read_count <> coalesce(r.read, 0))`,
    [userId, userId],
  );

/**
 * Sweeps until `done` holds, at most 500 times. Every test service shares the database and sweeps it
 * too: another may hold the lease, and other users' marks may come first, so a sweep that changes
 * nothing here proves nothing. A `done` never reached fails the assertions that follow.
 */
async function compactUntil(done: () => Promise<boolean>) {
  for (let sweeps = 0; sweeps < 500 && !(await done()); sweeps++) await Promise.all([sweeper.sweep(), delay(20)]);
}

it('deletes marks that decide nothing, in bounded batches, the feed and counts answering as before', async () => {
  const user = await service.provision({ scopes: ['READ', 'WRITE'] });
  const ids = await publish(service, user.userId, items(60, 0));
  await markIds(user, ids.slice(0, 10), true);
  await markAll(user, { isSeen: true });
  await markIds(user, ids.slice(5, 12), false);
  await publish(service, user.userId, items(9, 60));
  await markAll(user, { isSeen: false, notificationTypeFilter: TYPES[0] });
  await markAll(user, { isSeen: true });
  await markIds(user, ids.slice(20, 24), false);
  await markAll(user, { isSeen: true, notificationTypeFilter: TYPES[1] });
  await publish(service, user.userId, items(6, 69));
  await markAll(user, { isSeen: false, notificationTypeFilter: TYPES[2] });
  await markAll(user, { isSeen: true, notificationTypeFilter: TYPES[2] });
  // Marks pile up: one per mark-all and type it changed.
  const piled = await markCount(user.userId);
  expect(piled).toBeGreaterThanOrEqual(9);
  const before = await answers(user);

  await compactUntil(async () => (await markCount(user.userId)) <= TYPES.length);
  await sweeper.sweep();
  // One mark left per type (the latest), the rows the older ones changed holding their state.
  expect(await markCount(user.userId)).toBe(TYPES.length);
  expect(await answers(user)).toEqual(before);
  expect(await counterDrift(user.userId)).toEqual([]);

  // A mark whose rows are gone decides nothing either.
  await service.sql('delete from notifications where user_id = ? and notification_type = ?', [user.userId, TYPES[2]]);
  const withoutGone = await answers(user);
  const goneTypeMarks = () =>
    service.sql('select gen from notification_read_marks where user_id = ? and notification_type = ?', [user.userId, TYPES[2]]);
  await compactUntil(async () => (await goneTypeMarks()).length === 0);
  expect(await goneTypeMarks()).toEqual([]);
  expect(await answers(user)).toEqual(withoutGone);
});

it('keeps counters equal to a recount at every moment when compaction races marks by id, mark-alls and publishes', async () => {
  const user = await service.provision();
  const ids = await publish(service, user.userId, items(300, 1000));
  const drifts: unknown[] = [];
  const ROUNDS = 6;
  for (let round = 0; round < ROUNDS; round++) {
    const isSeen = round % 2 === 0;
    const requests: Array<Promise<unknown>> = [];
    for (let k = 0; k < 8; k++) {
      requests.push(
        markIds(
          user,
          ids.filter((_, i) => (i + k + round) % 5 === 0),
          !isSeen,
        ),
      );
      if (k % 2 === 0)
        requests.push(markAll(user, { isSeen, ...(k % 4 === 0 && { notificationTypeFilter: TYPES[(k + round) % TYPES.length] }) }));
      if (k % 3 === 0) requests.push(publish(service, user.userId, items(20, 5000 + round * 100 + k * 20)));
      // Compaction from the sweep and straight from SQL (another connection; one of them holds the lease).
      requests.push(sweeper.sweep());
      requests.push(service.sql('select * from notification_compact_marks(7)'));
      requests.push(counterDrift(user.userId).then((rows) => drifts.push(...rows)));
    }
    await Promise.all(requests);
    drifts.push(...(await counterDrift(user.userId)));
  }
  expect(drifts).toEqual([]);

  const before = await answers(user);
  await compactUntil(async () => (await markCount(user.userId)) <= TYPES.length);
  expect(await markCount(user.userId)).toBeLessThanOrEqual(TYPES.length);
  expect(await answers(user)).toEqual(before);
  expect(await counterDrift(user.userId)).toEqual([]);
});
