import type { FastifyBaseLogger as Logger } from 'fastify';
import type { Em, Sql } from '../infra/database/orm.js';
import type { OrganizationPrincipal, Principal, UserPrincipal, PlatformPrincipal } from '../auth/principal.js';
import type { Services } from '../services.js';
import { createLoaders, type Loaders } from './loaders.js';

/** What the HTTP host hands to Yoga for each request (Yoga's "server context"). */
export interface RequestContext {
  principal: Principal;
  requestId: string;
  log: Logger;
  /** Set by the skip trace REST route, which has already taken the key's window point and in-flight slot. */
  skipTraceAdmitted?: boolean;
}

/** The GraphQL context: per-request state only (forked EntityManager, loaders, principal). */
export interface Context extends RequestContext {
  em: Em;
  /** Raw SQL outside the unit of work, for resolvers that track no entities. */
  sql: Sql;
  services: Services;
  loaders: Loaders;
}

export type UserContext = Context & { principal: UserPrincipal };
export type PlatformContext = Context & { principal: PlatformPrincipal };
export type OrganizationContext = Context & { principal: OrganizationPrincipal };

export function createContext(request: RequestContext, services: Services): Context {
  const em = services.orm.em.fork();
  return { ...request, em, sql: services.sql, services, loaders: createLoaders(em) };
}
