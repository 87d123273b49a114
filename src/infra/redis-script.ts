import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/** The text is sent only when Redis answers NOSCRIPT. */
export function redisScript(redis: Redis, source: string) {
  const sha = createHash('sha1').update(source).digest('hex');
  return async (keys: string[], args: Array<string | number>): Promise<unknown> => {
    try {
      return await redis.evalsha(sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!String((error as Error).message).startsWith('NOSCRIPT')) throw error;
      return redis.eval(source, keys.length, ...keys, ...args);
    }
  };
}
