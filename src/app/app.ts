import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import type { ReplicaReads } from '../infra/database/replica.js';
import type { EmbeddedEngine } from '../infra/database/embedded-engine.js';
import type pino from 'pino';
import type { Registry } from 'prom-client';
import { createLogger } from '../infra/logger.js';
import type { Config } from '../infra/config.js';
import { openDatabase, type Database } from '../infra/database/orm.js';
import { allowOnly, createHttpServer } from '../http/server.js';
import { healthReference, registerHealthRoutes } from '../http/health.routes.js';
import { createAuthenticator, createRateWindows } from '../http/credential-guard.js';
import { createPrincipalCache, localPrincipalVersion, redisPrincipalVersion, type PrincipalVersion } from '../auth/principal-cache.js';
import { printedSchema, schema } from './schema.js';
import { createYogaServer } from '../http/graphql/yoga.js';
import { createCompiledDocuments } from '../http/graphql/compiled-execution.js';
import { createGraphqlFastPath } from '../http/graphql/fast-path.js';
import { createOperationExecutor, createOperationSubscriber } from '../http/rest/operation.js';
import { registerGraphqlRoutes } from '../http/graphql/graphql.routes.js';
import { buildOperationRegistry, gatewayCallRoute, type OperationRegistry } from '../http/gateway/gateway-call.route.js';
import { discoveryReference, registerDiscoveryRoutes } from '../http/gateway/discovery.routes.js';
import { registerRestRoute, registerRestRoutes, registeredRestRoutes, type RestRoute } from '../http/rest/rest-route.js';
import { skipTraceBatchRoute } from '../http/rest/routes/skip-trace-batch.route.js';
import { referenceRoutesReference, registerReferenceRoutes } from '../reference/reference.routes.js';
import { skipTraceRoute } from '../http/rest/routes/skip-trace.route.js';
import { skipTraceAccountRoute, skipTraceUsageRoute } from '../http/rest/routes/skip-trace-billing.routes.js';
import { startIdempotencySweeper } from '../skip-trace/idempotency/idempotency-sweeper.js';
import { startWebhookWorker } from '../webhooks/webhook-worker.js';
import { createWebhookUrlGuard, type Resolve } from '../webhooks/webhook-url.js';
import { webhookSecretRoute } from '../http/rest/routes/webhook-secret.route.js';
import { startFeedSweeper } from '../notifications/feed-sweeper.js';
import type { Services } from '../schema/context.js';
import { createTraceCoordinator } from '../skip-trace/trace-coordinator.js';
import { createHttpProvider } from '../skip-trace/providers/http-provider.js';
import type { SkipTraceProvider } from '../skip-trace/providers/provider.js';
import { createRecordsProvider } from '../skip-trace/providers/records-provider.js';
import { createSkipTraceAdmission } from '../skip-trace/admission.js';
import { createFeedWrites } from '../notifications/feed-writes.js';
import { createSkipTraceMetrics } from '../skip-trace/skip-trace.metrics.js';
import {
  createMetricsRegistry,
  metricsReference,
  registerHttpMetrics,
  registerMetricsRoute,
  registerStreamMetrics,
} from '../http/metrics.js';
import { createLocalEventBus, type EventBus } from '../infra/event-bus.js';
import { createLocalEventLog, createRedisEventLog, type EventLog } from '../infra/event-log.js';
import { createStreamRegistry } from '../infra/stream-registry.js';
import { activeKeyIds } from '../auth/api-keys.data.js';
import { createNotificationEvents } from '../notifications/notification-events.js';
import { registerServiceIndex, serviceIndexReference } from '../reference/service-index.routes.js';
import { activeSkipTraceKeyIds } from '../auth/skip-trace-keys/skip-trace-keys.data.js';
import { startJobWorker } from '../skip-trace/jobs/job-worker.js';
import { jobItemRunner } from '../skip-trace/jobs/job-items.js';
import { queueEndedJobWebhooks } from '../skip-trace/jobs/job-webhook.js';
import { cancelJobRoute, createJobRoute, jobResultsRoute, jobRoute, jobsRoute } from '../http/rest/routes/skip-trace-jobs.routes.js';
import type { Caller } from '../schema/principal.js';

/** How often open streams' keys are re-checked: a revoked key's streams end within about this long (at most 5 s promised). */
const STREAM_KEY_RECHECK_MS = 2000;

export interface App {
  http: FastifyInstance;
  services: Services;
  database: Database;
  close(): Promise<void>;
}

/**
 * Wires the service in order: database and Redis, services, schema engines, routes, lifecycle.
 * Listening is the caller's job. `embeddedEngine`: the embedded database, if already starting;
 * `webhookResolve`: the resolver webhook deliveries check their URLs with (tests; the system's by default).
 */
