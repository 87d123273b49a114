import type { FastifyInstance } from 'fastify';
import type { EmbeddedEngine } from '../infra/database/embedded-engine.js';
import type pino from 'pino';
import { createLogger } from '../infra/logger.js';
import type { Config } from '../infra/config.js';
import { openDatabase, type Database } from '../infra/database/orm.js';
import { allowOnly, createHttpServer } from '../http/server.js';
import { healthReference, registerHealthRoutes } from '../http/health.routes.js';
import { createAuthenticator } from '../auth/authenticate.js';
import { createRateWindows } from '../auth/rate-windows.js';
import { printedSchema, schema } from './schema.js';
import { createYogaServer } from '../http/graphql/yoga.js';
import { createCompiledDocuments } from '../http/graphql/compiled-execution.js';
import { createGraphqlFastPath } from '../http/graphql/fast-path.js';
import { createOperationExecutor, createOperationSubscriber } from '../http/rest/operation-executor.js';
import { registerGraphqlRoutes } from '../http/graphql/graphql.routes.js';
import { buildOperationRegistry } from '../http/gateway/operation-registry.js';
import { discoveryReference, registerDiscoveryRoutes } from '../http/gateway/discovery.routes.js';
import { registerRestRoute, registeredRestRoutes } from '../http/rest/rest-route.js';
import { referenceRoutesReference, registerReferenceRoutes } from '../reference/reference.routes.js';
import { gatewayCallRoute } from '../http/rest/routes/gateway-call.route.js';
import { skipTraceRoute } from '../http/rest/routes/skip-trace.route.js';
import { skipTraceAccountRoute, skipTraceUsageRoute } from '../http/rest/routes/skip-trace-billing.routes.js';
import { startIdempotencySweeper } from '../skip-trace/idempotency/idempotency-sweeper.js';
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
import { createLocalEventBus, createRedisEventBus } from '../infra/event-bus.js';
import { createStreamRegistry } from '../infra/stream-registry.js';
import { activeKeyIds } from '../auth/api-keys.data.js';
import { createNotificationEvents } from '../notifications/notification-events.js';
import { registerServiceIndex, serviceIndexReference } from '../reference/service-index.routes.js';

/** How often open streams' keys are re-checked: a revoked key's streams end within about this long (at most 5 s promised). */
const STREAM_KEY_RECHECK_MS = 2000;

function createProvider(config: Config, log: pino.Logger, database: Database): SkipTraceProvider {
  const provider = config.skipTrace.provider;
  return provider.kind === 'http'
    ? createHttpProvider({ url: provider.url, apiKey: provider.apiKey, log: log.child({ component: 'skip-trace-vendor' }) })
    : createRecordsProvider(database.sql);
}

export interface App {
  http: FastifyInstance;
  services: Services;
  database: Database;
  close(): Promise<void>;
}

/**
 * Wires the service: database (migrated), Redis, schema, Yoga, routes. Listening is the caller's
 * job. `embeddedEngine`: the embedded database, if the caller has already begun starting it.
 */
export async function buildApp(
  config: Config,
  log: pino.Logger = createLogger(config.logLevel),
  options: { embeddedEngine?: Promise<EmbeddedEngine> } = {},
): Promise<App> {
  const opening = openDatabase(config.database, log, options.embeddedEngine);
  let registry;
  try {
    // Needs no database, only CPU: built while the database opens (an embedded engine's
    // WebAssembly compiles on background threads meanwhile), not after.
    registry = buildOperationRegistry(schema);
  } catch (error) {
    await opening.then((database) => database.close()).catch(() => undefined);
    throw error;
  }
  const database = await opening;
  // Loaded only when configured: without REDIS_URL the windows are in-process.
  const redis = config.redisUrl ? await (await import('../infra/redis.js')).connectRedis(config.redisUrl, log) : null;
  const metrics = createMetricsRegistry(database.pool);
  const skipTraceMetrics = createSkipTraceMetrics(metrics, config.skipTrace.provider.kind);
  const eventBus = config.redisUrl && redis ? createRedisEventBus(config.redisUrl, redis, log) : createLocalEventBus();
  const streams = createStreamRegistry({
    ...config.streams,
    recheckMs: STREAM_KEY_RECHECK_MS,
    activeKeys: (keyIds) => activeKeyIds(database.sql, keyIds),
    log,
    onRefused: registerStreamMetrics(metrics, () => streams.size),
  });
  const services: Services = {
    config,
    log,
    orm: database.orm,
    sql: database.sql,
    redis,
    metrics,
    authenticator: createAuthenticator({ internalApiToken: config.internalApiToken }),
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
    notificationEvents: createNotificationEvents({ sql: database.sql, bus: eventBus, log }),
  };

  const compiledDocuments = createCompiledDocuments();
  const yoga = createYogaServer(schema, services, compiledDocuments);
  const executeOperation = createOperationExecutor(schema, services);
  const subscribeOperation = createOperationSubscriber(schema, services);
  const gatewayCall = gatewayCallRoute(registry);
  const http = createHttpServer(config, log);

  registerHttpMetrics(http, metrics, gatewayCall.path);
  registerHealthRoutes(http, services);
  registerServiceIndex(http);
  registerMetricsRoute(http, services);
  registerGraphqlRoutes(http, {
    services,
    yoga,
    printedSchema,
    fastPath: createGraphqlFastPath({ services, yoga, compiled: compiledDocuments }),
  });
  const restDeps = { services, executeOperation, subscribeOperation };
  registerRestRoute(http, restDeps, gatewayCall);
  registerRestRoute(http, restDeps, skipTraceRoute(schema));
  registerRestRoute(http, restDeps, skipTraceAccountRoute(schema));
  registerRestRoute(http, restDeps, skipTraceUsageRoute(schema));
  const idempotencySweeper = startIdempotencySweeper(database.sql, config.skipTrace.idempotencySweep, log);
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
    config.publicUrl,
  );

  return {
    http,
    services,
    database,
    async close() {
      await idempotencySweeper.stop();
      // Connections whose in-flight request finishes during the drain stay open as keep-alive,
      // which would hold close() until they time out: close each as soon as it goes idle.
      const sweeper = setInterval(() => http.server.closeIdleConnections(), 50);
      try {
        // Open streams end with `complete` (their clients reconnect elsewhere); new ones are refused.
        const closing = http.close();
        streams.drain();
        await closing;
      } finally {
        clearInterval(sweeper);
      }
      // Traces that outlived their callers (timeouts) may still be writing their results.
      await Promise.allSettled(services.traces.pending());
      eventBus.close();
      redis?.disconnect();
      await database.close();
    },
  };
}
