import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/** No offline queue: commands fail fast while Redis is down, so limiters fall back instead of hanging requests. */
export async function connectRedis(url: string, log: Logger): Promise<Redis> {
  const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: true, connectTimeout: 2000 });
  let warned = false;
  redis.on('error', (error) => {
    if (!warned) log.warn({ err: error }, 'redis unavailable; using in-process rate windows until it returns');
    warned = true;
  });
  redis.on('ready', () => {
    if (warned) log.info('redis connection restored');
    warned = false;
  });
  await redis.connect();
  return redis;
}
