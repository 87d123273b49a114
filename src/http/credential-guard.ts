import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller, Principal } from '../schema/principal.js';
import type { Services } from '../schema/context.js';
import type { WindowDecision } from '../infra/rate-limit.js';
import { AppError } from '../common/errors.js';
import type { Credential } from '../auth/authenticate.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    /** The REST error code this request was answered with, if any. */
    errorCode?: string;
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

/** Who is calling and the point of the window the request spent. */
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
 * The principal of a request's credential, and a point of its window. More than one
 * Authorization header is an invalid credential (a proxy and this service could disagree about
 * which one counts); credentials are never read from the URL. A gateway key on a route that
 * serves it is looked up while its window (keyed by the key's hash) is spent: one database and
 * one Redis round trip in parallel. An unknown or revoked key's window is then deleted (a caller
 * sending made-up keys grows nothing) and the point goes to the client IP's window.
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
 * The credential stage of every route: the one key lookup (never cached, so a revocation takes
 * effect at once), then the window. A caller the route serves spends a point of its own window
 * (known from here on, so that even a rate-limited call is attributed, e.g. in the skip trace
 * audit); anything else spends a point of its client IP's. The rate-limit headers are set here.
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
