import type { Logger } from 'pino';
import type { Redis } from 'ioredis';
import type { Config } from './infra/config.js';
import type { Orm, Sql } from './infra/database/orm.js';
import type { Authenticator } from './auth/authenticate.js';
import type { TraceCoordinator } from './skip-trace/trace-coordinator.js';
import type { SkipTraceLimits } from './skip-trace/skip-trace-limits.js';

/** Process-wide dependencies, built once at start-up and shared by every request. */
export interface Services {
  config: Config;
  log: Logger;
  orm: Orm;
  /** The ORM's pool for raw SQL (`orm.em`, typed so that only `execute` is reachable). */
  sql: Sql;
  redis: Redis | null;
  authenticator: Authenticator;
  traces: TraceCoordinator;
  skipTraceLimits: SkipTraceLimits;
}
