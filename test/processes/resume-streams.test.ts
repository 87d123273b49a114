import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStream, type SseStream } from '../support/sse-client.js';
import { provision, publishOne, startRedis, stopRedis } from './feed-streams.js';
import { freePort, requireRealBackends, spawnService, type ServiceProcess } from './spawn-service.js';

/**
 * Streams that resume across service processes (built and started as `npm start` does): a client
 * that left one process resumes on another from its Last-Event-ID; events published while Redis
 * was down reach a resuming client as a `reset`, never as a silent gap (against a redis-server of
 * this test's own for the restarts).
 */
requireRealBackends();
const streams: SseStream[] = [];
afterAll(() => {
  for (const stream of streams) stream.close();
});

async function watch(service: ServiceProcess, key: string, lastEventId?: string) {
  const stream = await openStream(`${service.url}/api/v1/call`, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...(lastEventId && { 'last-event-id': lastEventId }) },
    body: { operationId: 'watchNotifications', variables: {} },
  });
  expect(stream.status).toBe(200);
  streams.push(stream);
  return stream;
}

const nextEvents = (stream: SseStream) => stream.events.filter((e) => e.event === 'next');
const kinds = (stream: SseStream) => nextEvents(stream).map((e) => JSON.parse(e.data).data.kind as string);

/** A stream's first event, then the stream closed: the id a client would resume from. */
async function seenThenLeft(service: ServiceProcess, user: { userId: string; key: string }) {
  const stream = await watch(service, user.key);
  await publishOne(service, user.userId, 'seen');
  await stream.next(() => true, 2000);
  stream.close();
  return nextEvents(stream)[0].id!;
}

describe('resuming on another process', () => {
  let a: ServiceProcess;
  let b: ServiceProcess;
  beforeAll(async () => {
    [a, b] = await Promise.all([spawnService({}), spawnService({})]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('a client that left A resumes on B with its Last-Event-ID: the events published on B meanwhile, in order, then live ones', async () => {
    const user = await provision(a);
    const lastId = await seenThenLeft(a, user);
    const missed = [await publishOne(b, user.userId, 'm1'), await publishOne(a, user.userId, 'm2'), await publishOne(b, user.userId, 'm3')];
    const resumed = await watch(b, user.key, lastId);
    await resumed.next((d) => d.data.notificationIds[0] === missed[2], 2000);
    const live = await publishOne(a, user.userId, 'live');
    await resumed.next((d) => d.data.notificationIds[0] === live, 2000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(nextEvents(resumed).map((e) => JSON.parse(e.data).data.notificationIds[0])).toEqual([...missed, live]);
    expect(nextEvents(resumed).map((e) => JSON.parse(e.data).data.counts.unreadCount)).toEqual([2, 3, 4, 5]);
  });
});

/** Waits until the service has marked the user's log, once Redis is back, as missing what it could not write. */
async function repaired(port: number, userId: string) {
  const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: null });
  try {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const entries = await client.xrange(`notifications:log:${userId}`, '-', '+');
      if (entries.some(([, fields]) => fields[1]?.includes('"kind":"reset"'))) return;
      if (Date.now() > deadline) throw new Error('the log was not marked after Redis returned');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    client.disconnect();
  }
}

describe('Redis down meanwhile', () => {
  let redis: ChildProcess | undefined;
  let service: ServiceProcess | undefined;
  let dir: string | undefined;
  afterAll(async () => {
    await service?.stop();
    if (redis && redis.exitCode === null && redis.signalCode === null) await stopRedis(redis);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function outage(persistent: boolean) {
    const port = await freePort();
    dir = mkdtempSync(join(tmpdir(), 'resume-redis-'));
    // Persistent: the log outlives the restart, so only the repair can tell of the hole.
    const args = persistent ? ['--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always'] : undefined;
    redis = await startRedis(port, args);
    service = await spawnService({ REDIS_URL: `redis://127.0.0.1:${port}` });
    const user = await provision(service);
    const lastId = await seenThenLeft(service, user);
    // One client stays connected through the outage, and hears of the publish under an unlogged id.
    const staying = await watch(service, user.key, lastId);
    await stopRedis(redis);
    const during = await publishOne(service, user.userId, 'during');
    await staying.next((d) => d.data.notificationIds[0] === during, 2000);
    const unloggedId = nextEvents(staying).at(-1)!.id!;
    staying.close();
    redis = await startRedis(port, args);
    await repaired(port, user.userId);
    return { user, lastId, during, unloggedId, stop: async () => (await service!.stop(), await stopRedis(redis!)) };
  }

  for (const persistent of [false, true]) {
    it(`a client resuming from before the outage gets reset, never a silent gap (Redis restarted ${persistent ? 'with' : 'without'} its data)`, async () => {
      const { user, lastId, during, unloggedId, stop } = await outage(persistent);
      try {
        for (const from of [lastId, unloggedId]) {
          const resumed = await watch(service!, user.key, from);
          const reset = await resumed.next((d) => d.data.kind === 'reset', 10_000);
          expect(reset.data).toEqual({ kind: 'reset', notification: null, notificationIds: [], counts: { unreadCount: 2, readCount: 0 } });
          // Whatever it was told before the reset, it was never the unlogged event alone, silently.
          expect(nextEvents(resumed).some((e) => JSON.parse(e.data).data.notificationIds[0] === during)).toBe(false);
          expect(kinds(resumed).at(0)).toBe('reset');
          resumed.close();
        }
        // After the reset, resuming from its id works again.
        const fresh = await watch(service!, user.key, lastId);
        await fresh.next((d) => d.data.kind === 'reset', 10_000);
        const resetId = nextEvents(fresh).at(-1)!.id!;
        fresh.close();
        const after = await publishOne(service!, user.userId, 'after');
        const resumed = await watch(service!, user.key, resetId);
        await resumed.next((d) => d.data.notificationIds[0] === after, 2000);
        expect(kinds(resumed)).toEqual(['created']);
      } finally {
        await stop();
        service = undefined;
      }
    }, 60_000);
  }
});
