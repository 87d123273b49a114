import { z } from 'zod';

/** Defaults follow the API reference; the README tables every variable. */
const emptyAsUndefined = (v: unknown) => (v === '' ? undefined : v);
const optionalString = z.preprocess(emptyAsUndefined, z.string().optional());
const int = (def: number, min = 1) => z.preprocess(emptyAsUndefined, z.coerce.number().int().min(min).default(def));
const bool = (def: boolean) =>
  z.preprocess(
    emptyAsUndefined,
    z
      .enum(['true', 'false', '1', '0'])
      .default(def ? 'true' : 'false')
      .transform((v) => v === 'true' || v === '1'),
  );

const envSchema = z.object({
  NODE_ENV: z.preprocess(emptyAsUndefined, z.enum(['development', 'production', 'test']).default('development')),
  PORT: int(4000, 0).pipe(z.number().max(65535)),
  HOST: optionalString,
  LOG_LEVEL: z.preprocess(emptyAsUndefined, z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')),
  LOG_FORMAT: z.preprocess(emptyAsUndefined, z.enum(['json', 'pretty']).default('json')),
  DATABASE_URL: z.preprocess(
    emptyAsUndefined,
    z
      .url({
        protocol: /^postgres(ql)?$/,
        error: 'must be a postgres:// or postgresql:// URL, e.g. postgres://postgres@127.0.0.1:5432/app',
      })
      .optional(),
  ),
  DATA_DIR: z.preprocess(emptyAsUndefined, z.string().default('./data')),
  DATABASE_POOL_MAX: int(10),
  DATABASE_PREPARED_STATEMENTS: bool(true),
  DATABASE_REPLICA_URL: z.preprocess(
    emptyAsUndefined,
    z
      .url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// or postgresql:// URL (a streaming replica of DATABASE_URL)' })
      .optional(),
  ),
  DATABASE_REPLICA_TIMEOUT_MS: int(500),
  REDIS_URL: z.preprocess(
    emptyAsUndefined,
    z.url({ protocol: /^rediss?$/, error: 'must be a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379' }).optional(),
  ),
  INTERNAL_API_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  GATEWAY_RATE_LIMIT_PER_MIN: int(1000),
  AUTH_FAILURE_LIMIT_PER_MIN: int(120),
  PLATFORM_RATE_LIMIT_PER_MIN: int(6000),
  MAX_KEYS_PER_USER: int(25),
  PRINCIPAL_CACHE_MAX_ENTRIES: int(20000, 0),
  PRINCIPAL_CACHE_MAX_AGE_MS: int(60000),
  REQUEST_BODY_TIMEOUT_MS: int(10000),
  SKIPTRACE_RATE_LIMIT_PER_MIN: int(1000),
  SKIPTRACE_MAX_IN_FLIGHT: int(10),
  SKIPTRACE_TIMEOUT_MS: int(30000),
  SKIPTRACE_BATCH_CONCURRENCY: int(10),
  MARKS_MAX_IN_FLIGHT_PER_USER: int(4),
  NOTIFICATION_RETENTION_DAYS: int(365, 0),
  NOTIFICATION_SWEEP_INTERVAL_MS: int(15000),
  NOTIFICATION_SWEEP_BATCH: int(500),
  SKIPTRACE_CACHE_TTL_DAYS: int(90),
  SKIPTRACE_IDEMPOTENCY_SWEEP_INTERVAL_MS: int(60000),
  SKIPTRACE_IDEMPOTENCY_SWEEP_BATCH: int(1000),
  SKIPTRACE_JOB_CONCURRENCY: int(10),
  SKIPTRACE_JOB_LEASE_MS: int(15000, 100),
  SKIPTRACE_JOB_POLL_MS: int(500, 10),
  SKIPTRACE_PROVIDER: z.preprocess(emptyAsUndefined, z.enum(['records', 'http']).default('records')),
  SKIPTRACE_PROVIDER_URL: z.preprocess(
    emptyAsUndefined,
    z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
  ),
  SKIPTRACE_PROVIDER_KEY: optionalString,
  SKIPTRACE_WEBHOOK_ALLOW_PRIVATE: bool(false),
  WEBHOOK_RETRY_BASE_MS: int(5000),
  WEBHOOK_TIMEOUT_MS: int(10000).pipe(z.number().max(10000, 'must be at most 10000 (a delivery never waits longer)')),
  WEBHOOK_POLL_INTERVAL_MS: int(1000),
  STREAM_MAX_PER_KEY: int(5),
  STREAM_MAX_PER_USER: int(10),
  STREAM_MAX_PER_ORGANIZATION: int(200),
  STREAM_MAX_TOTAL: int(2000),
  STREAM_IDLE_TIMEOUT_MS: int(30000),
  SEED_DEMO: bool(true),
  TRUST_PROXY: bool(false),
  PUBLIC_URL: z.preprocess(
    emptyAsUndefined,
    z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL, e.g. https://api.example.com' }).optional(),
  ),
});

export type Env = z.infer<typeof envSchema>;

export interface Config {
  env: Env['NODE_ENV'];
  port: number;
  host: string;
  logLevel: Env['LOG_LEVEL'];
  logFormat: Env['LOG_FORMAT'];
  database:
    | {
        kind: 'postgres';
        url: string;
        poolMax: number;
        preparedStatements?: boolean;
        replica?: { url: string; timeoutMs: number };
      }
    | { kind: 'embedded'; dataDir: string };
  redisUrl?: string;
  internalApiToken?: string;
  limits: {
    gatewayPerMinute: number;
    authFailuresPerMinute: number;
    platformPerMinute: number;
    requestBodyTimeoutMs: number;
    skipTracePerMinute: number;
    skipTraceMaxInFlight: number;
    skipTraceTimeoutMs: number;
    skipTraceBatchConcurrency: number;
    maxKeysPerUser: number;
    /** Marks queued behind the running one, per user and instance. */
    marksMaxInFlightPerUser: number;
  };
  /** `retentionDays` 0 keeps rows for ever; `batch` is per statement. */
  notificationSweep: { retentionDays: number; intervalMs: number; batch: number };
  skipTrace: {
    cacheTtlDays: number;
    idempotencySweep: { intervalMs: number; batch: number };
    provider: { kind: 'records' } | { kind: 'http'; url: string; apiKey: string };
    /** An item's claim lasts `leaseMs` unless renewed, so a dead instance's items go to others. */
    jobs: { concurrency: number; leaseMs: number; pollMs: number };
  };
  /** `allowPrivate` permits `http://`, loopback and private targets (development, tests); retries back off from `retryBaseMs`. */
  webhooks: { allowPrivate: boolean; retryBaseMs: number; timeoutMs: number; pollIntervalMs: number };
  /** Per instance; a client that reads nothing for `idleTimeoutMs` is disconnected. */
  streams: { maxPerKey: number; maxPerUser: number; maxPerOrganization: number; maxTotal: number; idleTimeoutMs: number };
  /** Principals of keys kept between requests (0 entries: none); each is looked up again after `maxAgeMs` at the latest. */
  principalCache: { maxEntries: number; maxAgeMs: number };
  /** Only ever into an embedded database. */
  seedDemo: boolean;
  trustProxy: boolean;
  /** For the API reference's `servers`; the request's own origin when unset. */
  publicUrl: string | undefined;
}

export class ConfigError extends Error {}

function skipTraceConfig(env: Env): Config['skipTrace'] {
  return {
    cacheTtlDays: env.SKIPTRACE_CACHE_TTL_DAYS,
    idempotencySweep: { intervalMs: env.SKIPTRACE_IDEMPOTENCY_SWEEP_INTERVAL_MS, batch: env.SKIPTRACE_IDEMPOTENCY_SWEEP_BATCH },
    provider:
      env.SKIPTRACE_PROVIDER === 'http'
        ? { kind: 'http', url: env.SKIPTRACE_PROVIDER_URL as string, apiKey: env.SKIPTRACE_PROVIDER_KEY as string }
        : { kind: 'records' },
    jobs: { concurrency: env.SKIPTRACE_JOB_CONCURRENCY, leaseMs: env.SKIPTRACE_JOB_LEASE_MS, pollMs: env.SKIPTRACE_JOB_POLL_MS },
  };
}

function limitsConfig(env: Env): Config['limits'] {
  return {
    gatewayPerMinute: env.GATEWAY_RATE_LIMIT_PER_MIN,
    authFailuresPerMinute: env.AUTH_FAILURE_LIMIT_PER_MIN,
    platformPerMinute: env.PLATFORM_RATE_LIMIT_PER_MIN,
    requestBodyTimeoutMs: env.REQUEST_BODY_TIMEOUT_MS,
    skipTracePerMinute: env.SKIPTRACE_RATE_LIMIT_PER_MIN,
    skipTraceMaxInFlight: env.SKIPTRACE_MAX_IN_FLIGHT,
    skipTraceTimeoutMs: env.SKIPTRACE_TIMEOUT_MS,
    skipTraceBatchConcurrency: env.SKIPTRACE_BATCH_CONCURRENCY,
    maxKeysPerUser: env.MAX_KEYS_PER_USER,
    marksMaxInFlightPerUser: env.MARKS_MAX_IN_FLIGHT_PER_USER,
  };
}

function databaseConfig(env: Env): Config['database'] {
  if (!env.DATABASE_URL) return { kind: 'embedded', dataDir: env.DATA_DIR };
  return {
    kind: 'postgres',
    url: env.DATABASE_URL,
    poolMax: env.DATABASE_POOL_MAX,
    preparedStatements: env.DATABASE_PREPARED_STATEMENTS,
    ...(env.DATABASE_REPLICA_URL && { replica: { url: env.DATABASE_REPLICA_URL, timeoutMs: env.DATABASE_REPLICA_TIMEOUT_MS } }),
  };
}

export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(source);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const env = parsed.data;
  if (env.DATABASE_REPLICA_URL && !env.DATABASE_URL) {
    throw new ConfigError('Invalid configuration:\n  DATABASE_REPLICA_URL: needs DATABASE_URL (the primary it replicates)');
  }
  if (env.SKIPTRACE_PROVIDER === 'http' && (!env.SKIPTRACE_PROVIDER_URL || !env.SKIPTRACE_PROVIDER_KEY)) {
    throw new ConfigError(
      'Invalid configuration:\n  SKIPTRACE_PROVIDER_URL, SKIPTRACE_PROVIDER_KEY: both are required when SKIPTRACE_PROVIDER=http',
    );
  }
  return {
    env: env.NODE_ENV,
    port: env.PORT,
    // Embedded mode prints live demo keys and a platform token, so it listens on loopback only.
    host: env.HOST ?? (env.DATABASE_URL ? '0.0.0.0' : '127.0.0.1'),
    logLevel: env.LOG_LEVEL,
    logFormat: env.LOG_FORMAT,
    database: databaseConfig(env),
    redisUrl: env.REDIS_URL,
    internalApiToken: env.INTERNAL_API_TOKEN,
    limits: limitsConfig(env),
    notificationSweep: {
      retentionDays: env.NOTIFICATION_RETENTION_DAYS,
      intervalMs: env.NOTIFICATION_SWEEP_INTERVAL_MS,
      batch: env.NOTIFICATION_SWEEP_BATCH,
    },
    skipTrace: skipTraceConfig(env),
    webhooks: {
      allowPrivate: env.SKIPTRACE_WEBHOOK_ALLOW_PRIVATE,
      retryBaseMs: env.WEBHOOK_RETRY_BASE_MS,
      timeoutMs: env.WEBHOOK_TIMEOUT_MS,
      pollIntervalMs: env.WEBHOOK_POLL_INTERVAL_MS,
    },
    streams: {
      maxPerKey: env.STREAM_MAX_PER_KEY,
      maxPerUser: env.STREAM_MAX_PER_USER,
      maxPerOrganization: env.STREAM_MAX_PER_ORGANIZATION,
      maxTotal: env.STREAM_MAX_TOTAL,
      idleTimeoutMs: env.STREAM_IDLE_TIMEOUT_MS,
    },
    principalCache: { maxEntries: env.PRINCIPAL_CACHE_MAX_ENTRIES, maxAgeMs: env.PRINCIPAL_CACHE_MAX_AGE_MS },
    seedDemo: env.SEED_DEMO,
    trustProxy: env.TRUST_PROXY,
    publicUrl: env.PUBLIC_URL?.replace(/\/+$/, ''),
  };
}
