import { describe, expect, it } from 'vitest';
import { publish, useStreamingService, type Provisioned, type TestService } from '../support/harness.js';
import { openStream, type SseStream } from '../support/sse-client.js';

/**
 * Streams that resume: every watchNotifications / notificationEvents event carries an SSE id; a
 * client reconnecting with it as Last-Event-ID gets what it missed, in order, then live events, or
 * one `reset` event when that cannot be told. Against one service (PostgreSQL and Redis when
 * configured, else embedded); across processes and a Redis restart: test/processes/resume-streams.test.ts.
 */

let service: TestService;
const open: SseStream[] = [];
useStreamingService((started) => (service = started), open);

const SUBSCRIPTION = `subscription($t: String) { notificationEvents(notificationTypeFilter: $t) {
  kind counts { unreadCount readCount } notification { id title } notificationIds } }`;

async function watch(user: Provisioned, lastEventId?: string, variables: Record<string, unknown> = {}) {
  const stream = await openStream(`${service.baseUrl}/api/v1/call`, {
    headers: {
      authorization: `Bearer ${user.key}`,
      accept: 'text/event-stream',
      ...(lastEventId !== undefined && { 'last-event-id': lastEventId }),
    },
    body: { operationId: 'watchNotifications', variables },
  });
  expect(stream.status).toBe(200);
  open.push(stream);
  return stream;
}

async function watchGraphql(user: Provisioned, lastEventId?: string) {
  const stream = await openStream(`${service.baseUrl}/graphql`, {
    headers: {
      authorization: `Bearer ${user.key}`,
      accept: 'text/event-stream',
      ...(lastEventId !== undefined && { 'last-event-id': lastEventId }),
    },
    body: { query: SUBSCRIPTION },
  });
  expect(stream.status).toBe(200);
  open.push(stream);
  return stream;
}

const nextEvents = (stream: SseStream) => stream.events.filter((e) => e.event === 'next');
const settle = (ms = 300) => new Promise((resolve) => setTimeout(resolve, ms));

/** The ids of the notifications a stream's events name, in order (created events). */
const createdIds = (stream: SseStream, data = (raw: any) => raw.data) =>
  nextEvents(stream)
    .map((e) => data(JSON.parse(e.data)))
    .filter((d) => d.kind === 'created')
    .map((d) => d.notificationIds[0]);

/** A stream that saw one event, then its client left: the id it would resume from. */
async function seenThenLeft(opened: SseStream, user: Provisioned, notificationType = 'deal_created') {
  await publishEach(user, ['seen'], notificationType);
  await opened.next(() => true, 2000);
  opened.close();
  return nextEvents(opened)[0].id!;
}

/** Publishes `titles` one call each, and returns their ids. */
async function publishEach(user: Provisioned, titles: string[], notificationType = 'deal_created') {
  const ids: string[] = [];
  for (const title of titles) ids.push(...(await publish(service, user.userId, [{ title, notificationType }])));
  return ids;
}

describe('SSE ids', () => {
  it('every event carries an id, increasing, on the gateway and /graphql alike', async () => {
    const user = await service.provision();
    const [gateway, graphql] = [await watch(user), await watchGraphql(user)];
    const ids = await publishEach(user, ['a', 'b']);
    await gateway.next((d) => d.data.notificationIds[0] === ids[1], 2000);
    await graphql.next((d) => d.data.notificationEvents.notificationIds[0] === ids[1], 2000);
    for (const stream of [gateway, graphql]) {
      const sent = nextEvents(stream).map((e) => e.id);
      expect(sent).toHaveLength(2);
      expect(sent.every((id) => /^\d+-\d+$/.test(id ?? ''))).toBe(true);
      expect(sent[0]).not.toBe(sent[1]);
    }
    expect(nextEvents(gateway).map((e) => e.id)).toEqual(nextEvents(graphql).map((e) => e.id));
  });
});

