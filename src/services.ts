import type { Logger } from 'pino';
import type { Redis } from 'ioredis';
import type { Config } from './infra/config.js';
import type { Orm } from './infra/database/orm.js';
import type { Sql } from './infra/database/sql.js';
import type { Authenticator } from './auth/authenticate.js';
import type { TraceCoordinator } from './skip-trace/trace-coordinator.js';
import type { SkipTraceLimits } from './skip-trace/skip-trace-limits.js';
import type { RateWindows } from './auth/rate-windows.js';

/** Process-wide dependencies, built once at start-up and shared by every request. */
export interface Services {
  config: Config;
  log: Logger;
  orm: Orm;
  /** Raw SQL on the ORM's own pool, for hot paths that track no entities (infra/database/sql.ts). */
  sql: Sql;
  redis: Redis | null;
  authenticator: Authenticator;
  /** Requests-per-minute windows, per credential (and per client IP without one). */
  rateWindows: RateWindows;
  traces: TraceCoordinator;
  skipTraceLimits: SkipTraceLimits;
}
