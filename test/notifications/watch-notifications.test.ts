import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish, startService, useStreamingService, type Provisioned, type TestService } from '../support/harness.js';
import { openStalledStream, openStream, type SseStream } from '../support/sse-client.js';

/**
 * `watchNotifications` (gateway) and `notificationEvents` (/graphql): feed changes pushed as
 * Server-Sent Events, over real HTTP against one service (PostgreSQL and Redis when configured,
 * else the embedded database and the in-process event bus). Across processes, Redis restarts and
 * shutdown: test/processes/notification-streams.test.ts.
 */

let service: TestService;
const open: SseStream[] = [];
useStreamingService((started) => (service = started), open);

const SUBSCRIPTION = `subscription($t: String) { notificationEvents(notificationTypeFilter: $t) {
  kind counts { unreadCount readCount } notification { id notificationType title isSeen createdAt } notificationIds } }`;

async function watch(user: Provisioned, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const stream = await openStream(`${service.baseUrl}/api/v1/call`, {
    headers: { authorization: `Bearer ${user.key}`, accept: 'text/event-stream', ...headers },
    body: { operationId: 'watchNotifications', variables },
  });
  open.push(stream);
  return stream;
}

async function watchGraphql(user: Provisioned, variables: Record<string, unknown> = {}) {
  const stream = await openStream(`${service.baseUrl}/graphql`, {
    headers: { authorization: `Bearer ${user.key}`, accept: 'text/event-stream' },
    body: { query: SUBSCRIPTION, variables },
  });
  open.push(stream);
  return stream;
}

