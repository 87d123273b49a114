import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../graphql/principal.js';
import type { Caller } from '../auth/rate-windows.js';
import type { Services } from '../graphql/context.js';
import type { WindowDecision } from '../infra/rate-limit.js';
import { AppError } from '../common/errors.js';

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

/**
 * The caller of a request: `anonymous` without an Authorization header, `null` for a credential
 * that is not valid, and `null` for a request with more than one Authorization header (a proxy
 * and this service could disagree about which one counts). Credentials are never read from the URL.
 */
export function authenticateRequest(services: Services, request: FastifyRequest): Promise<Principal | null> {
  const headers = request.raw.headersDistinct.authorization;
  if (headers && headers.length > 1) return Promise.resolve(null);
  return services.authenticator.authenticate(services.sql, headers?.[0]);
}

export interface Admission {
  /** Who presented what: anonymous, a valid principal, or null for an invalid credential. */
  principal: Principal | null;
  /** The principal when it is one the route serves; otherwise null. */
  caller: Caller | null;
  decision: WindowDecision;
}

/** Any valid credential. */
export const anyCaller = (principal: Principal): principal is Caller => principal.type !== 'anonymous';

/**
 * Credential, then rate window, for any route: a valid caller (one `accepts`) spends a point of
 * its own window; anything else spends a point of its client IP's window. The caller decides
 * how to answer; the rate-limit headers are set here.
 */
export async function admitRequest(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  accepts: (principal: Principal) => principal is Caller,
): Promise<Admission> {
  const principal = await authenticateRequest(services, request);
  if (!principal || !accepts(principal)) {
    const decision = await services.rateWindows.consumeForClient(request.ip);
    setRateLimitHeaders(reply, decision);
    return { principal, caller: null, decision };
  }
  // Known from here on, so that even a rate-limited call is attributed (e.g. in the skip trace audit).
  request.principal = principal;
  const decision = await services.rateWindows.consumeFor(principal);
  setRateLimitHeaders(reply, decision);
  return { principal, caller: principal, decision };
}

/**
 * The first checks of a REST route, in contract order: credential (401), then the rate window
 * (429), as REST errors.
 */
export function credentialGuard(options: { services: Services; accepts: (principal: Principal) => principal is Caller }) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const { principal, caller, decision } = await admitRequest(options.services, request, reply, options.accepts);
    if (!caller) {
      if (!decision.allowed) throw new AppError('rate_limited', 'Too many requests without a valid key; retry later.');
      throw new AppError(
        'invalid_key',
        principal && anyCaller(principal)
          ? 'This key cannot be used on this route.'
          : 'A valid API key is required (Authorization: Bearer <key>).',
      );
    }
    if (!decision.allowed) throw new AppError('rate_limited', rateLimitMessage(decision));
  };
}
