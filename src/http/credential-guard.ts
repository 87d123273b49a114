/** The credential stage of every route: who is calling, its rate window, the refusals (401, 429) and rate-limit headers. */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { Counter, type Registry } from 'prom-client';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { AppError } from '../common/errors.js';
import type { Config } from '../infra/config.js';
import type { Db } from '../infra/database/sql.js';
import { labelSets, startAtZero } from '../infra/metric-series.js';
import { anonymous, type Caller, type Principal, type UserPrincipal } from '../schema/principal.js';
import type { Services } from '../schema/context.js';
import { findActiveGatewayKey, type GatewayKeyOwner } from '../auth/api-keys.data.js';
import { hashesEqual, hashSecret, isWellFormedSecret, secretHint, secretsEqual } from '../auth/secrets.js';
import { findActiveSkipTraceKeyByHash } from '../auth/skip-trace-keys/skip-trace-keys.data.js';
import type { PrincipalCache } from '../auth/principal-cache.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    errorCode?: string;
  }
}

declare module '../schema/context.js' {
  interface Services {
    authenticator: Authenticator;
    /** Requests-per-minute windows, per credential (and per client IP without one). */
    rateWindows: RateWindows;
  }
}

export const rateLimitMessage = (decision: WindowDecision) =>
  `Rate limit of ${decision.limit} requests per minute exceeded; retry after ${decision.retryAfter} s.`;

export function setRateLimitHeaders(reply: FastifyReply, decision: WindowDecision) {
  reply.header('X-RateLimit-Limit', decision.limit);
  reply.header('X-RateLimit-Remaining', decision.remaining);
  reply.header('X-RateLimit-Reset', decision.resetAt);
  if (!decision.allowed) reply.header('Retry-After', decision.retryAfter);
}

export interface IdentifiedCaller {
  /** Who presented what: anonymous, a valid principal, or null for an invalid credential. */
  principal: Principal | null;
  /** The principal when it is one the route serves; otherwise null. */
  caller: Caller | null;
  decision: WindowDecision;
}

/** The one Authorization header's value (undefined: none), or null when there are several: read without building every header's list. */
function authorizationHeader(rawHeaders: string[]): string | undefined | null {
  let value: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    if (name.length !== 13 || name.toLowerCase() !== 'authorization') continue;
    if (value !== undefined) return null;
    value = rawHeaders[i + 1];
  }
  return value;
}

/**
 * The principal and a point of its window. Several Authorization headers are invalid (a proxy could
 * disagree on which counts). The key lookup and its window run in parallel; an unknown key's window
 * is then deleted so made-up keys grow nothing.
 */
async function principalAndWindow(
  services: Services,
  request: FastifyRequest,
  serves: readonly Caller['type'][],
): Promise<{ principal: Principal | null; decision?: WindowDecision }> {
  const { authenticator, rateWindows, sql: db } = services;
  const header = authorizationHeader(request.raw.rawHeaders);
  const credential: Credential = header === null ? { type: 'invalid' } : authenticator.read(header);
  if (credential.type !== 'gateway key' || !serves.includes('user')) return { principal: await authenticator.principalOf(db, credential) };
  const [principal, decision] = await Promise.all([
    authenticator.principalOf(db, credential),
    rateWindows.consumeForGatewayKeyHash(credential.hash),
  ]);
  if (principal) return { principal, decision };
  const [clientDecision] = await Promise.all([rateWindows.consumeForClient(request.ip), rateWindows.forgetGatewayKeyHash(credential.hash)]);
  return { principal: null, decision: clientDecision };
}

/**
 * A kept principal is trusted only while no key or role has changed (`principal-cache.ts`), so a
 * revocation takes effect at once. A served caller spends its
 * own window (so even a rate-limited call is attributed); anything else spends its client IP's.
 */
export async function identifyCaller(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  serves: readonly Caller['type'][],
): Promise<IdentifiedCaller> {
  const found = await principalAndWindow(services, request, serves);
  const principal = found.principal;
  const caller = principal && principal.type !== 'anonymous' && serves.includes(principal.type) ? principal : null;
  if (caller) request.principal = caller;
  const decision =
    found.decision ?? (await (caller ? services.rateWindows.consumeFor(caller) : services.rateWindows.consumeForClient(request.ip)));
  setRateLimitHeaders(reply, decision);
  return { principal, caller, decision };
}