describe('reconnecting with Last-Event-ID', () => {
  it('replays the events missed, in order, then live ones, with no duplicate', async () => {
    const user = await service.provision();
    const first = await watch(user);
    const [seen] = await publishEach(user, ['seen']);
    const event = await first.next(() => true, 2000);
    expect(event.data.notificationIds).toEqual([seen]);
    const lastId = nextEvents(first)[0].id!;
    first.close();

    const missed = [
      ...(await publishEach(user, ['m1', 'm2'])),
      ...(await publish(service, user.userId, [{ title: 'm3' }, { title: 'm4' }])),
    ];
    const resumed = await watch(user, lastId);
    await resumed.next((d) => d.data.notificationIds[0] === missed[3], 2000);
    const [live] = await publishEach(user, ['live']);
    await resumed.next((d) => d.data.notificationIds[0] === live, 2000);
    await settle();
    expect(createdIds(resumed)).toEqual([...missed, live]);
    expect(nextEvents(resumed).every((e) => e.id)).toBe(true);
    // The counts of each replayed event are those after its change (m3 and m4: one change).
    expect(nextEvents(resumed).map((e) => JSON.parse(e.data).data.counts.unreadCount)).toEqual([2, 3, 5, 5, 6]);
  });

  it('resumes between two events of one change (a batch) at the next of them', async () => {
    const user = await service.provision();
    const first = await watch(user);
    const batch = await publish(service, user.userId, [{ title: 'b1' }, { title: 'b2' }, { title: 'b3' }]);
    await first.next((d) => d.data.notificationIds[0] === batch[2], 2000);
    const ids = nextEvents(first).map((e) => e.id!);
    expect(new Set(ids).size).toBe(3);
    first.close();
    const resumed = await watch(user, ids[0]);
    await resumed.next((d) => d.data.notificationIds[0] === batch[2], 2000);
    await settle();
    expect(createdIds(resumed)).toEqual([batch[1], batch[2]]);
    expect(nextEvents(resumed).map((e) => e.id)).toEqual(ids.slice(1));
  });

  it('sends nothing missed when nothing was, then live events', async () => {
    const user = await service.provision();
    const resumed = await watch(user, await seenThenLeft(await watch(user), user));
    await settle();
    expect(nextEvents(resumed)).toEqual([]);
    const [live] = await publishEach(user, ['live']);
    await resumed.next((d) => d.data.notificationIds[0] === live, 2000);
  });

  it('applies the type filter to replayed events as to live ones', async () => {
    const user = await service.provision();
    const filter = { notificationTypeFilter: 'task_overdue' };
    const lastId = await seenThenLeft(await watch(user, undefined, filter), user, 'task_overdue');
    const [deal] = await publishEach(user, ['d1'], 'deal_created');
    const [task2] = await publishEach(user, ['t1'], 'task_overdue');
    const resumed = await watch(user, lastId, filter);
    await resumed.next((d) => d.data.notificationIds[0] === task2, 2000);
    await settle();
    expect(createdIds(resumed)).toEqual([task2]);
    expect(createdIds(resumed)).not.toContain(deal);
    expect(JSON.parse(nextEvents(resumed)[0].data).data.counts).toEqual({ unreadCount: 2, readCount: 0 });
  });

  it('on /graphql the same: missed events in order, with their ids', async () => {
    const user = await service.provision();
    const lastId = await seenThenLeft(await watchGraphql(user), user);
    const missed = await publishEach(user, ['m1', 'm2']);
    const resumed = await watchGraphql(user, lastId);
    await resumed.next((d) => d.data.notificationEvents.notificationIds[0] === missed[1], 2000);
    await settle();
    expect(createdIds(resumed, (raw) => raw.data.notificationEvents)).toEqual(missed);
    expect(nextEvents(resumed).every((e) => e.id)).toBe(true);
  });
});

describe('reset', () => {
  const RESET = (unreadCount: number) => ({
    kind: 'reset',
    counts: { unreadCount, readCount: 0 },
    notification: null,
    notificationIds: [],
  });

  for (const [name, id] of [
    ['an unknown id', '1700000000000-0'],
    ['an id older than 5 minutes', `${Date.now() - 5 * 60_000 - 1000}-0`],
    ['a malformed id', 'not-an-id\u00e9'],
    ['an oversized id', '9'.repeat(4000)],
    ["another user's id", 'other'],
  ] as const) {
    it(`answers ${name} with one reset event (current counts), then live events`, async () => {
      const user = await service.provision();
      await publishEach(user, ['before']);
      let lastEventId: string = id;
      if (id === 'other') {
        const other = await service.provision();
        const theirs = await watch(other);
        await publishEach(other, ['theirs']);
        await theirs.next(() => true, 2000);
        lastEventId = nextEvents(theirs)[0].id!;
      }
      const resumed = await watch(user, lastEventId);
      const reset = await resumed.next(() => true, 2000);
      expect(reset.data).toEqual(RESET(1));
      const [live] = await publishEach(user, ['live']);
      await resumed.next((d) => d.data.notificationIds[0] === live, 2000);
      expect(nextEvents(resumed)).toHaveLength(2);
      // The reset's id resumes: nothing missed since, so only what comes next.
      const resetId = nextEvents(resumed)[0].id!;
      expect(resetId).toMatch(/^\d+-\d+$/);
      resumed.close();
      const [after] = await publishEach(user, ['after']);
      const again = await watch(user, resetId);
      await again.next((d) => d.data.notificationIds[0] === after, 2000);
      await settle();
      expect(createdIds(again)).toEqual([live, after]);
    });
  }

  it('on /graphql too', async () => {
    const user = await service.provision();
    const resumed = await watchGraphql(user, 'garbage');
    const reset = await resumed.next(() => true, 2000);
    expect(reset.data.notificationEvents).toEqual(RESET(0));
  });
});
