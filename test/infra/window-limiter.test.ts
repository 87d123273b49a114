import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { afterAll, describe, expect, it } from 'vitest';
import { createWindowLimiter } from '../../src/http/credential-guard.js';

const redisUrl = process.env.REDIS_URL;
const clients: Redis[] = [];
afterAll(() => clients.forEach((client) => client.disconnect()));

describe.runIf(redisUrl)('a window limiter on Redis', () => {
  const connect = (url: string, options: object = {}) => {
    const client = new Redis(url, { lazyConnect: true, ...options });
    clients.push(client);
    return client;
  };

  it('spends the window rate-limiter-flexible keeps for the key (same Redis key, points and expiry)', async () => {
    const redis = connect(redisUrl!);
    const name = `test-${randomUUID()}`;
    const limiter = createWindowLimiter({ name, limit: 3, redis });
    const theirs = new RateLimiterRedis({ storeClient: redis, keyPrefix: `rl:${name}`, points: 3, duration: 60 });
    const first = await limiter.consume('k');
    expect(first).toMatchObject({ allowed: true, limit: 3, remaining: 2 });
    expect(first.resetAt - Date.now() / 1000).toBeGreaterThan(58);
    expect(first.resetAt - Date.now() / 1000).toBeLessThanOrEqual(61);
    expect(await redis.get(`rl:${name}:k`)).toBe('1');
    const ttl = await redis.pttl(`rl:${name}:k`);
    expect(ttl > 58_000 && ttl <= 60_000).toBe(true);
    // The library's own consume counts in the same window.
    expect((await theirs.consume('k')).remainingPoints).toBe(1);
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 0 });
    const refused = await limiter.consume('k');
    expect(refused).toMatchObject({ allowed: false, remaining: 0 });
    expect(refused.retryAfter >= 1 && refused.retryAfter <= 60).toBe(true);
    // Another key has its own window; a deleted window starts again.
    expect(await limiter.consume('other')).toMatchObject({ allowed: true, remaining: 2 });
    await limiter.delete('k');
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('answers from its in-process window while Redis fails', async () => {
    // Nothing listens on port 1: every command fails at once.
    const broken = connect('redis://127.0.0.1:1', { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    broken.on('error', () => undefined);
    const limiter = createWindowLimiter({ name: `test-${randomUUID()}`, limit: 2, redis: broken });
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 1 });
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 0 });
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, remaining: 0 });
  });
});
