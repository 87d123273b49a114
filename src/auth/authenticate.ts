import type { Sql } from '../infra/database/sql.js';
import type { Scope } from '../graphql/principal.js';
import { anonymous, type Principal } from '../graphql/principal.js';
import { hashesEqual, hashSecret, isWellFormedSecret, secretsEqual } from './secrets.js';

declare module '../graphql/context.js' {
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

interface GatewayKeyRow {
  id: string;
  key_hash: string;
  scopes: Scope[] | string;
  user_id: string;
  organization_id: string;
  role: 'ADMIN' | 'MEMBER';
}

export function bearerToken(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
  return match ? match[1] : '';
}

/** PostgreSQL's text[] arrives parsed from `pg`, and as its literal form from some drivers. */
function parseScopes(value: Scope[] | string): Scope[] {
  if (Array.isArray(value)) return value;
  return value.replace(/^\{|\}$/g, '').split(',').filter(Boolean) as Scope[];
}

export function createAuthenticator(options: { internalApiToken?: string }): Authenticator {
  return {
    async authenticate(sql, authorization) {
      const token = bearerToken(authorization);
      if (token === undefined) return anonymous;

      if (isWellFormedSecret(token, 'gk_')) {
        const hash = hashSecret(token);
        const rows = await sql.execute<GatewayKeyRow[]>(
          `select k.id, k.key_hash, k.scopes, u.id as user_id, u.organization_id, u.role
             from api_keys k join users u on u.id = k.user_id
            where k.key_hash = ? and k.revoked_at is null`,
          [hash],
        );
        const row = rows[0];
        if (!row || !hashesEqual(row.key_hash, hash)) return null;
        const scopes = new Set(parseScopes(row.scopes));
        // ADMIN grants nothing once the owner is no longer an ADMIN user.
        if (row.role !== 'ADMIN') scopes.delete('ADMIN');
        return { type: 'user', keyId: row.id, userId: row.user_id, organizationId: row.organization_id, role: row.role, scopes };
      }

      if (isWellFormedSecret(token, 'stk_')) {
        const hash = hashSecret(token);
        const rows = await sql.execute<{ id: string; key_hash: string; organization_id: string }[]>(
          `select id, key_hash, organization_id from skip_trace_keys where key_hash = ? and revoked_at is null`,
          [hash],
        );
        const row = rows[0];
        if (!row || !hashesEqual(row.key_hash, hash)) return null;
        return { type: 'organization', keyId: row.id, organizationId: row.organization_id };
      }

      if (options.internalApiToken && secretsEqual(token, options.internalApiToken)) return { type: 'platform' };
      return null;
    },
  };
}
