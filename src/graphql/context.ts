import type { FastifyBaseLogger as Logger } from 'fastify';
import type { Em, Orm } from '../infra/database/orm.js';
import type { Sql } from '../infra/database/sql.js';
import type { OrganizationPrincipal, Principal, UserPrincipal, PlatformPrincipal } from '../auth/principal.js';
import type { Services } from '../services.js';
import type { ClientWatch } from '../infra/http/client-watch.js';
import { createLoaders, type Loaders } from './loaders.js';

/** What the HTTP host hands to Yoga for each request (Yoga's "server context"). */
export interface RequestContext {
  principal: Principal;
  requestId: string;
  log: Logger;
  /** Whether the caller is still connected, and what to undo if its response is not delivered. */
  client: ClientWatch;
  /** Set by the skip trace REST route, which has already taken the key's in-flight slot. */
  skipTraceAdmitted?: boolean;
}

/**
 * One request's database handles. Raw SQL is there at once; the forked EntityManager and the
 * DataLoaders built on it are created when a resolver first asks, because the hot operations
 * (feed pages, counts, marks) track no entities, and a fork per request was a measurable share
 * of their allocation and CPU (bench/results).
 */
export class RequestDb {
  #em: Em | undefined;
  #loaders: Loaders | undefined;

  constructor(
    private readonly orm: Orm,
    /** Raw SQL outside any unit of work. */
    readonly sql: Sql,
  ) {}

  /** This request's own EntityManager (identity map, unit of work). */
  get em(): Em {
    return (this.#em ??= this.orm.em.fork());
  }

  /** Per-request batching of lookups by id, over `em`. */
  get loaders(): Loaders {
    return (this.#loaders ??= createLoaders(this.em));
  }
}

/** The GraphQL context: per-request state only (database handles, principal). */
export interface Context extends RequestContext {
  db: RequestDb;
  services: Services;
}

export type UserContext = Context & { principal: UserPrincipal };
export type PlatformContext = Context & { principal: PlatformPrincipal };
export type OrganizationContext = Context & { principal: OrganizationPrincipal };

export function createContext(request: RequestContext, services: Services): Context {
  return { ...request, db: new RequestDb(services.orm, services.sql), services };
}