export async function buildApp(
  config: Config,
  log: pino.Logger = createLogger(config.logLevel),
  options: { embeddedEngine?: Promise<EmbeddedEngine>; webhookResolve?: Resolve } = {},
): Promise<App> {
  const { database, registry } = await openDatabaseAndRegistry(config, log, options.embeddedEngine);
  // Loaded only when configured (the client and the Redis bus): without REDIS_URL the windows and the bus are in-process.
  const redis = config.redisUrl ? await (await import('../infra/redis.js')).connectRedis(config.redisUrl, log) : null;
  const eventBus =
    config.redisUrl && redis
      ? (await import('../infra/redis-event-bus.js')).createRedisEventBus(config.redisUrl, redis, log)
      : createLocalEventBus();
  // Each user's recent feed changes, for streams that resume: in Redis beside the bus, else in process.
  const eventLog = redis ? createRedisEventLog(redis) : createLocalEventLog(eventBus);
  const metrics = createMetricsRegistry(database.pool);
  const replica = await openReplicaOf(config.database, database, { redis, log, metrics });
  const services = createServices(config, log, { database, redis, eventBus, eventLog, replica, metrics }, options.webhookResolve);
  const http = createHttpServer(config, log);
  registerRoutes(http, services, registry);
  const idempotencySweeper = startIdempotencySweeper(database.sql, config.skipTrace.idempotencySweep, log);
  const webhookWorker = startWebhookWorker(database.sql, config.webhooks, log, services.webhookUrls.options);
  const feedSweeper = startFeedSweeper({ db: database.sql, events: services.notificationEvents, log }, config.notificationSweep);
  return {
    http,
    services,
    database,
    close: async () => {
      // Job items still running past the grace keep their leases, which run out for another instance to claim them.
      await Promise.all([idempotencySweeper.stop(), feedSweeper.stop(), webhookWorker.stop(), services.jobWorker.stop()]);
      await closeHttp(http, services);
      // Traces that outlived their callers (timeouts) may still be writing their results.
      await Promise.allSettled(services.traces.pending());
      services.notificationEvents.close();
      eventLog.close();
      eventBus.close();
      await replica?.close();
      redis?.disconnect();
      await database.close();
    },
  };
}

/** The read replica's pool and poller, loaded only when DATABASE_REPLICA_URL is set. */
async function openReplicaOf(
  config: Config['database'],
  database: Database,
  backends: { redis: Redis | null; log: pino.Logger; metrics: Registry },
) {
  if (config.kind !== 'postgres' || !config.replica) return null;
  const { openReplica } = await import('../infra/database/replica.js');
  const options = { ...config.replica, poolMax: config.poolMax, preparedStatements: config.preparedStatements ?? false };
  return openReplica(options, database.sql, { ...backends, log: backends.log.child({ component: 'read-replica' }) });
}

/** Shared through Redis; in process for the embedded database (one process); none for PostgreSQL without Redis. */
function principalVersionOf(config: Config, redis: Redis | null, log: pino.Logger): PrincipalVersion | null {
  if (redis) return redisPrincipalVersion(redis, log);
  return config.database.kind === 'embedded' ? localPrincipalVersion() : null;
}

/** The operation registry needs only CPU: built while the database opens (an embedded engine compiles meanwhile). */
async function openDatabaseAndRegistry(config: Config, log: pino.Logger, embeddedEngine: Promise<EmbeddedEngine> | undefined) {
  const opening = openDatabase(config.database, log, embeddedEngine);
  let registry;
  try {
    registry = buildOperationRegistry(schema);
  } catch (error) {
    await opening.then((database) => database.close()).catch(() => undefined);
    throw error;
  }
  return { database: await opening, registry };
}

