import type { Sql } from '../infra/database/sql.js';
import { findActiveGatewayKey, type GatewayKeyOwner } from './api-keys.data.js';
import { anonymous, type Principal, type UserPrincipal } from '../schema/principal.js';
import { hashesEqual, hashSecret, isWellFormedSecret, secretHint, secretsEqual } from './secrets.js';
import { findActiveSkipTraceKeyByHash } from './skip-trace-keys/skip-trace-keys.data.js';

declare module '../schema/context.js' {
  interface Services {
    authenticator: Authenticator;
  }
}

export interface Authenticator {
  /**
   * Resolves an `Authorization` header to a principal: `anonymous` when the header is absent,
   * `null` when a credential was presented but is not valid (malformed, unknown, revoked).
   * Looked up on every request (no cache), so revocation takes effect at once on every instance.
   */
  authenticate(sql: Sql, authorization: string | undefined): Promise<Principal | null>;
}

export function bearerToken(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
  return match ? match[1] : '';
}

/**
 * The principal of a presented gateway key (`token`, whose hash is `hash`) from its active row
 * with its owner (`findActiveGatewayKey`, or a statement that folded that lookup in); null
 * without one.
 */
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

/** The hash of a presented gateway key, when it is one (well-formed); undefined otherwise. */
export function gatewayKeyHash(token: string | undefined): string | undefined {
  return token !== undefined && isWellFormedSecret(token, 'gk_') ? hashSecret(token) : undefined;
}

export function createAuthenticator(options: { internalApiToken?: string }): Authenticator {
  return {
    async authenticate(sql, authorization) {
      const token = bearerToken(authorization);
      if (token === undefined) return anonymous;

      if (isWellFormedSecret(token, 'gk_')) {
        const hash = hashSecret(token);
        // One indexed query with the owner's role and organization (see findActiveGatewayKey).
        return gatewayPrincipal(await findActiveGatewayKey(sql, hash), token, hash);
      }

      if (isWellFormedSecret(token, 'stk_')) {
        const hash = hashSecret(token);
        const key = await findActiveSkipTraceKeyByHash(sql, hash);
        if (!key || !hashesEqual(key.keyHash, hash)) return null;
        return { type: 'organization', keyId: key.id, keyHint: secretHint(token), organizationId: key.organizationId };
      }

      if (options.internalApiToken && secretsEqual(token, options.internalApiToken)) return { type: 'platform' };
      return null;
    },
  };
}