/** Credential (401), then window (429), as REST errors; the caller otherwise. */
export function refuseUnidentified({ principal, caller, decision }: IdentifiedCaller): Caller {
  if (!caller) {
    if (!decision.allowed) throw new AppError('rate_limited', 'Too many requests without a valid key; retry later.');
    throw new AppError(
      'invalid_key',
      principal && principal.type !== 'anonymous'
        ? 'This key cannot be used on this route.'
        : 'A valid API key is required (Authorization: Bearer <key>).',
    );
  }
  if (!decision.allowed) throw new AppError('rate_limited', rateLimitMessage(decision));
  return caller;
}

/** An `onRequest` hook: credential (401), then the rate window (429), for a route serving these callers. */
export function credentialGuard(services: Services, serves: readonly Caller['type'][]) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    refuseUnidentified(await identifyCaller(services, request, reply, serves));
  };
}

/** What an `Authorization` header presents, read without any lookup. */
export type Credential =
  | { type: 'none' }
  | { type: 'invalid' }
  | { type: 'gateway key' | 'skip trace key'; token: string; hash: string }
  | { type: 'platform token' };

export interface Authenticator {
  read(authorization: string | undefined): Credential;
  /** `anonymous` without a credential, `null` when not valid; a key's principal is kept only while no key or role has changed. */
  principalOf(db: Db, credential: Credential): Promise<Principal | null>;
}

export function bearerToken(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
  return match ? match[1] : '';
}

/** The principal of a presented gateway key from its active row with its owner (`findActiveGatewayKey`); null without one. */
export function gatewayPrincipal(key: GatewayKeyOwner | null, token: string, hash: string): UserPrincipal | null {
  if (!key || !hashesEqual(key.keyHash, hash)) return null;
  const scopes = new Set(key.scopes);
  // ADMIN grants nothing once the owner is no longer an ADMIN user.
  if (key.role !== 'ADMIN') scopes.delete('ADMIN');
  return {
    type: 'user',
    keyId: key.id,
    keyHint: secretHint(token),
    keyHash: hash,
    userId: key.userId,
    organizationId: key.organizationId,
    role: key.role,
    scopes,
  };
}

const NONE: Credential = { type: 'none' };
const INVALID: Credential = { type: 'invalid' };
const PLATFORM: Credential = { type: 'platform token' };

export function createAuthenticator(options: { internalApiToken?: string; principals: PrincipalCache }): Authenticator {
  const { principals } = options;
  return {
    read(authorization) {
      const token = bearerToken(authorization);
      if (token === undefined) return NONE;
      if (isWellFormedSecret(token, 'gk_')) return { type: 'gateway key', token, hash: hashSecret(token) };
      if (isWellFormedSecret(token, 'stk_')) return { type: 'skip trace key', token, hash: hashSecret(token) };
      if (options.internalApiToken && secretsEqual(token, options.internalApiToken)) return PLATFORM;
      return INVALID;
    },
    async principalOf(db, credential) {
      switch (credential.type) {
        case 'none':
          return anonymous;
        case 'invalid':
          return null;
        case 'platform token':
          return { type: 'platform' };
        case 'gateway key':
          return principals.principalOf(credential.hash, async () =>
            gatewayPrincipal(await findActiveGatewayKey(db, credential.hash), credential.token, credential.hash),
          );
        case 'skip trace key':
          return principals.principalOf(credential.hash, async () => {
            const key = await findActiveSkipTraceKeyByHash(db, credential.hash);
            if (!key || !hashesEqual(key.keyHash, credential.hash)) return null;
            return { type: 'organization', keyId: key.id, keyHint: secretHint(credential.token), organizationId: key.organizationId };
          });
      }
    },
  };
}

/** One point per request: per gateway key (REST and /graphql alike), skip trace key, platform token, or client IP. */
export interface RateWindows {
  consumeFor(caller: Caller): Promise<WindowDecision>;
  /** A point of a gateway key's window by hash, spent before the lookup so both run concurrently. */
  consumeForGatewayKeyHash(keyHash: string): Promise<WindowDecision>;
  /** Deletes the window of a hash that is no active key's, so made-up or revoked keys grow nothing. */
  forgetGatewayKeyHash(keyHash: string): Promise<void>;
  consumeForClient(ip: string): Promise<WindowDecision>;
}

const WINDOWS = ['gateway', 'skip_trace', 'platform', 'client_ip'] as const;
type WindowName = (typeof WINDOWS)[number];

/** A gateway key's window, by its hash: known before the lookup, one per key (128 bits of it are plenty). */
const gatewayWindow = (keyHash: string) => `gateway:${keyHash.slice(0, 32)}`;

