import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish, startService, type HttpResult, type Provisioned, type TestService } from '../support/harness.js';
import { openStream, type SseStream } from '../support/sse-client.js';

/**
 * archiveNotifications and the `archived` filter: an archived row leaves the feed, `total`,
 * `hasUnread`, the counts (per type too) and mark-all until it is restored; ids that are not the
 * caller's are ignored as for marks; archiving and restoring send one `updated` event each.
 */

let service: TestService;
const streams: SseStream[] = [];
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  for (const stream of streams) stream.close();
  await service?.close();
});

const BASE = Date.UTC(2025, 8, 1);
const TYPES = ['deal_created', 'task_overdue', 'call_missed'];

function ok(result: HttpResult) {
  expect(result.status, result.text).toBe(200);
  return result.body.data;
}

const call = async (user: Provisioned, operationId: string, variables: Record<string, unknown> = {}) =>
  ok(await service.call(user.key, { operationId, variables }));
const archive = (user: Provisioned, notificationIds: string[], archived: boolean) =>
  call(user, 'archiveNotifications', { notificationIds, archived });

async function seed(user: Provisioned, n: number) {
  return publish(
    service,
    user.userId,
    Array.from({ length: n }, (_, i) => ({
      notificationType: TYPES[i % TYPES.length],
      title: `row ${i}`,
      createdAt: new Date(BASE + i * 1000).toISOString(),
    })),
  );
}

/** Every page of a listing, following nextCursor. */
async function listAll(user: Provisioned, variables: Record<string, unknown>) {
  const ids: string[] = [];
  let cursor: string | null = null;
  let first: any;
  do {
    const page: any = await call(user, 'listNotifications', { ...variables, limit: 2, ...(cursor && { cursor }) });
    first ??= page;
    ids.push(...page.notifications.map((n: { id: string }) => n.id));
    cursor = page.nextCursor;
  } while (cursor);
  return { ids, total: first.total, hasUnread: first.hasUnread, first };
}

