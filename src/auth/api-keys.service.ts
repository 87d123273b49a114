import type { Em } from '../infra/database/orm.js';
import type { Sql } from '../infra/database/sql.js';
import { isUuid } from '../common/uuid.js';
import { AppError, badInput } from '../common/errors.js';
import { getUser, organizationOfUser } from '../organizations/organizations.service.js';
import { lockUserRole } from '../organizations/organizations.data.js';
import type { Scope } from '../graphql/principal.js';
import { generateSecret, hashSecret, secretHint } from './secrets.js';
import { findApiKeyById, insertApiKey, markApiKeyRevoked, selectApiKeysOfUser, type ApiKeyView } from './api-keys.data.js';

export interface IssuedKey {
  id: string;
  /** The full secret: returned once, at issue, and never stored. */
  secret: string;
  hint: string;
  scopes: Scope[];
  createdAt: Date;
  /** `platform`, or the id of the key that issued this one. */
  createdBy: string;
}

/** Issues a key acting as the user. Who may ask for which user is the caller's check (auth.schema). */
export async function createApiKey(em: Em, userId: string, requested: readonly Scope[], issuer: string): Promise<IssuedKey> {
  const scopes = [...new Set(requested)].sort();
  if (scopes.length === 0) throw badInput('scopes must name at least one scope.', [{ path: 'scopes', message: 'must not be empty' }]);
  const user = await getUser(em, userId);
  return em.transactional(async (tx) => {
    if (scopes.includes('ADMIN')) {
      // FOR SHARE holds the user's role until commit: a concurrent setUserRole(MEMBER) either
      // came first (and is seen here) or waits, then strips ADMIN from this key too.
      if ((await lockUserRole(tx, user.id)) !== 'ADMIN') {
        throw badInput('ADMIN scope can only be issued to a user whose role is ADMIN.', [
          { path: 'scopes', message: 'ADMIN requires an ADMIN user' },
        ]);
      }
    }
    const secret = generateSecret('gk_');
    const key = await insertApiKey(tx, {
      userId: user.id,
      keyHash: hashSecret(secret),
      hint: secretHint(secret),
      scopes,
      createdBy: issuer,
    });
    return { id: key.id, secret, hint: key.hint, scopes, createdAt: key.createdAt, createdBy: issuer };
  });
}

/** A user's keys, newest first, revoked ones included (a lost key is found by its hint); NOT_FOUND for an unknown user. */
export async function listApiKeys(em: Em, sql: Sql, userId: string): Promise<ApiKeyView[]> {
  const user = await getUser(em, userId);
  return selectApiKeysOfUser(sql, user.id);
}

/** The organization a key's owner belongs to, for the organizationAdmin scope check. */
export async function organizationOfApiKey(em: Em, keyId: string): Promise<string | null> {
  if (!isUuid(keyId)) return null;
  const key = await findApiKeyById(em, keyId);
  return key ? organizationOfUser(em, key.user.id) : null;
}

/** Revocation is a single update, seen by every instance's next lookup (keys are never cached). */
export async function revokeApiKey(em: Em, keyId: string): Promise<boolean> {
  if (!isUuid(keyId)) throw new AppError('not_found', 'No such API key.');
  const key = await findApiKeyById(em, keyId);
  if (!key) throw new AppError('not_found', 'No such API key.');
  if (!key.revokedAt) await markApiKeyRevoked(em, key);
  return true;
}