export function createRateWindows(
  limits: Config['limits'],
  internalApiToken: string | undefined,
  redis: Redis | null,
  registry: Registry,
): RateWindows {
  const refusals = startAtZero(
    new Counter({
      name: 'crm_rate_limit_refusals_total',
      help: 'Requests refused by a requests-per-minute window (429 rate_limited), by window.',
      labelNames: ['window'] as const,
      registers: [registry],
    }),
    labelSets({ window: WINDOWS }),
  );
  const counted = (window: WindowName, decision: Promise<WindowDecision>) =>
    decision.then((d) => {
      if (!d.allowed) refusals.inc({ window });
      return d;
    });
  // The platform window is the token's: a new token starts a new window (never the token itself in Redis).
  const platformKey = `platform:${createHash('sha256')
    .update(internalApiToken ?? '')
    .digest('hex')
    .slice(0, 16)}`;
  const gateway = createWindowLimiter({ name: 'gateway', limit: limits.gatewayPerMinute, redis });
  const skipTrace = createWindowLimiter({ name: 'skiptrace', limit: limits.skipTracePerMinute, redis });
  const platform = createWindowLimiter({ name: 'platform', limit: limits.platformPerMinute, redis });
  const clients = createWindowLimiter({ name: 'auth-failures', limit: limits.authFailuresPerMinute, redis });
  return {
    consumeFor(caller) {
      switch (caller.type) {
        case 'user':
          return counted('gateway', gateway.consume(gatewayWindow(caller.keyHash)));
        case 'organization':
          return counted('skip_trace', skipTrace.consume(`skiptrace:${caller.keyId}`));
        case 'platform':
          return counted('platform', platform.consume(platformKey));
      }
    },
    consumeForGatewayKeyHash: (keyHash) => counted('gateway', gateway.consume(gatewayWindow(keyHash))),
    forgetGatewayKeyHash: (keyHash) => gateway.delete(gatewayWindow(keyHash)),
    consumeForClient: (ip) => counted('client_ip', clients.consume(ip)),
  };
}

export interface WindowDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetAt: number;
  /** Whole seconds to wait; meaningful when not allowed. */
  retryAfter: number;
}

export interface WindowLimiter {
  readonly limit: number;
  consume(key: string): Promise<WindowDecision>;
  delete(key: string): Promise<void>;
}

const WINDOW_SECONDS = 60;

/** A fixed one-minute window per key, shared through Redis; should Redis fail, an in-process window answers. */
export function createWindowLimiter(options: { name: string; limit: number; redis: Redis | null }): WindowLimiter {
  const memory = new RateLimiterMemory({ keyPrefix: options.name, points: options.limit, duration: WINDOW_SECONDS });
  const limiter: RateLimiterAbstract = options.redis
    ? new RateLimiterRedis({
        storeClient: options.redis,
        keyPrefix: `rl:${options.name}`,
        points: options.limit,
        duration: WINDOW_SECONDS,
        insuranceLimiter: memory,
      })
    : memory;

  const decision = (remainingPoints: number, msBeforeNext: number, allowed: boolean): WindowDecision => ({
    allowed,
    limit: options.limit,
    remaining: Math.max(0, remainingPoints),
    resetAt: Math.ceil((Date.now() + msBeforeNext) / 1000),
    retryAfter: Math.max(1, Math.ceil(msBeforeNext / 1000)),
  });
  const consumeWith = async (rateLimiter: RateLimiterAbstract, key: string) => {
    try {
      const res = await rateLimiter.consume(key);
      return decision(res.remainingPoints, res.msBeforeNext, true);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) return decision(rejection.remainingPoints, rejection.msBeforeNext, false);
      throw rejection;
    }
  };

  // RateLimiterRedis's own script, called directly: its consume allocates several promises per request.
  const script = options.redis as unknown as WindowScript | null;
  const keyPrefix = `rl:${options.name}:`;
  const [points, duration, limit] = [String(1), String(WINDOW_SECONDS), String(options.limit)];
  const consumeOnRedis = async (key: string): Promise<WindowDecision> => {
    let result: [number, number];
    try {
      result = await script!.rlflxIncr([keyPrefix + key, points, duration, limit, duration]);
    } catch {
      return consumeWith(memory, key);
    }
    const consumed = Number(result[0]);
    return decision(options.limit - consumed, Number(result[1]), consumed <= options.limit);
  };

  return {
    limit: options.limit,
    consume: script && typeof script.rlflxIncr === 'function' ? consumeOnRedis : (key) => consumeWith(limiter, key),
    async delete(key) {
      await limiter.delete(key);
    },
  };
}

/** The window script (`rlflxIncr`) RateLimiterRedis defines on an ioredis client: the points consumed and the window's ms left. */
interface WindowScript {
  rlflxIncr(args: string[]): Promise<[number, number]>;
}