describe('archiveNotifications', () => {
  it('takes archived rows out of the feed, total, hasUnread, counts and byType; restoring puts them back', async () => {
    const user = await service.provision();
    const ids = await seed(user, 6); // newest last: ids[5] is first in the feed
    // Types by index: 0,3 deal_created; 1,4 task_overdue; 2,5 call_missed.
    expect(await archive(user, [ids[1], ids[4], ids[5]], true)).toEqual({ success: true, updatedCount: 3 });

    const feed = await listAll(user, {});
    expect(feed.ids).toEqual([ids[3], ids[2], ids[0]]);
    expect(feed.total).toBe(3);
    expect(await call(user, 'getNotificationCounts')).toEqual({
      unreadCount: 3,
      readCount: 0,
      byType: [
        { notificationType: 'call_missed', unreadCount: 1, readCount: 0 },
        { notificationType: 'deal_created', unreadCount: 2, readCount: 0 },
      ],
    });
    expect(await call(user, 'getNotificationCounts', { notificationTypeFilter: 'task_overdue' })).toEqual({
      unreadCount: 0,
      readCount: 0,
      byType: [],
    });
    const typed = await call(user, 'listNotifications', { notificationTypeFilter: 'task_overdue' });
    expect({ total: typed.total, hasUnread: typed.hasUnread, rows: typed.notifications }).toEqual({ total: 0, hasUnread: false, rows: [] });
    const searched = await call(user, 'listNotifications', { searchTerm: 'row 4' });
    expect({ total: searched.total, hasUnread: searched.hasUnread }).toEqual({ total: 0, hasUnread: false });

    // The archived listing: only archived rows, newest first, paged by the same cursor rules, with archivedAt.
    const archived = await listAll(user, { archived: true });
    expect(archived.ids).toEqual([ids[5], ids[4], ids[1]]);
    expect(archived.total).toBe(3);
    expect(archived.hasUnread).toBe(true);
    expect(
      archived.first.notifications.every((n: any) => typeof n.archivedAt === 'string' && !Number.isNaN(Date.parse(n.archivedAt))),
    ).toBe(true);
    expect((await call(user, 'listNotifications', { archived: true, notificationTypeFilter: 'task_overdue' })).total).toBe(2);
    expect((await call(user, 'listNotifications', { archived: true, searchTerm: 'row 5' })).total).toBe(1);
    expect(feed.first.notifications.every((n: any) => n.archivedAt === null)).toBe(true);
    expect((await call(user, 'listNotifications', { archived: false })).total).toBe(3);

    // Archiving again changes nothing; restoring brings rows back with their counts.
    expect(await archive(user, [ids[1], ids[4]], true)).toEqual({ success: true, updatedCount: 0 });
    expect(await archive(user, [ids[4], ids[0]], false)).toEqual({ success: true, updatedCount: 1 });
    expect((await listAll(user, {})).ids).toEqual([ids[4], ids[3], ids[2], ids[0]]);
    expect(await call(user, 'getNotificationCounts')).toMatchObject({ unreadCount: 4, readCount: 0 });
  });

  it('ignores ids of other users, unknown and malformed ids, and keeps the read state of what it archives', async () => {
    const user = await service.provision();
    const other = await service.provision();
    const ids = await seed(user, 3);
    const [foreign] = await seed(other, 1);
    expect((await call(user, 'markNotificationsRead', { notificationIds: [ids[0]], isSeen: true })).updatedCount).toBe(1);
    const result = await archive(user, [ids[0], foreign, '00000000-0000-4000-8000-000000000000', 'not-a-uuid', ids[0].toUpperCase()], true);
    expect(result).toEqual({ success: true, updatedCount: 1 });
    expect(await call(user, 'getNotificationCounts')).toMatchObject({ unreadCount: 2, readCount: 0 });
    expect((await call(other, 'listNotifications')).total).toBe(1);
    const [row] = (await call(user, 'listNotifications', { archived: true })).notifications;
    expect(row).toMatchObject({ id: ids[0], isSeen: true });
    expect(row.seenAt).not.toBeNull();
    expect(await archive(user, [ids[0]], false)).toEqual({ success: true, updatedCount: 1 });
    expect(await call(user, 'getNotificationCounts')).toMatchObject({ unreadCount: 2, readCount: 1 });
  });

  it('leaves archived rows out of markAllNotificationsRead', async () => {
    const user = await service.provision();
    const ids = await seed(user, 4);
    await archive(user, [ids[0], ids[1]], true);
    expect((await call(user, 'markAllNotificationsRead', { isSeen: true })).updatedCount).toBe(2);
    expect(await call(user, 'getNotificationCounts')).toMatchObject({ unreadCount: 0, readCount: 2 });
    const archived = await call(user, 'listNotifications', { archived: true });
    expect(archived.notifications.map((n: any) => [n.id, n.isSeen, n.seenAt])).toEqual([
      [ids[1], false, null],
      [ids[0], false, null],
    ]);
    expect(archived.hasUnread).toBe(true);
    await archive(user, [ids[0], ids[1]], false);
    expect(await call(user, 'getNotificationCounts')).toMatchObject({ unreadCount: 2, readCount: 2 });
  });

  it('needs WRITE scope and checks its variables (at most 500 ids, archived required)', async () => {
    const reader = await service.provision({ scopes: ['READ'] });
    const denied = await service.call(reader.key, {
      operationId: 'archiveNotifications',
      variables: { notificationIds: [], archived: true },
    });
    expect({ status: denied.status, code: denied.body.error.code }).toEqual({ status: 403, code: 'insufficient_scope' });
    const user = await service.provision();
    expect(await archive(user, [], true)).toEqual({ success: true, updatedCount: 0 });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ notificationIds: [] }, 'variables.archived'],
      [{ archived: true }, 'variables.notificationIds'],
      [{ notificationIds: Array.from({ length: 501 }, (_, i) => `id-${i}`), archived: true }, 'variables.notificationIds'],
      [{ notificationIds: [], archived: 'yes' }, 'variables.archived'],
    ];
    for (const [variables, path] of cases) {
      const result = await service.call(user.key, { operationId: 'archiveNotifications', variables });
      expect(result.status, result.text).toBe(422);
      expect(result.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    }
  });

  it('is served on /graphql, with archivedAt on Notification', async () => {
    const user = await service.provision();
    const [id] = await seed(user, 1);
    const result = await service.graphql(
      `mutation($ids: [ID!]!) { archiveNotifications(notificationIds: $ids, archived: true) { success updatedCount } }`,
      { ids: [id] },
      user.key,
    );
    expect(result.body).toEqual({ data: { archiveNotifications: { success: true, updatedCount: 1 } } });
    const listed = await service.graphql('{ notifications(archived: true) { total notifications { id archivedAt } } }', {}, user.key);
    expect(listed.body.data.notifications.total).toBe(1);
    expect(listed.body.data.notifications.notifications[0].id).toBe(id);
  });

  it('sends one updated event with the new counts when archiving and when restoring', async () => {
    const user = await service.provision();
    const ids = await seed(user, 3);
    const stream = await openStream(`${service.baseUrl}/api/v1/call`, {
      headers: { authorization: `Bearer ${user.key}`, accept: 'text/event-stream' },
      body: { operationId: 'watchNotifications', variables: {} },
    });
    streams.push(stream);
    expect(stream.status).toBe(200);
    await archive(user, [ids[0], ids[2]], true);
    const archived = await stream.next((d) => d.data.kind === 'updated');
    expect(archived.data).toMatchObject({ kind: 'updated', counts: { unreadCount: 1, readCount: 0 }, notification: null });
    expect([...archived.data.notificationIds].sort()).toEqual([ids[0], ids[2]].sort());
    const from = stream.events.length;
    await archive(user, [ids[2]], false);
    const restored = await stream.next((d) => d.data.kind === 'updated', 5000, from);
    expect(restored.data).toMatchObject({ counts: { unreadCount: 2, readCount: 0 }, notificationIds: [ids[2]] });
    // Nothing changed, nothing sent.
    await archive(user, [ids[2]], false);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(stream.events.filter((e) => e.event === 'next')).toHaveLength(2);
  });
});
