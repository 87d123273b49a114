import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../../auth/principal.js';
import type { Services } from '../../services.js';
import type { WindowDecision, WindowLimiter } from '../rate-limit.js';
import { ApiError } from './api-error.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    /** The REST error code this request was answered with, if any. */
    errorCode?: string;
  }
}

export function setRateLimitHeaders(reply: FastifyReply, decision: WindowDecision) {
  reply.header('X-RateLimit-Limit', decision.limit);
  reply.header('X-RateLimit-Remaining', decision.remaining);
  reply.header('X-RateLimit-Reset', decision.resetAt);
  if (!decision.allowed) reply.header('Retry-After', decision.retryAfter);
}

/**
 * The first checks of a REST route, in contract order: credential (401), then the rate window
 * (429). A request without a valid credential counts against its client IP's window, so key
 * guessing is slowed; one with a valid credential counts against its key's window.
 */
export function credentialGuard(options: {
  services: Services;
  keyWindow: WindowLimiter;
  ipWindow: WindowLimiter;
  /** Which principals this route serves; any other credential is `invalid_key` here. */
  accepts: (principal: Principal) => boolean;
  keyOf: (principal: Principal) => string;
}) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const principal = await options.services.authenticator.authenticate(options.services.sql, request.headers.authorization);
    if (!principal || !options.accepts(principal)) {
      const decision = await options.ipWindow.consume(request.ip);
      setRateLimitHeaders(reply, decision);
      if (!decision.allowed) throw new ApiError('rate_limited', 'Too many requests without a valid key; retry later.');
      throw new ApiError('invalid_key', principal && principal.type !== 'anonymous' ? 'This key cannot be used on this route.' : 'A valid API key is required (Authorization: Bearer <key>).');
    }
    // Known from here on, so that even a rate-limited call is attributed (e.g. in the skip trace audit).
    request.principal = principal;
    const decision = await options.keyWindow.consume(options.keyOf(principal));
    setRateLimitHeaders(reply, decision);
    if (!decision.allowed) throw new ApiError('rate_limited', `Rate limit of ${decision.limit} requests per minute exceeded; retry after ${decision.retryAfter} s.`);
  };
}
