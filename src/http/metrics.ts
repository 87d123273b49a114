import type { DocumentedRoute } from './documented-route.js';
import type { FastifyInstance, FastifyReply, FastifyRequest, onResponseHookHandler } from 'fastify';
import type pg from 'pg';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { SeriesHistogram } from '../infra/series-histogram.js';
import type { Services } from '../schema/context.js';
import { allowOnly } from './server.js';
import { credentialGuard } from './credential-guard.js';

/** Seconds; REST and GraphQL answers take milliseconds, a skip trace up to its timeout (30 s). */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The app's registry: prom-client's process defaults and the pool's size; HTTP and domains add their own. */
export function createMetricsRegistry(pool: pg.Pool | null): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  if (pool) {
    // `state` is busy or idle: bounded, and disjoint, so their sum is the pool's open connections.
    new Gauge({
      name: 'crm_db_pool_connections',
      help: 'PostgreSQL pool connections by state (busy: running a query, idle); their sum is the open connections.',
      labelNames: ['state'] as const,
      registers: [registry],
      collect() {
        this.set({ state: 'busy' }, pool.totalCount - pool.idleCount);
        this.set({ state: 'idle' }, pool.idleCount);
      },
    });
    new Gauge({
      name: 'crm_db_pool_waiting_clients',
      help: 'Queries waiting for a PostgreSQL pool connection.',
      registers: [registry],
      collect() {
        this.set(pool.waitingCount);
      },
    });
  }
  return registry;
}

/**
 * Request latency by route, with bounded labels (the route's pattern, never the URL). Call before
 * routes are registered: each hook binds its pattern once, since `request.routeOptions` allocates per read.
 */
export function registerHttpMetrics(app: FastifyInstance, registry: Registry, gatewayPath: string) {
  const requests = new SeriesHistogram(
    'crm_http_request_duration_seconds',
    'HTTP requests by route pattern, method and status, with their duration (_count counts requests).',
    ['route', 'method', 'status'],
    LATENCY_BUCKETS,
    registry,
  );
  const gatewayCalls = new SeriesHistogram(
    'crm_gateway_call_duration_seconds',
    'Gateway calls (POST /api/v1/call) by operationId (unknown for any other) and status, with their duration.',
    ['operation_id', 'status'],
    LATENCY_BUCKETS,
    registry,
  );
  const observe = (route: string, request: FastifyRequest, reply: FastifyReply) => {
    const seconds = reply.elapsedTime / 1000;
    const status = String(reply.statusCode);
    requests.observe(seconds, route, request.method, status);
    if (route === gatewayPath && request.method === 'POST')
      gatewayCalls.observe(seconds, request.restCall?.operation.name ?? 'unknown', status);
  };

  app.addHook('onRoute', (route) => {
    const pattern = route.url;
    const hook: onResponseHookHandler = (request, reply, done) => {
      observe(pattern, request, reply);
      done();
    };
    route.onResponse = [...(Array.isArray(route.onResponse) ? route.onResponse : route.onResponse ? [route.onResponse] : []), hook];
  });
  // Requests no route matched (the not-found handler). URLs the router cannot decode and requests
  // Node's parser refuses are answered before any hook runs (http/server.ts): not counted.
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) observe('unmatched', request, reply);
    done();
  });
}

/** Open event streams on this instance, read at scrape time, and their refusals. */
export function registerStreamMetrics(registry: Registry, openStreams: () => number): () => void {
  new Gauge({
    name: 'crm_sse_open_streams',
    help: 'Open Server-Sent Event streams (notification subscriptions) on this instance.',
    registers: [registry],
    collect() {
      this.set(openStreams());
    },
  });
  const refusals = new Counter({
    name: 'crm_sse_stream_refusals_total',
    help: 'Streams refused by the per-key, per-user, per-organization or per-instance stream limit (429 concurrency_limit).',
    registers: [registry],
  });
  return () => refusals.inc();
}

/** `/metrics` as the API reference documents it. */
export const metricsReference: DocumentedRoute = {
  method: 'GET',
  path: '/metrics',
  summary: 'Prometheus metrics of this instance (text format), for the platform token.',
  description:
    'Requests by route, operation and status with latencies; skip trace outcomes, credits, cache and provider; rate-limit and concurrency refusals; open streams; the database pool and event-loop lag.',
  tag: 'Service',
  credential: 'platform token',
  rateLimited: true,
  responses: { 200: { description: 'Prometheus text format.', mediaType: 'text/plain', schema: { type: 'string' } } },
};

/** `GET /metrics`: the registry in Prometheus text format, for the platform token only. */
export function registerMetricsRoute(app: FastifyInstance, services: Services) {
  app.get('/metrics', {
    onRequest: credentialGuard(services, ['platform']),
    handler: async (_request, reply) => reply.header('Content-Type', services.metrics.contentType).send(await services.metrics.metrics()),
  });
  allowOnly(app, '/metrics', ['GET']);
}
