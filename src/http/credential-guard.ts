import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../schema/principal.js';
import type { Caller } from '../auth/rate-windows.js';
import type { Services } from '../schema/context.js';
import type { WindowDecision } from '../infra/rate-limit.js';
import type { UserPrincipal } from '../schema/principal.js';
import { AppError } from '../common/errors.js';
import { bearerToken, gatewayKeyHash, gatewayPrincipal } from '../auth/authenticate.js';
import { findActiveGatewayKey, type GatewayKeyOwner } from '../auth/api-keys.data.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    /** A gateway key not yet looked up, whose window is already being spent (`credentialGuard`'s `defer`). */
    pendingKey?: PendingGatewayKey;
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

/** A presented gateway key (well-formed) whose lookup is left to the handler, and the point of its window already under way. */
export interface PendingGatewayKey {
  token: string;
  hash: string;
  window: Promise<WindowDecision>;
}

/** Credential (401) and window (429) as REST errors, once both are known. */
function refuseUnadmitted({ principal, caller, decision }: Admission) {
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
}

/**
 * Settles a pending gateway key (see `credentialGuard`'s `defer`) from its row, looked up by
 * `key` (the standalone lookup, or a statement that folded it in), and the point of its window
 * already spent: the same outcome, headers and refusals as the guard's own path. An unknown or
 * revoked key's window is deleted (it was spent before the key was known) and the point goes to
 * the client IP's window instead.
 */
export async function settlePendingKey(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  key: Promise<GatewayKeyOwner | null>,
): Promise<UserPrincipal> {
  const pending = request.pendingKey!;
  request.pendingKey = undefined;
  const [owner, keyDecision] = await Promise.all([key, pending.window]);
  const principal = gatewayPrincipal(owner, pending.token, pending.hash);
  if (!principal) {
    const [decision] = await Promise.all([
      services.rateWindows.consumeForClient(request.ip),
      services.rateWindows.forgetGatewayKeyHash(pending.hash),
    ]);
    setRateLimitHeaders(reply, decision);
    refuseUnadmitted({ principal: null, caller: null, decision });
  }
  request.principal = principal!;
  setRateLimitHeaders(reply, keyDecision);
  refuseUnadmitted({ principal, caller: principal, decision: keyDecision });
  return principal!;
}

/** Settles a request's pending gateway key, if any, with the standalone lookup. */
export async function settleWithLookup(services: Services, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (request.pendingKey) await settlePendingKey(services, request, reply, findActiveGatewayKey(services.sql, request.pendingKey.hash));
}

/**
 * The first checks of a REST route, in contract order: credential (401), then the rate window
 * (429), as REST errors.
 *
 * With `defer` (a route serving gateway keys only), a well-formed gateway key is not looked up
 * here: the point of its window is spent at once, keyed by the key's hash, and the request goes
 * on with `request.pendingKey`, for the handler to look the key up concurrently with that point,
 * or within its operation's own statement (`rest-route.ts`). Whatever answers the request must
 * settle it first (`settlePendingKey`), so the contract's order of refusals holds: an invalid key
 * is 401 and a key over its window 429 whatever else is wrong with the request.
 */
export function credentialGuard(options: { services: Services; accepts: (principal: Principal) => principal is Caller; defer?: boolean }) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    if (options.defer) {
      const headers = request.raw.headersDistinct.authorization;
      const token = headers?.length === 1 ? bearerToken(headers[0]) : undefined;
      const hash = gatewayKeyHash(token);
      if (hash) {
        const window = options.services.rateWindows.consumeForGatewayKeyHash(hash);
        // The key's window, as far as is known before the lookup: what a 408 for a body that never
        // arrives reports (settling replaces it). Never an unhandled rejection meanwhile.
        window.then((decision) => setRateLimitHeaders(reply, decision)).catch(() => undefined);
        request.pendingKey = { token: token!, hash, window };
        return;
      }
    }
    refuseUnadmitted(await admitRequest(options.services, request, reply, options.accepts));
  };
}
