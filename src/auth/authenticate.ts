import type { Db } from '../infra/database/sql.js';
import { findActiveGatewayKey, type GatewayKeyOwner } from './api-keys.data.js';
import { anonymous, type Principal, type UserPrincipal } from '../schema/principal.js';
import { hashesEqual, hashSecret, isWellFormedSecret, secretHint, secretsEqual } from './secrets.js';
import { findActiveSkipTraceKeyByHash } from './skip-trace-keys/skip-trace-keys.data.js';

declare module '../schema/context.js' {
  interface Services {
    authenticator: Authenticator;
  }
}

/** What an `Authorization` header presents, read without any lookup. */
export type Credential =
  | { type: 'none' }
  | { type: 'invalid' }
  | { type: 'gateway key' | 'skip trace key'; token: string; hash: string }
  | { type: 'platform token' };

export interface Authenticator {
  /** The credential of an `Authorization` header (undefined: none sent). */
  read(authorization: string | undefined): Credential;
  /**
   * Its principal: `anonymous` without a credential, `null` for one that is not valid (malformed,
   * unknown, revoked). Looked up on every request (no cache), so a revocation takes effect at once.
   */
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

export function createAuthenticator(options: { internalApiToken?: string }): Authenticator {
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
          return gatewayPrincipal(await findActiveGatewayKey(db, credential.hash), credential.token, credential.hash);
        case 'skip trace key': {
          const key = await findActiveSkipTraceKeyByHash(db, credential.hash);
          if (!key || !hashesEqual(key.keyHash, credential.hash)) return null;
          return { type: 'organization', keyId: key.id, keyHint: secretHint(credential.token), organizationId: key.organizationId };
        }
      }
    },
  };
}