function createServices(
  config: Config,
  log: pino.Logger,
  backends: {
    database: Database;
    redis: Redis | null;
    eventBus: EventBus;
    eventLog: EventLog;
    replica: ReplicaReads | null;
    metrics: Registry;
  },
  webhookResolve?: Resolve,
): Services {
  const { database, redis, eventBus, eventLog, replica, metrics } = backends;
  const skipTraceMetrics = createSkipTraceMetrics(metrics, config.skipTrace.provider.kind);
  const streams = createStreams(config, log, database, metrics);
  const principals = createPrincipalCache({ ...config.principalCache, version: principalVersionOf(config, redis, log) });
  const services: Services = {
    config,
    log,
    orm: database.orm,
    sql: database.sql,
    redis,
    replica,
    metrics,
    principals,
    authenticator: createAuthenticator({ internalApiToken: config.internalApiToken, principals }),
    rateWindows: createRateWindows(config.limits, config.internalApiToken, redis, metrics),
    traces: createTraceCoordinator({
      sql: database.sql,
      redis,
      provider: createProvider(config, log, database),
      log,
      timeoutMs: config.limits.skipTraceTimeoutMs,
      ttlDays: config.skipTrace.cacheTtlDays,
      metrics: skipTraceMetrics,
    }),
    skipTraceAdmission: createSkipTraceAdmission(config.limits, metrics),
    feedWrites: createFeedWrites(config.limits, metrics),
    skipTraceMetrics,
    streams,
    notificationEvents: createNotificationEvents({ db: database.sql, bus: eventBus, eventLog, log }),
    webhookUrls: createWebhookUrlGuard({ allowPrivate: config.webhooks.allowPrivate, resolve: webhookResolve }),
    // Set below: its items run on the services above.
    jobWorker: null as unknown as Services['jobWorker'],
  };
  services.jobWorker = startJobWorker({
    db: database.sql,
    log,
    ...config.skipTrace.jobs,
    runItem: jobItemRunner(services),
    afterSettled: () => queueEndedJobWebhooks(database.sql),
  });
  return services;
}

function createStreams(config: Config, log: pino.Logger, database: Database, metrics: Registry) {
  const streams = createStreamRegistry({
    ...config.streams,
    recheckMs: STREAM_KEY_RECHECK_MS,
    // Gateway keys' streams and skip trace keys' (a job's progress).
    activeKeys: async (keyIds) =>
      new Set([...(await activeKeyIds(database.sql, keyIds)), ...(await activeSkipTraceKeyIds(database.sql, keyIds))]),
    log,
    onRefused: registerStreamMetrics(metrics, () => streams.size),
  });
  return streams;
}

function createProvider(config: Config, log: pino.Logger, database: Database): SkipTraceProvider {
  const provider = config.skipTrace.provider;
  return provider.kind === 'http'
    ? createHttpProvider({ url: provider.url, apiKey: provider.apiKey, log: log.child({ component: 'skip-trace-vendor' }) })
    : createRecordsProvider(database.sql);
}

/** Every route, on the schema's engines: `/graphql` (Yoga and its fast path), the REST routes, the documents. */
function registerRoutes(http: FastifyInstance, services: Services, registry: OperationRegistry) {
  const compiledDocuments = createCompiledDocuments();
  const yoga = createYogaServer(schema, services, compiledDocuments);
  const gatewayCall = gatewayCallRoute(registry);
  registerHttpMetrics(http, services.metrics, gatewayCall.path);
  registerHealthRoutes(http, services);
  registerServiceIndex(http);
  registerMetricsRoute(http, services);
  registerGraphqlRoutes(http, {
    services,
    yoga,
    printedSchema,
    fastPath: createGraphqlFastPath({ services, yoga, compiled: compiledDocuments }),
  });
  const restDeps = {
    services,
    executeOperation: createOperationExecutor(schema, services),
    subscribeOperation: createOperationSubscriber(schema, services),
  };
  registerRestRoute(http, restDeps, gatewayCall);
  registerRestRoute(http, restDeps, skipTraceRoute(schema));
  registerRestRoute(http, restDeps, skipTraceBatchRoute(schema));
  registerRestRoute(http, restDeps, skipTraceAccountRoute(schema));
  registerRestRoute(http, restDeps, skipTraceUsageRoute(schema));
  registerRestRoute(http, restDeps, webhookSecretRoute(schema));
  registerRestRoutes(http, restDeps, [
    createJobRoute(schema),
    jobsRoute(schema),
    jobRoute(schema),
    jobResultsRoute(schema),
    cancelJobRoute(schema),
  ] as unknown as RestRoute<Caller>[]);
  registerDiscoveryRoutes(http, registry);
  allowOnly(http, '/schema.graphql', ['GET']);
  allowOnly(http, '/healthz', ['GET']);
  allowOnly(http, '/readyz', ['GET']);
  // The API reference documents every REST route registered above (and any registered later).
  registerReferenceRoutes(
    http,
    () => ({
      restRoutes: registeredRestRoutes(http),
      documentedRoutes: [serviceIndexReference, ...discoveryReference, ...healthReference, metricsReference, ...referenceRoutesReference],
    }),
    services.config.publicUrl,
  );
}

/** Stops taking requests and ends open streams (their clients reconnect elsewhere with `complete`). */
async function closeHttp(http: FastifyInstance, services: Services) {
  // Connections whose in-flight request finishes during the drain stay open as keep-alive,
  // which would hold close() until they time out: close each as soon as it goes idle.
  const sweeper = setInterval(() => http.server.closeIdleConnections(), 50);
  try {
    const closing = http.close();
    services.streams.drain();
    await closing;
  } finally {
    clearInterval(sweeper);
  }
}
