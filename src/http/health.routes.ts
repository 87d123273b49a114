import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { sql, type Db } from '../infra/database/sql.js';

/** `/healthz`: the process is up. `/readyz`: migrations done and every backend answers. */
export function registerHealthRoutes(app: FastifyInstance, services: { sql: Db; redis: Redis | null }) {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const checks: Record<string, 'ok' | 'down' | 'not configured'> = {
      database: 'down',
      redis: services.redis ? 'down' : 'not configured',
    };
    const probes: Promise<unknown>[] = [services.sql.rows(sql`select 1`).then(() => (checks.database = 'ok'))];
    if (services.redis) probes.push(services.redis.ping().then(() => (checks.redis = 'ok')));
    await Promise.race([Promise.allSettled(probes), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
    const ready = Object.values(checks).every((state) => state !== 'down');
    return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', checks });
  });
}

const CHECKS = { type: 'string', enum: ['ok', 'down', 'not configured'] };
const READINESS = {
  type: 'object',
  required: ['status', 'checks'],
  properties: {
    status: { type: 'string', enum: ['ready', 'not ready'] },
    checks: { type: 'object', required: ['database', 'redis'], properties: { database: CHECKS, redis: CHECKS } },
  },
};

/** The health routes as the API reference documents them (http/documented-route.ts's shape). */
export const healthReference = [
  {
    method: 'GET',
    path: '/healthz',
    summary: 'The process is up. Public.',
    description: 'Answers while the process serves requests; it asks nothing of the database or Redis (that is `/readyz`).',
    tag: 'Service',
    responses: {
      200: {
        description: 'Up.',
        schema: { type: 'object', required: ['status'], properties: { status: { const: 'ok' } } },
      },
    },
  },
  {
    method: 'GET',
    path: '/readyz',
    summary: 'Ready for traffic: migrations done, the database and Redis (when configured) answer. Public.',
    description: 'For a load balancer: 503 while starting, or while a backend does not answer, with which one in the body.',
    tag: 'Service',
    responses: {
      200: { description: 'Ready.', schema: READINESS },
      503: { description: 'Not ready: a backend does not answer.', schema: READINESS },
    },
  },
] as const;
