import { RequestCache } from '@pothos/plugin-scope-auth';
import type DataLoader from 'dataloader';
import type { FastifyBaseLogger as Logger } from 'fastify';
import type { Redis } from 'ioredis';
import type pino from 'pino';
import type { Registry } from 'prom-client';
import type { Config } from '../infra/config.js';
import type { Em, Orm } from '../infra/database/orm.js';
import type { Db } from '../infra/database/sql.js';
import type { ReplicaReads } from '../infra/database/replica.js';
import type { ClientWatch } from '../infra/client-watch.js';
import type { StreamRegistry } from '../infra/stream-registry.js';
import type { OrganizationPrincipal, PlatformPrincipal, Principal, UserPrincipal } from './principal.js';

/**
 /**
  * Process-wide dependencies shared by every request. A domain adds its service from its own folder
  * (declaration merging on `Services`), so this base never imports a domain.
  */
export interface Services {
  config: Config;
  log: pino.Logger;
  orm: Orm;
  /** Raw SQL on the ORM's own pool, for hot paths that track no entities (infra/database/sql.ts). */
  sql: Db;
  redis: Redis | null;
  /** Feed reads on a streaming replica, with read-your-writes (DATABASE_REPLICA_URL); null without one: every read on `sql`. */
  replica: ReplicaReads | null;
  /** This app's Prometheus registry, never prom-client's global one: tests run several apps in one process. */
  metrics: Registry;
  /** Open long-lived streams (subscriptions) on this instance, with their per-key and total limits. */
  streams: StreamRegistry;
}

/** A request's `Idempotency-Key` and the fingerprint of its body (canonical JSON, so key order does not count). */
export interface IdempotencyKey {
  key: string;
  fingerprint: string;
}

/** What the HTTP host hands to Yoga, or the REST handler to the executor, for each request. */
export interface RequestContext {
  principal: Principal;
  requestId: string;
  log: Logger;
  /** Whether the caller is still connected, and what to undo if its response is not delivered. */
  client: ClientWatch;
  /** The request's Last-Event-ID header (a stream resuming after the event of that id), unchecked. */
  lastEventId?: string;
  /** Set by a REST route that accepts an Idempotency-Key, when the request carries one. */
  idempotencyKey?: IdempotencyKey;
  /** Set by the REST layer once variables met the JSON Schema, so resolvers check only the rest. Never on `/graphql`. */
  variablesChecked?: boolean;
  /** Set by a route with a `holdSlot` hook: the in-flight slot was taken before the body was read. */
  slotHeld?: boolean;
}

/** One request's database handles; the EntityManager and DataLoaders are made on first ask (hot paths track no entities). */
export class RequestDb {
  #em: Em | undefined;
  readonly #loaders = new Map<symbol, DataLoader<unknown, unknown>>();

  constructor(
    private readonly orm: Orm,
    readonly sql: Db,
  ) {}

  get em(): Em {
    this.#em ??= this.orm.em.fork();
    return this.#em;
  }

  /** This request's DataLoader for `key`, made on first use, so nested fields never query per row. */
  loader<K, V>(key: symbol, create: (em: Em) => DataLoader<K, V>): DataLoader<K, V> {
    let loader = this.#loaders.get(key);
    if (!loader) {
      loader = create(this.em) as DataLoader<unknown, unknown>;
      this.#loaders.set(key, loader);
    }
    return loader as DataLoader<K, V>;
  }
}

/** The GraphQL context: per-request state (principal, database handles) and the process's services. */
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

/**
 * Drops the scope checks' cache of an operation that has finished. Pothos keeps it in a process-wide
 * WeakMap keyed by the context, and V8's young-generation collector holds a WeakMap's values
 * strongly: the cache (and through it the context and the whole request) would survive every
 * minor collection until the next full one (bench/results/2026-11-27-request-gc.md).
 */
export function releaseContext(context: object): void {
  RequestCache.clearForContext(context);
}
