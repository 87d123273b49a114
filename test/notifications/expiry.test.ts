import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish, startService, usingRealBackends, type HttpResult, type Provisioned, type TestService } from '../support/harness.js';

/**
 * expiresAt and NOTIFICATION_RETENTION_DAYS: an expired row is never shown nor counted and is
 * deleted within the sweep's interval with its counts corrected; rows older than the retention are
 * deleted in bounded batches; counts equal a recount at every moment, while the sweep runs and
 * marks race it; with two instances, only one sweeps a batch.
 */

/**
 * Far enough back that no other test's backfills (all since 2020) are touched when test files
 * share a PostgreSQL database: a sweep deletes from every user's feed.
 */
const RETENTION_DAYS = 20_000;
const SWEEP_ENV = {
  NOTIFICATION_SWEEP_INTERVAL_MS: '300',
  NOTIFICATION_SWEEP_BATCH: '7',
  NOTIFICATION_RETENTION_DAYS: String(RETENTION_DAYS),
};
let service: TestService;
let peer: TestService;
beforeAll(async () => {
  service = await startService(SWEEP_ENV);
  peer = usingRealBackends ? await startService(SWEEP_ENV) : service;
});
afterAll(async () => {
  if (peer !== service) await peer?.close();
  await service?.close();
});

const DAY = 86_400_000;
function ok(result: HttpResult) {
  expect(result.status, result.text).toBe(200);
  return result.body.data;
}
const call = async (user: Provisioned, operationId: string, variables: Record<string, unknown> = {}) =>
  ok(await service.call(user.key, { operationId, variables }));

