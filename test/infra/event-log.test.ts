import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalEventBus } from '../../src/infra/event-bus.js';
import { createLocalEventLog, createRedisEventLog, type EventLog } from '../../src/infra/event-log.js';

/**
 * The event log streams resume from: at most `maxEntries` per key, ids resumable for `windowMs`,
 * the same answers in process and on Redis (a Redis stream per key).
 */

const limits = { maxEntries: 5, windowMs: 400 };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function behavesAsTheLog(make: () => EventLog) {
  it('answers from an id: that entry and those after it, in order; published as `<id> <message>`', async () => {
    const log = make();
    const key = `test:log:${randomUUID()}`;
    const ids = [await log.append(key, `${key}:channel`, 'a'), await log.append(key, `${key}:channel`, 'b')];
    expect(ids.every((id) => /^\d+-\d+$/.test(id))).toBe(true);
    expect(await log.readFrom(key, ids[0])).toEqual({
      found: true,
      entries: [
        { id: ids[0], message: 'a' },
        { id: ids[1], message: 'b' },
      ],
    });
  });

  it(`keeps at most maxEntries per key: the oldest id is then unknown, with the tail to resume from`, async () => {
    const log = make();
    const key = `test:log:${randomUUID()}`;
    const ids: string[] = [];
    for (let i = 0; i < limits.maxEntries + 1; i++) ids.push(await log.append(key, `${key}:channel`, String(i)));
    expect(await log.readFrom(key, ids[0])).toEqual({ found: false, tailId: ids.at(-1) });
    const kept = await log.readFrom(key, ids[1]);
    expect(kept.found && kept.entries.map((e) => e.message)).toEqual(['1', '2', '3', '4', '5']);
  });

  it('forgets ids older than the window; an empty log answers with an anchor id that resumes', async () => {
    const log = make();
    const key = `test:log:${randomUUID()}`;
    const old = await log.append(key, `${key}:channel`, 'old');
    await sleep(limits.windowMs + 200);
    const unknown = await log.readFrom(key, old);
    expect(unknown.found).toBe(false);
    const anchor = unknown.found ? '' : unknown.tailId;
    const next = await log.append(key, `${key}:channel`, 'next');
    expect(await log.readFrom(key, anchor)).toEqual({ found: true, entries: [{ id: next, message: 'next' }] });
  });
}

describe('the in-process event log', () => {
  const bus = createLocalEventBus();
  const logs: Array<ReturnType<typeof createLocalEventLog>> = [];
  afterAll(() => logs.forEach((log) => log.close()));
  behavesAsTheLog(() => {
    const log = createLocalEventLog(bus, limits);
    logs.push(log);
    return log;
  });

  it('hands appended messages to the bus with their id, and drops a key idle for the window', async () => {
    let now = 1_000_000;
    const log = createLocalEventLog(bus, limits, () => now);
    logs.push(log);
    const heard: string[] = [];
    const subscription = bus.subscribe('c', (message) => heard.push(message));
    const id = await log.append('k', 'c', 'hello');
    expect(heard).toEqual([`${id} hello`]);
    expect(id).toBe('1000000-0');
    expect(await log.append('k', 'c', 'again')).toBe('1000000-1');
    subscription.close();
    expect(log.size()).toBe(1);
    now += limits.windowMs + 1;
    await sleep(limits.windowMs + 100);
    expect(log.size()).toBe(0);
  });
});

describe.runIf(process.env.REDIS_URL)('the event log on Redis', () => {
  const redis = new Redis(process.env.REDIS_URL!);
  afterAll(() => redis.disconnect());
  behavesAsTheLog(() => createRedisEventLog(redis, limits));

  it('publishes `<id> <message>` in the same step, and expires an idle key', async () => {
    const key = `test:log:${randomUUID()}`;
    const subscriber = new Redis(process.env.REDIS_URL!);
    const heard: string[] = [];
    subscriber.on('message', (_channel, message) => heard.push(message));
    await subscriber.subscribe(`${key}:channel`);
    const id = await createRedisEventLog(redis, limits).append(key, `${key}:channel`, 'hello');
    await sleep(100);
    expect(heard).toEqual([`${id} hello`]);
    expect(await redis.pttl(key)).toBeGreaterThan(0);
    expect(await redis.pttl(key)).toBeLessThanOrEqual(limits.windowMs);
    subscriber.disconnect();
  });
});