describe('watchNotifications through the gateway', () => {
  it('needs Accept: text/event-stream (422 naming the header)', async () => {
    const user = await service.provision();
    const result = await service.call(user.key, { operationId: 'watchNotifications', variables: {} });
    expect(result.status).toBe(422);
    expect(result.body.error.code).toBe('invalid_request');
    expect(result.body.error.message).toContain('Accept: text/event-stream');
    expect(result.body.error.details).toEqual([{ path: 'Accept', message: 'must be text/event-stream' }]);
  });

  it('checks credential, scope and variables before opening, and counts the open against the window', async () => {
    const writer = await service.provision({ scopes: ['WRITE'] });
    const denied = await watch(writer);
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('insufficient_scope');
    const anonymous = await openStream(`${service.baseUrl}/api/v1/call`, {
      headers: { accept: 'text/event-stream' },
      body: { operationId: 'watchNotifications' },
    });
    expect(anonymous.status).toBe(401);
    const user = await service.provision();
    const bad = await watch(user, { notificationTypeFilter: 5 });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details[0].path).toBe('variables.notificationTypeFilter');
    const unknown = await watch(user, { since: 'now' });
    expect(unknown.status).toBe(422);

    const stream = await watch(user);
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(Number(stream.headers['x-ratelimit-remaining'])).toBeGreaterThanOrEqual(0);
    const after = await service.call(user.key, { operationId: 'getNotificationCounts' });
    // bad, unknown, the stream and this call: four points of the window
    expect(Number(stream.headers['x-ratelimit-remaining']) - Number(after.headers.get('x-ratelimit-remaining'))).toBe(1);
    stream.close();
  });

  it('pushes a created event within 1 s of a publish, with the counts after it', async () => {
    const user = await service.provision();
    await publish(service, user.userId, [{ title: 'before' }]);
    const stream = await watch(user);
    const started = performance.now();
    const [id] = await publish(service, user.userId, [{ title: 'pushed', notificationType: 'task_overdue' }]);
    const event = await stream.next(() => true, 1000);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(event).toEqual({
      data: {
        kind: 'created',
        counts: { unreadCount: 2, readCount: 0 },
        notification: expect.objectContaining({ id, notificationType: 'task_overdue', title: 'pushed', isSeen: false, seenAt: null }),
        notificationIds: [id],
      },
    });
    // The same Notification as listNotifications returns.
    const listed = await service.call(user.key, { operationId: 'listNotifications', variables: { limit: 1 } });
    expect(event.data.notification).toEqual(listed.body.data.notifications[0]);
    stream.close();
  });

  it('pushes an updated event with the changed ids and new counts when a mark goes through the gateway', async () => {
    const user = await service.provision();
    const ids = await publish(service, user.userId, [{ title: 'a' }, { title: 'b' }, { title: 'c' }]);
    const stream = await watch(user);
    const mark = await service.call(user.key, {
      operationId: 'markNotificationsRead',
      variables: { notificationIds: [ids[0], ids[1], '00000000-0000-4000-8000-000000000000'], isSeen: true },
    });
    expect(mark.body.data).toEqual({ success: true, updatedCount: 2 });
    const event = await stream.next(() => true, 1000);
    expect(event.data.kind).toBe('updated');
    expect(event.data.notification).toBeNull();
    expect([...event.data.notificationIds].sort()).toEqual([ids[0], ids[1]].sort());
    expect(event.data.counts).toEqual({ unreadCount: 1, readCount: 2 });
    // A mark that changes nothing sends nothing.
    await service.call(user.key, { operationId: 'markNotificationsRead', variables: { notificationIds: [ids[0]], isSeen: true } });
    await service.call(user.key, { operationId: 'markNotificationsRead', variables: { notificationIds: [ids[2]], isSeen: true } });
    const next = await stream.next((d) => d.data.notificationIds[0] === ids[2], 1000);
    expect(next.data.counts).toEqual({ unreadCount: 0, readCount: 3 });
    expect(stream.events.filter((e) => e.event === 'next')).toHaveLength(2);
    stream.close();
  });

  it("delivers to the owner's streams only", async () => {
    const [owner, other] = await Promise.all([service.provision(), service.provision()]);
    const [mine, theirs] = await Promise.all([watch(owner), watch(other)]);
    await publish(service, owner.userId, [{ title: 'private' }]);
    await mine.next(() => true, 1000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(theirs.events.filter((e) => e.event === 'next')).toEqual([]);
    mine.close();
    theirs.close();
  });

  it('sends a small batch as one created event each, and a bulk publish as one updated event saying re-read', async () => {
    const user = await service.provision();
    const stream = await watch(user);
    const batch = await publish(
      service,
      user.userId,
      Array.from({ length: 3 }, (_, i) => ({ title: `batch ${i}` })),
    );
    await stream.next((d) => d.data.notificationIds[0] === batch[2], 1000);
    expect(stream.events.filter((e) => e.event === 'next').map((e) => JSON.parse(e.data).data.notificationIds[0])).toEqual(batch);
    await publish(
      service,
      user.userId,
      Array.from({ length: 60 }, (_, i) => ({ title: `bulk ${i}` })),
    );
    const bulk = await stream.next((d) => d.data.kind === 'updated', 1000);
    expect(bulk.data).toEqual({ kind: 'updated', notification: null, notificationIds: [], counts: { unreadCount: 63, readCount: 0 } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(stream.events.filter((e) => e.event === 'next')).toHaveLength(4);
    stream.close();
  });

  it('offers writers of bulk changes an updated event without ids (what mark-all calls after its commit)', async () => {
    const user = await service.provision();
    await publish(service, user.userId, [{ title: 'one' }]);
    const stream = await watch(user);
    const events = service.app.services.notificationEvents;
    await events.updated(user.userId, []);
    await events.updated(user.userId, null);
    const bulk = await stream.next(() => true, 1000);
    const bulkAt = stream.events.findIndex((e) => e.event === 'next');
    expect(bulk.data).toEqual({ kind: 'updated', notification: null, notificationIds: [], counts: { unreadCount: 1, readCount: 0 } });
    await events.updated(
      user.userId,
      Array.from({ length: 501 }, () => randomUUID()),
    );
    const large = await stream.next((d) => d.data.kind === 'updated', 1000, bulkAt + 1);
    expect(large.data.notificationIds).toEqual([]);
    stream.close();
  });

  it('pushes one updated event after markAllNotificationsRead, with the changed ids and the counts it left', async () => {
    const user = await service.provision({ scopes: ['READ', 'WRITE'] });
    const ids = await publish(service, user.userId, [{ title: 'a' }, { title: 'b' }, { title: 'c' }]);
    await service.call(user.key, { operationId: 'markNotificationsRead', variables: { notificationIds: [ids[0]], isSeen: true } });
    const stream = await watch(user);
    const marked = await service.call(user.key, { operationId: 'markAllNotificationsRead', variables: { isSeen: true } });
    expect(marked.body.data.updatedCount).toBe(2);
    const event = await stream.next(() => true, 1000);
    const counts = (await service.call(user.key, { operationId: 'getNotificationCounts' })).body.data;
    expect(event.data.kind).toBe('updated');
    expect(event.data.notification).toBeNull();
    expect([...event.data.notificationIds].sort()).toEqual([ids[1], ids[2]].sort());
    expect(event.data.counts).toEqual({ unreadCount: counts.unreadCount, readCount: counts.readCount });
    expect(event.data.counts).toEqual({ unreadCount: 0, readCount: 3 });

    // Marking all read again changes nothing: nothing is sent, and the next change's event comes next.
    const again = await service.call(user.key, { operationId: 'markAllNotificationsRead', variables: { isSeen: true } });
    expect(again.body.data.updatedCount).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(stream.events.filter((e) => e.event === 'next')).toHaveLength(1);
    const [later] = await publish(service, user.userId, [{ title: 'later' }]);
    const next = await stream.next((d) => d.data.kind === 'created', 1000);
    expect(next.data.notificationIds).toEqual([later]);
    expect(stream.events.filter((e) => e.event === 'next').map((e) => JSON.parse(e.data).data.kind)).toEqual(['updated', 'created']);
    stream.close();
  });

  it('lists no ids when markAllNotificationsRead changes more than 500 rows: one updated event, the counts it left', async () => {
    const user = await service.provision({ scopes: ['READ', 'WRITE'] });
    // More than 50 rows for one user reach open streams as one bulk event: publish before opening.
    await publish(
      service,
      user.userId,
      Array.from({ length: 501 }, (_, i) => ({ title: `many ${i}` })),
    );
    const stream = await watch(user);
    const marked = await service.call(user.key, { operationId: 'markAllNotificationsRead', variables: { isSeen: true } });
    expect(marked.body.data.updatedCount).toBe(501);
    const event = await stream.next(() => true, 2000);
    expect(event.data).toEqual({ kind: 'updated', notification: null, notificationIds: [], counts: { unreadCount: 0, readCount: 501 } });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(stream.events.filter((e) => e.event === 'next')).toHaveLength(1);
    stream.close();
  });

  it('applies notificationTypeFilter to created events and its counts to every event', async () => {
    const user = await service.provision();
    await publish(service, user.userId, [{ notificationType: 'task_overdue' }, { notificationType: 'deal_created' }]);
    const stream = await watch(user, { notificationTypeFilter: 'task_overdue' });
    const [dealId] = await publish(service, user.userId, [{ notificationType: 'deal_created' }]);
    const [taskId] = await publish(service, user.userId, [{ notificationType: 'task_overdue' }]);
    const created = await stream.next(() => true, 1000);
    expect(created.data.notificationIds).toEqual([taskId]);
    expect(created.data.counts).toEqual({ unreadCount: 2, readCount: 0 });
    // Marking a row of another type: an updated event, the filter's counts unchanged.
    await service.call(user.key, { operationId: 'markNotificationsRead', variables: { notificationIds: [dealId], isSeen: true } });
    const updated = await stream.next((d) => d.data.kind === 'updated', 1000);
    expect(updated.data).toMatchObject({ notificationIds: [dealId], counts: { unreadCount: 2, readCount: 0 } });
    expect(stream.events.filter((e) => e.event === 'next')).toHaveLength(2);
    stream.close();
  });

  it('allows STREAM_MAX_PER_KEY (5) open streams per key; the sixth is 429 concurrency_limit until one closes', async () => {
    const user = await service.provision();
    const streams = await Promise.all(Array.from({ length: 5 }, () => watch(user)));
    expect(streams.map((s) => s.status)).toEqual([200, 200, 200, 200, 200]);
    const sixth = await watch(user);
    expect(sixth.status).toBe(429);
    expect(sixth.body.error.code).toBe('concurrency_limit');
    expect(sixth.headers['retry-after']).toBe('1');
    const viaGraphql = await watchGraphql(user);
    expect(viaGraphql.status).toBe(429);
    expect(viaGraphql.body.errors[0].extensions.code).toBe('RATE_LIMITED');
    expect(viaGraphql.headers['retry-after']).toBe('1');
    // Another key of the same user has its own slots.
    const secondKey = await service.graphql(`mutation($u: ID!) { createApiKey(userId: $u, scopes: [READ]) { secret } }`, {
      u: user.userId,
    });
    const other = await watch({ ...user, key: secondKey.body.data.createApiKey.secret });
    expect(other.status).toBe(200);
    // A client that goes away frees its slot.
    streams[0].close();
    await expectEventually(async () => (await watch(user)).status === 200);
    for (const s of streams) s.close();
  });

  it("ends a revoked key's stream within 5 s, with a last event saying why", async () => {
    const user = await service.provision();
    const stream = await watch(user);
    const revoked = performance.now();
    await service.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) }`, { id: user.keyId });
    await stream.ended;
    expect(performance.now() - revoked).toBeLessThan(5000);
    const last = stream.events.slice(-2);
    expect(last[0].event).toBe('next');
    expect(JSON.parse(last[0].data).error.code).toBe('invalid_key');
    expect(last[1]).toMatchObject({ event: 'complete', data: '' });
  });
});

describe('events shared between the streams of one user', () => {
  it('hands every stream of a user and filter the same event object, built once per change', async () => {
    const user = await service.provision();
    const events = service.app.services.notificationEvents;
    const leases = Array.from({ length: 3 }, () => {
      const controller = new AbortController();
      return { keyId: user.keyId, signal: controller.signal, end: () => undefined, release: () => controller.abort('released') };
    });
    const [a, b, filtered] = await Promise.all([
      events.subscribe(user.userId, null, leases[0]),
      events.subscribe(user.userId, null, leases[1]),
      events.subscribe(user.userId, 'task_overdue', leases[2]),
    ]);
    await events.updated(
      user.userId,
      Array.from({ length: 500 }, () => randomUUID()),
    );
    const [first, second, third] = await Promise.all([a.next(), b.next(), filtered.next()]);
    expect(first.value).toBe(second.value);
    expect(first.value.notificationIds).toHaveLength(500);
    // Another filter reads other counts: an event of its own, sharing nothing it should not.
    expect(third.value).not.toBe(first.value);
    expect(third.value.notificationIds).toEqual(first.value.notificationIds);
    for (const lease of leases) lease.release();
    expect(await a.next()).toEqual({ done: true, value: undefined });
  });
});

describe('notificationEvents on /graphql', () => {
  it('streams GraphQL results over SSE', async () => {
    const user = await service.provision();
    const stream = await watchGraphql(user);
    expect(stream.status).toBe(200);
    expect(stream.comments.length).toBeGreaterThanOrEqual(1);
    const [id] = await publish(service, user.userId, [{ title: 'over graphql' }]);
    const event = await stream.next(() => true, 1000);
    expect(event).toEqual({
      data: {
        notificationEvents: {
          kind: 'created',
          counts: { unreadCount: 1, readCount: 0 },
          notification: expect.objectContaining({ id, title: 'over graphql' }),
          notificationIds: [id],
        },
      },
    });
    stream.close();
  });

  it('answers a subscription asked for as JSON with 406 naming the header, and keeps no slot for it', async () => {
    const user = await service.provision();
    for (let i = 0; i < 6; i++) {
      const result = await service.request('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${user.key}` },
        body: JSON.stringify({ query: SUBSCRIPTION }),
      });
      expect(result.status).toBe(406);
      expect(result.body.errors[0].message).toContain('Accept: text/event-stream');
    }
    // Six refused opens held nothing: all five slots of the key are free.
    const streams = await Promise.all(Array.from({ length: 5 }, () => watchGraphql(user)));
    expect(streams.map((s) => s.status)).toEqual([200, 200, 200, 200, 200]);
    for (const s of streams) s.close();
  });

  it('refuses the platform token and keys without READ', async () => {
    const writer = await service.provision({ scopes: ['WRITE'] });
    const denied = await watchGraphql(writer);
    expect(denied.status).toBe(403);
    expect(denied.body.errors[0].extensions.code).toBe('FORBIDDEN');
    const platform = await openStream(`${service.baseUrl}/graphql`, {
      headers: { authorization: `Bearer ${service.platformToken}`, accept: 'text/event-stream' },
      body: { query: SUBSCRIPTION },
    });
    expect(platform.status).toBe(403);
  });
});