async function waitUntil(condition: () => Promise<boolean>, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const stored = async (userId: string) =>
  Number((await service.sql<{ n: number }>('select count(*)::int as n from notifications where user_id = ?', [userId]))[0].n);

/** Counter rows against the rows that are neither archived nor expired, as read through the marks. */
async function drift(userId: string) {
  const counts = await call({ key: (await keyOf(userId)) as string } as Provisioned, 'getNotificationCounts');
  const [truth] = await service.sql<{ unread: number; read: number }>(
    `select count(*) filter (where not s.is_seen)::int as unread, count(*) filter (where s.is_seen)::int as read
       from notification_states() s join notifications n on n.id = s.id
      where s.user_id = ? and s.archived_at is null and (n.expires_at is null or n.expires_at > now())`,
    [userId],
  );
  return {
    counts: { unreadCount: counts.unreadCount, readCount: counts.readCount },
    truth: { unreadCount: Number(truth.unread), readCount: Number(truth.read) },
  };
}
/**
 * Counter rows that differ from a recount of the user's stored rows (expired ones not yet deleted
 * included), their rows carrying an expiry too (readers skip the expiry probe when none does), read in one statement.
 */
const counterDrift = (userId: string) =>
  service.sql(
    `select c.notification_type from notification_counters c
       left join (select s.notification_type, count(*) filter (where not s.is_seen) as unread, count(*) filter (where s.is_seen) as read,
                         count(*) filter (where n.expires_at is not null) as expiring
                    from notification_states() s join notifications n on n.id = s.id
                   where s.user_id = ? and s.archived_at is null group by s.notification_type) r
         on r.notification_type = c.notification_type
      where c.user_id = ? and (c.unread_count <> coalesce(r.unread, 0) or c.read_count <> coalesce(r.read, 0)
                               or c.expiring_count <> coalesce(r.expiring, 0))`,
    [userId, userId],
  );
const keys = new Map<string, string>();
const keyOf = async (userId: string) => keys.get(userId);
async function provision() {
  const user = await service.provision();
  keys.set(user.userId, user.key);
  return user;
}

describe('expiresAt', () => {
  it('must be ISO 8601 and in the future (BAD_USER_INPUT naming the item)', async () => {
    const user = await provision();
    const past = await service.graphql(`mutation($input: [PublishNotificationInput!]!) { publishNotifications(input: $input) { id } }`, {
      input: [
        {
          userId: user.userId,
          notificationType: 'deal_created',
          title: 't',
          body: 'b',
          expiresAt: new Date(Date.now() - 1000).toISOString(),
        },
      ],
    });
    expect(past.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(JSON.stringify(past.body.errors[0])).toContain('input.0.expiresAt');
    const garbled = await service.graphql(`mutation($input: [PublishNotificationInput!]!) { publishNotifications(input: $input) { id } }`, {
      input: [{ userId: user.userId, notificationType: 'deal_created', title: 't', body: 'b', expiresAt: 'tomorrow' }],
    });
    expect(garbled.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(await stored(user.userId)).toBe(0);
  });

  it('hides an expired row at once, deletes it within the interval and keeps counts exact throughout', async () => {
    const user = await provision();
    const soon = new Date(Date.now() + 1500).toISOString();
    const [keep, , read] = await publish(service, user.userId, [
      { title: 'stays' },
      { title: 'goes', expiresAt: soon },
      { title: 'goes read', expiresAt: soon, notificationType: 'task_overdue' },
    ]);
    await call(user, 'markNotificationsRead', { notificationIds: [read], isSeen: true });
    expect(await call(user, 'getNotificationCounts')).toMatchObject({ unreadCount: 2, readCount: 1 });
    expect((await call(user, 'listNotifications')).total).toBe(3);
    await waitUntil(async () => Date.now() > Date.parse(soon));
    // Expired: never listed, never counted, whether or not the sweep has run yet.
    const page = await call(user, 'listNotifications');
    expect(page.notifications.map((n: { id: string }) => n.id)).toEqual([keep]);
    expect(page.total).toBe(1);
    expect(await call(user, 'getNotificationCounts')).toEqual({
      unreadCount: 1,
      readCount: 0,
      byType: [{ notificationType: 'deal_created', unreadCount: 1, readCount: 0 }],
    });
    await waitUntil(async () => (await stored(user.userId)) === 1);
    const after = await drift(user.userId);
    expect(after.counts).toEqual(after.truth);
    const counters = await service.sql<{ unread_count: number; read_count: number }>(
      'select sum(unread_count)::int as unread_count, sum(read_count)::int as read_count from notification_counters where user_id = ?',
      [user.userId],
    );
    expect({ unread: Number(counters[0].unread_count), read: Number(counters[0].read_count) }).toEqual({ unread: 1, read: 0 });
  });

  it('keeps the counter rows exact about rows that carry an expiry through marks, archiving and restoring', async () => {
    const user = await provision();
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const [a, b] = await publish(service, user.userId, [
      { title: 'expires', expiresAt: later },
      { title: 'expires too', expiresAt: later, notificationType: 'task_overdue' },
      { title: 'stays' },
    ]);
    expect(await counterDrift(user.userId)).toEqual([]);
    await call(user, 'markNotificationsRead', { notificationIds: [a], isSeen: true });
    await call(user, 'archiveNotifications', { notificationIds: [b], archived: true });
    expect(await counterDrift(user.userId)).toEqual([]);
    expect(await call(user, 'getNotificationCounts')).toMatchObject({ unreadCount: 1, readCount: 1 });
    expect((await call(user, 'listNotifications')).total).toBe(2);
    await call(user, 'archiveNotifications', { notificationIds: [b], archived: false });
    await call(user, 'markAllNotificationsRead', { isSeen: true });
    expect(await counterDrift(user.userId)).toEqual([]);
    expect(await call(user, 'getNotificationCounts')).toMatchObject({ unreadCount: 0, readCount: 3 });
  });

  it(
    'sweeps many expiring rows in bounded batches while marks and mark-alls race it, counts exact at every read',
    { timeout: 60_000 },
    async () => {
      const user = await provision();
      const expiring = Array.from({ length: 60 }, (_, i) => ({
        title: `e${i}`,
        notificationType: i % 2 ? 'deal_created' : 'call_missed',
        expiresAt: new Date(Date.now() + 800 + (i % 5) * 200).toISOString(),
      }));
      const ids = await publish(service, user.userId, [...expiring, ...Array.from({ length: 20 }, (_, i) => ({ title: `k${i}` }))]);
      let rounds = 0;
      const deadline = Date.now() + 10_000;
      while ((await stored(user.userId)) > 20 && Date.now() < deadline) {
        const pick = ids.filter((_, i) => i % 3 === rounds % 3).slice(0, 30);
        await Promise.all([
          call(user, 'markNotificationsRead', { notificationIds: pick, isSeen: rounds % 2 === 0 }),
          rounds % 4 === 0 ? call(user, 'markAllNotificationsRead', { isSeen: rounds % 8 === 0 }) : call(user, 'getNotificationCounts'),
        ]);
        // Between writes (the sweep may run meanwhile): the counter rows equal a recount of the stored rows, in one statement.
        expect(await counterDrift(user.userId)).toEqual([]);
        rounds++;
      }
      expect(rounds).toBeGreaterThan(2);
      expect(await stored(user.userId)).toBe(20);
      const final = await drift(user.userId);
      expect(final.counts).toEqual(final.truth);
      expect(final.counts.unreadCount + final.counts.readCount).toBe(20);
    },
  );
});

describe('NOTIFICATION_RETENTION_DAYS', () => {
  it('deletes rows older than the retention, keeps younger ones, and corrects the counts', { timeout: 30_000 }, async () => {
    const user = await provision();
    const old = Array.from({ length: 25 }, (_, i) => ({
      title: `old ${i}`,
      createdAt: new Date(Date.now() - (RETENTION_DAYS + 10) * DAY - i * 1000).toISOString(),
    }));
    const young = [{ title: 'young', createdAt: new Date(Date.now() - (RETENTION_DAYS - 10) * DAY).toISOString() }, { title: 'now' }];
    const ids = await publish(service, user.userId, [...old, ...young]);
    await call(user, 'markNotificationsRead', { notificationIds: ids.slice(0, 5), isSeen: true });
    await waitUntil(async () => (await stored(user.userId)) === 2);
    expect(await call(user, 'getNotificationCounts')).toMatchObject({ unreadCount: 2, readCount: 0 });
    const final = await drift(user.userId);
    expect(final.counts).toEqual(final.truth);
  });

  // On a shared PostgreSQL database the other instances' retention applies to every feed.
  it.skipIf(usingRealBackends)('keeps everything with 0', async () => {
    const keeper = await startService({ NOTIFICATION_SWEEP_INTERVAL_MS: '200', NOTIFICATION_RETENTION_DAYS: '0' });
    try {
      const user = await keeper.provision();
      await publish(keeper, user.userId, [{ title: 'ancient', createdAt: '1970-01-02T00:00:00.000Z' }]);
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(
        Number((await keeper.sql<{ n: number }>('select count(*)::int as n from notifications where user_id = ?', [user.userId]))[0].n),
      ).toBe(1);
    } finally {
      await keeper.close();
    }
  });
});
