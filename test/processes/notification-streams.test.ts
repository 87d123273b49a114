import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStream, type SseStream } from '../support/sse-client.js';
import { provision, publishOne, startRedis, stopRedis } from './feed-streams.js';
import { freePort, graphql, json, requireRealBackends, spawnService, type ServiceProcess } from './spawn-service.js';

/**
 * watchNotifications across server processes (built and started as `npm start` does): delivery
 * through the shared Redis, the keep-alive on the wire, draining on SIGTERM, and a Redis restart
 * (against a redis-server of this test's own, never the shared one).
 */
requireRealBackends();
let a: ServiceProcess;
let b: ServiceProcess;
const streams: SseStream[] = [];

beforeAll(async () => {
  [a, b] = await Promise.all([spawnService({}), spawnService({})]);
});
afterAll(async () => {
  for (const stream of streams) stream.close();
  await Promise.all([a?.stop(), b?.stop()]);
});

async function watch(service: ServiceProcess, key: string) {
  const stream = await openStream(`${service.url}/api/v1/call`, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' },
    body: { operationId: 'watchNotifications', variables: {} },
  });
  expect(stream.status).toBe(200);
  streams.push(stream);
  // No pause: a stream answers only once its subscription is confirmed by Redis.
  return stream;
}

describe('watchNotifications across processes', () => {
  it('a stream on one process receives within 1 s a publish and a mark made through the other', async () => {
    const user = await provision(a);
    const other = await provision(a);
    const stream = await watch(a, user.key);
    const bystander = await watch(a, other.key);
    const started = performance.now();
    const id = await publishOne(b, user.userId, 'from b');
    const created = await stream.next(() => true, 1000);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(created.data).toMatchObject({ kind: 'created', notificationIds: [id], counts: { unreadCount: 1, readCount: 0 } });

    const mark = await json(`${b.url}/api/v1/call`, {
      bearer: user.key,
      body: JSON.stringify({ operationId: 'markNotificationsRead', variables: { notificationIds: [id], isSeen: true } }),
    });
    expect(mark.body.data.updatedCount).toBe(1);
    const updated = await stream.next((d) => d.data.kind === 'updated', 1000);
    expect(updated.data).toEqual({ kind: 'updated', notification: null, notificationIds: [id], counts: { unreadCount: 0, readCount: 1 } });
    expect(bystander.events.filter((e) => e.event === 'next')).toEqual([]);
  });

  it("ends a stream on one process within 5 s of its key's revocation through the other", async () => {
    const user = await provision(a);
    const stream = await watch(a, user.key);
    const revoked = performance.now();
    const result = await graphql(
      b,
      `
        mutation ($id: ID!) {
          revokeApiKey(id: $id)
        }
      `,
      { id: user.keyId },
    );
    expect(result.body.data.revokeApiKey).toBe(true);
    await stream.ended;
    expect(performance.now() - revoked).toBeLessThan(5000);
    expect(JSON.parse(stream.events.at(-2)!.data).error.code).toBe('invalid_key');
    expect(stream.events.at(-1)!.event).toBe('complete');
  });

  it('sends a keep-alive comment every 15 s, and the stream outlives the request timeout', async () => {
    const user = await provision(b);
    const stream = await watch(b, user.key);
    const opened = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 15_800));
    // The opening comment, then one at 15 s.
    expect(stream.comments).toHaveLength(2);
    expect(stream.comments[1] - opened).toBeGreaterThan(14_000);
    const id = await publishOne(a, user.userId, 'still open');
    expect((await stream.next(() => true, 1000)).data.notificationIds).toEqual([id]);
  }, 30_000);
});

describe('shutdown', () => {
  it('SIGTERM ends open streams with complete and the process exits cleanly', async () => {
    const service = await spawnService({});
    const user = await provision(service);
    const stream = await watch(service, user.key);
    const stopped = performance.now();
    const code = await service.stop('SIGTERM');
    await stream.ended;
    expect(code).toBe(0);
    expect(performance.now() - stopped).toBeLessThan(5000);
    expect(stream.events.at(-1)).toMatchObject({ event: 'complete' });
  });
});

describe('Redis restarted mid-stream', () => {
  let redis: ChildProcess | undefined;
  let service: ServiceProcess | undefined;
  afterAll(async () => {
    await service?.stop();
    if (redis && redis.exitCode === null) await stopRedis(redis);
  });

  it('keeps the stream open, delivers this instance’s publishes meanwhile, and resumes with a reset event (counts) when Redis returns', async () => {
    const port = await freePort();
    redis = await startRedis(port);
    service = await spawnService({ REDIS_URL: `redis://127.0.0.1:${port}` });
    const user = await provision(service);
    const stream = await watch(service, user.key);
    await publishOne(service, user.userId, 'before');
    await stream.next((d) => d.data.kind === 'created', 1000);

    await stopRedis(redis);
    // Redis gone: a stream still opens (without waiting more than about a second for a
    // subscription Redis cannot confirm), and publishes on this instance reach its own streams.
    const opening = performance.now();
    const second = await watch(service, user.key);
    expect(performance.now() - opening).toBeLessThan(3000);
    const during = await publishOne(service, user.userId, 'during');
    await stream.next((d) => d.data.notificationIds[0] === during, 2000);
    await second.next((d) => d.data.notificationIds[0] === during, 2000);

    redis = await startRedis(port);
    const resumed = await stream.next((d) => d.data.kind === 'reset', 10_000);
    expect(resumed.data).toEqual({ kind: 'reset', notification: null, notificationIds: [], counts: { unreadCount: 2, readCount: 0 } });
    const after = await publishOne(service, user.userId, 'after');
    const event = await stream.next((d) => d.data.notificationIds[0] === after, 2000);
    expect(event.data.counts).toEqual({ unreadCount: 3, readCount: 0 });
    expect(stream.events.some((e) => e.event === 'complete')).toBe(false);
  }, 60_000);
});