describe('discovery and metrics', () => {
  it('lists watchNotifications as a subscription with its event schema as result', async () => {
    const result = await service.request('/api/v1/operations/watchNotifications');
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ operationId: 'watchNotifications', scope: 'READ', type: 'subscription' });
    expect(result.body.result.properties.kind).toEqual({ type: 'string', enum: ['created', 'reset', 'updated'] });
    expect(Object.keys(result.body.result.properties).sort()).toEqual(['counts', 'kind', 'notification', 'notificationIds']);
  });

  it('counts open streams in crm_sse_open_streams', async () => {
    const user = await service.provision();
    const gauge = async () => {
      const text = (await service.request('/metrics', { headers: { authorization: `Bearer ${service.platformToken}` } })).text;
      return Number(/^crm_sse_open_streams (\d+)$/m.exec(text)?.[1]);
    };
    const before = await gauge();
    const streams = await Promise.all([watch(user), watch(user)]);
    expect(await gauge()).toBe(before + 2);
    for (const s of streams) s.close();
    await expectEventually(async () => (await gauge()) === before);
  });
});

async function expectEventually(check: () => Promise<boolean>, timeoutMs = 3000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('an instance of its own', () => {
  it('caps open streams in all at STREAM_MAX_TOTAL, and ends every stream with complete when it closes', async () => {
    const small = await startService({ STREAM_MAX_TOTAL: '2' });
    try {
      const [first, second] = await Promise.all([small.provision(), small.provision()]);
      const open = (user: Provisioned) =>
        openStream(`${small.baseUrl}/api/v1/call`, {
          headers: { authorization: `Bearer ${user.key}`, accept: 'text/event-stream' },
          body: { operationId: 'watchNotifications' },
        });
      const streams = [await open(first), await open(second)];
      expect(streams.map((s) => s.status)).toEqual([200, 200]);
      const third = await open(first);
      expect(third.status).toBe(429);
      expect(third.body.error.code).toBe('concurrency_limit');
      const closing = small.close();
      await Promise.all(streams.map((s) => s.ended));
      await closing;
      for (const s of streams) expect(s.events.at(-1)).toMatchObject({ event: 'complete' });
    } finally {
      await small.close().catch(() => undefined);
    }
  });
});

describe('streams bounded per tenant and per client', () => {
  let bounded: TestService;
  const IDLE_MS = 1500;
  const logLines: Array<{ level: number; msg?: string; err?: unknown }> = [];
  beforeAll(async () => {
    bounded = await startService(
      { STREAM_MAX_PER_USER: '3', STREAM_MAX_PER_ORGANIZATION: '4', STREAM_IDLE_TIMEOUT_MS: String(IDLE_MS), LOG_LEVEL: 'info' },
      { logDestination: { write: (line: string) => void logLines.push(JSON.parse(line)) } },
    );
  });
  afterAll(async () => {
    await bounded?.close();
  });

  const streamRequest = (user: Provisioned, route: 'gateway' | 'graphql', headers: Record<string, string> = {}) =>
    route === 'gateway'
      ? {
          url: `${bounded.baseUrl}/api/v1/call`,
          headers: { authorization: `Bearer ${user.key}`, accept: 'text/event-stream', ...headers },
          body: { operationId: 'watchNotifications', variables: {} },
        }
      : {
          url: `${bounded.baseUrl}/graphql`,
          headers: { authorization: `Bearer ${user.key}`, accept: 'text/event-stream', ...headers },
          body: { query: SUBSCRIPTION },
        };
  const openOn = async (user: Provisioned, route: 'gateway' | 'graphql' = 'gateway') => {
    const { url, ...init } = streamRequest(user, route);
    const stream = await openStream(url, init);
    open.push(stream);
    return stream;
  };
  const newKey = async (user: Provisioned) => {
    const created = await bounded.graphql(`mutation($u: ID!) { createApiKey(userId: $u, scopes: [READ, WRITE]) { id secret } }`, {
      u: user.userId,
    });
    return { ...user, keyId: created.body.data.createApiKey.id, key: created.body.data.createApiKey.secret } as Provisioned;
  };

  it('allows STREAM_MAX_PER_USER streams per user whatever its keys, then 429 concurrency_limit with Retry-After, on both routes', async () => {
    const user = await bounded.provision();
    const keys = [user, await newKey(user), await newKey(user)];
    const streams = [await openOn(keys[0]), await openOn(keys[1]), await openOn(keys[2], 'graphql')];
    expect(streams.map((s) => s.status)).toEqual([200, 200, 200]);
    const fourth = await openOn(await newKey(user));
    expect(fourth.status).toBe(429);
    expect(fourth.body.error.code).toBe('concurrency_limit');
    expect(fourth.body.error.message).toMatch(/per user/);
    expect(fourth.headers['retry-after']).toBe('1');
    const viaGraphql = await openOn(keys[0], 'graphql');
    expect(viaGraphql.status).toBe(429);
    expect(viaGraphql.headers['retry-after']).toBe('1');
    streams[0].close();
    await expectEventually(async () => {
      const again = await openOn(keys[1]);
      again.close();
      return again.status === 200;
    });
    for (const s of streams) s.close();
  });

  it('allows STREAM_MAX_PER_ORGANIZATION streams per organization whatever its users; other organizations are not affected', async () => {
    const first = await bounded.provision();
    const colleagues = [first, ...(await Promise.all([1, 2, 3].map(() => bounded.provision({ organizationId: first.organizationId }))))];
    const streams = await Promise.all(colleagues.map((user) => openOn(user)));
    expect(streams.map((s) => s.status)).toEqual([200, 200, 200, 200]);
    const fifth = await openOn(await bounded.provision({ organizationId: first.organizationId }), 'graphql');
    expect(fifth.status).toBe(429);
    expect(fifth.body.errors[0].extensions.code).toBe('RATE_LIMITED');
    expect(fifth.headers['retry-after']).toBe('1');
    const stranger = await openOn(await bounded.provision());
    expect(stranger.status).toBe(200);
    for (const s of [...streams, stranger]) s.close();
  });

  /** A stream whose client reads nothing, written to until its connection holds bytes the client has not taken. */
  async function stalledStream(user: Provisioned, route: 'gateway' | 'graphql') {
    const tag = randomUUID();
    const server = bounded.app.http.server;
    let onRequest!: (request: IncomingMessage, response: ServerResponse) => void;
    const response = new Promise<ServerResponse>((resolve) => {
      onRequest = (request, res) => request.headers['x-test-stream'] === tag && resolve(res);
      server.on('request', onRequest);
    });
    const { url, ...init } = streamRequest(user, route, { 'x-test-stream': tag });
    const client = await openStalledStream(url, init);
    expect(client.status).toBe(200);
    const res = await response;
    server.off('request', onRequest);
    const closed = new Promise<number>((resolve) => res.once('close', () => resolve(performance.now())));
    // Events of 500 ids (about 20 KB each), until the kernel's buffers are full and bytes wait here.
    const ids = Array.from({ length: 500 }, () => randomUUID());
    for (let i = 0; res.writableLength === 0 && !res.closed; i++) {
      if (i > 2000) throw new Error('the connection never filled');
      await bounded.app.services.notificationEvents.updated(user.userId, ids);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return { client, res, closed, stalledAt: performance.now() };
  }

  for (const route of ['gateway', 'graphql'] as const) {
    it(`disconnects a ${route} client that reads nothing for STREAM_IDLE_TIMEOUT_MS, and frees its slot`, async () => {
      const user = await bounded.provision();
      const before = bounded.app.services.streams.size;
      const { client, closed, stalledAt } = await stalledStream(user, route);
      const elapsed = (await closed) - stalledAt;
      expect(elapsed).toBeGreaterThan(IDLE_MS - 500);
      expect(elapsed).toBeLessThan(IDLE_MS + 1500);
      client.resume();
      await client.closed;
      expect(bounded.app.services.streams.size).toBe(before);
    });
  }

  it("ends a stalled stream within 5 s of its key's revocation", async () => {
    const user = await bounded.provision();
    const { client, closed } = await stalledStream(user, 'gateway');
    const revoked = performance.now();
    await bounded.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) }`, { id: user.keyId });
    expect((await closed) - revoked).toBeLessThan(5000);
    client.socket.destroy();
  });

  it('disconnects a client at once when more than 256 KiB of events wait for it', async () => {
    const user = await bounded.provision();
    const { client, res, closed } = await stalledStream(user, 'gateway');
    const ids = Array.from({ length: 500 }, () => randomUUID());
    const started = performance.now();
    // About 20 KB each: past 256 KiB after 13 of them, well before the idle timeout.
    for (let i = 0; i < 20 && !res.closed; i++) await bounded.app.services.notificationEvents.updated(user.userId, ids);
    expect((await closed) - started).toBeLessThan(IDLE_MS - 200);
    client.socket.destroy();
  });

  // Last: the lines of every test above count too (clients disconnected, streams revoked).
  it('logs nothing at warn or above, and no stack, when clients close their streams or are disconnected, on both routes', async () => {
    const user = await bounded.provision();
    const [gateway, graphql] = [await openOn(user), await openOn(user, 'graphql')];
    // One closes while idle, the other right after an event.
    gateway.close();
    await publish(bounded, user.userId, [{ title: 'last' }]);
    await graphql.next(() => true, 2000);
    graphql.close();
    await expectEventually(async () => bounded.app.services.streams.size === 0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(logLines.filter((line) => line.level >= 40)).toEqual([]);
    expect(logLines.filter((line) => line.err !== undefined && (line.err as { stack?: string }).stack)).toEqual([]);
  });
});
