import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish, startService, usingRealBackends, type Provisioned, type TestService } from '../support/harness.js';
import { alternatingGateway } from '../support/alternating-gateway.js';
import { openStream, type SseStream } from '../support/sse-client.js';

/**
 * markAllNotificationsRead as a read mark: it rewrites no row whatever the feed size, yet every
 * row reads as if it had been marked one by one (isSeen and seenAt), later marks by id of older
 * rows win (read or unread, one event each), archives and type filters stay apart, and the counts
 * equal a recount through every mix of marks, mark-alls, archives and publishes racing on one user.
 */

const RACE_ENV = { MARKS_MAX_IN_FLIGHT_PER_USER: '1000' };
let service: TestService;
let peer: TestService;
const streams: SseStream[] = [];
beforeAll(async () => {
  service = await startService(RACE_ENV);
  peer = usingRealBackends ? await startService(RACE_ENV) : service;
});
afterAll(async () => {
  for (const stream of streams) stream.close();
  if (peer !== service) await peer?.close();
  await service?.close();
});

const TYPES = ['deal_created', 'task_overdue', 'call_missed', 'reply_received', 'note_mention'];
const BASE = Date.UTC(2025, 3, 1);
const { call, markAll, markIds } = alternatingGateway(() => [service, peer]);

const items = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({
    notificationType: TYPES[(from + i) % TYPES.length],
    title: `row ${from + i}`,
    createdAt: new Date(BASE + (from + i) * 1000).toISOString(),
  }));

/** Each row's state as the feed shows it, by id. */
async function feedState(user: Provisioned) {
  const state = new Map<string, { isSeen: boolean; seenAt: string | null }>();
  let cursor: string | null = null;
  do {
    const page: any = await call(user, 'listNotifications', { limit: 50, ...(cursor && { cursor }) });
    for (const n of page.notifications) state.set(n.id, { isSeen: n.isSeen, seenAt: n.seenAt });
    cursor = page.nextCursor;
  } while (cursor);
  return state;
}

/** The counts recounted from the rows as the feed shows them (archived rows left out). */
async function recount(user: Provisioned) {
  const byType: Array<{ notificationType: string; unreadCount: number; readCount: number }> = [];
  for (const notificationType of [...TYPES].sort()) {
    const [unread, read] = await Promise.all([
      call(user, 'listNotifications', { notificationTypeFilter: notificationType, seen: false, searchTerm: 'row', limit: 1 }),
      call(user, 'listNotifications', { notificationTypeFilter: notificationType, seen: true, searchTerm: 'row', limit: 1 }),
    ]);
    if (unread.total + read.total > 0) byType.push({ notificationType, unreadCount: unread.total, readCount: read.total });
  }
  return {
    unreadCount: byType.reduce((a, t) => a + t.unreadCount, 0),
    readCount: byType.reduce((a, t) => a + t.readCount, 0),
    byType,
  };
}

describe('markAllNotificationsRead as a read mark', () => {
  it('rewrites no row, whatever the feed size', { timeout: 120_000 }, async () => {
    const user = await service.provision();
    await service.sql(
      `insert into notifications (id, user_id, notification_type, title, body, created_at)
       select gen_random_uuid(), ?, (array['deal_created', 'task_overdue'])[1 + i % 2], 'row ' || i, 'body', now() - i * interval '1 second'
         from generate_series(1, 5000) i`,
      [user.userId],
    );
    const versions = async () =>
      (
        await service.sql<{ v: string }>(`select string_agg(xmin::text, ',' order by id) as v from notifications where user_id = ?`, [
          user.userId,
        ])
      )[0].v;
    const before = await versions();
    expect(await markAll(user, { isSeen: true })).toBe(5000);
    expect(await markAll(user, { isSeen: false, notificationTypeFilter: 'task_overdue' })).toBe(2500);
    expect(await versions()).toBe(before);
    expect(await call(user, 'getNotificationCounts')).toMatchObject({ unreadCount: 2500, readCount: 2500 });
    const page = await call(user, 'listNotifications', { notificationTypeFilter: 'deal_created', limit: 3 });
    expect(page.notifications.every((n: any) => n.isSeen && n.seenAt !== null)).toBe(true);
    expect((await call(user, 'listNotifications', { seen: false, limit: 1 })).total).toBe(2500);
  });

  it('reads each row as if marked one by one: a row read earlier keeps its seenAt, the rest take the mark time', async () => {
    const user = await service.provision();
    const ids = await publish(service, user.userId, items(6));
    await markIds(user, [ids[0]], true);
    const first = (await feedState(user)).get(ids[0])!.seenAt;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await markAll(user, { isSeen: true })).toBe(5);
    let state = await feedState(user);
    expect(state.get(ids[0])).toEqual({ isSeen: true, seenAt: first });
    const markTime = state.get(ids[1])!.seenAt;
    expect(markTime).not.toBeNull();
    expect(Date.parse(markTime!)).toBeGreaterThan(Date.parse(first!));
    expect(ids.slice(1).every((id) => state.get(id)!.seenAt === markTime)).toBe(true);

    // A second mark-all read changes nothing (the times stay); unread then read again: a new time.
    expect(await markAll(user, { isSeen: true })).toBe(0);
    expect(await feedState(user)).toEqual(state);
    expect(await markAll(user, { isSeen: false })).toBe(6);
    state = await feedState(user);
    expect([...state.values()].every((r) => !r.isSeen && r.seenAt === null)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await markAll(user, { isSeen: true })).toBe(6);
    state = await feedState(user);
    expect(Date.parse(state.get(ids[0])!.seenAt!)).toBeGreaterThan(Date.parse(markTime!));
    expect(await call(user, 'getNotificationCounts')).toEqual(await recount(user));
  });

  it('honours later marks by id of older rows, unread included, with one event each and exact counts', async () => {
    const user = await service.provision();
    const ids = await publish(service, user.userId, items(5));
    expect(await markAll(user, { isSeen: true })).toBe(5);
    const stream = await openStream(`${service.baseUrl}/api/v1/call`, {
      headers: { authorization: `Bearer ${user.key}`, accept: 'text/event-stream' },
      body: { operationId: 'watchNotifications', variables: {} },
    });
    streams.push(stream);
    expect(await markIds(user, [ids[2], ids[3]], false)).toBe(2);
    const event = await stream.next((d) => d.data.kind === 'updated');
    expect(event.data).toMatchObject({ counts: { unreadCount: 2, readCount: 3 } });
    expect([...event.data.notificationIds].sort()).toEqual([ids[2], ids[3]].sort());
    expect(await markIds(user, [ids[2], ids[3]], false)).toBe(0);
    let state = await feedState(user);
    expect(state.get(ids[2])).toEqual({ isSeen: false, seenAt: null });
    expect(state.get(ids[1])!.isSeen).toBe(true);
    expect(await call(user, 'getNotificationCounts')).toEqual(await recount(user));

    // A later mark-all covers them again; a mark by id after it wins again.
    expect(await markAll(user, { isSeen: true })).toBe(2);
    expect(await markIds(user, [ids[0]], false)).toBe(1);
    state = await feedState(user);
    expect(ids.map((id) => state.get(id)!.isSeen)).toEqual([false, true, true, true, true]);
    expect(await call(user, 'getNotificationCounts')).toEqual({ ...(await recount(user)), unreadCount: 1, readCount: 4 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(stream.events.filter((e) => e.event === 'next')).toHaveLength(3);
  });

  it('keeps a type mark to its type, rows published after it, and archived rows apart', async () => {
    const user = await service.provision();
    const ids = await publish(service, user.userId, items(10));
    await call(user, 'archiveNotifications', { notificationIds: [ids[0]], archived: true }); // a deal_created row
    expect(await markAll(user, { isSeen: true, notificationTypeFilter: 'deal_created' })).toBe(1);
    const later = await publish(service, user.userId, items(5, 100));
    const state = await feedState(user);
    expect(state.get(ids[5])!.isSeen).toBe(true);
    expect(ids.slice(1, 5).every((id) => !state.get(id)!.isSeen)).toBe(true);
    expect(later.every((id) => !state.get(id)!.isSeen)).toBe(true);
    await call(user, 'archiveNotifications', { notificationIds: [ids[0], ids[5]], archived: false });
    const restored = await feedState(user);
    expect(restored.get(ids[0])).toEqual({ isSeen: false, seenAt: null });
    expect(await call(user, 'getNotificationCounts')).toEqual({ ...(await recount(user)), unreadCount: 14, readCount: 1 });
    // Archived while covered by a mark: it keeps the state it had; restored after a later mark: untouched by it.
    await call(user, 'archiveNotifications', { notificationIds: [ids[5]], archived: true });
    expect(await markAll(user, { isSeen: false })).toBe(0);
    await call(user, 'archiveNotifications', { notificationIds: [ids[5]], archived: false });
    expect((await feedState(user)).get(ids[5])!.isSeen).toBe(true);
    expect(await call(user, 'getNotificationCounts')).toEqual(await recount(user));
  });

  it('keeps counts equal to a recount when marks, mark-alls, archives and publishes race on one user', { timeout: 120_000 }, async () => {
    const user = await service.provision();
    const ids = await publish(service, user.userId, items(600));
    let seed = 20261129;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const some = (n: number) => Array.from({ length: n }, () => ids[Math.floor(random() * ids.length)]);
    for (let round = 0; round < 4; round++) {
      const requests: Array<Promise<unknown>> = [];
      for (let k = 0; k < 10; k++) {
        requests.push(markIds(user, some(60 + k * 10), (k + round) % 2 === 0));
        if (k % 2 === 0)
          requests.push(markAll(user, { isSeen: (k + round) % 4 < 2, ...(k % 4 === 0 && { notificationTypeFilter: TYPES[k % 5] }) }));
        if (k % 3 === 0) requests.push(call(user, 'archiveNotifications', { notificationIds: some(30), archived: (k + round) % 2 === 0 }));
        if (k % 3 === 1) requests.push(publish(service, user.userId, items(20, 10_000 + round * 1000 + k * 50)));
      }
      await Promise.all(requests);
    }
    const counts = await call(user, 'getNotificationCounts');
    expect(counts).toEqual(await recount(user));
    // The counter rows agree with every row's state as read through the marks.
    const rows = await service.sql<{ notification_type: string; unread: number; read: number }>(
      `select notification_type, count(*) filter (where not is_seen)::int as unread, count(*) filter (where is_seen)::int as read
         from notification_states() where user_id = ? and archived_at is null group by notification_type order by notification_type`,
      [user.userId],
    );
    expect(counts.byType).toEqual(
      rows.map((r) => ({ notificationType: r.notification_type, unreadCount: Number(r.unread), readCount: Number(r.read) })),
    );
  });
});
