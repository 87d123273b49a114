import type { Em } from '../infra/database/orm.js';
import type { Db } from '../infra/database/sql.js';
import { isUuid } from '../common/uuid.js';
import { AppError, badInput } from '../common/errors.js';
import { getUser, organizationOfUser } from '../organizations/organizations.service.js';
import { lockUserRow } from '../organizations/organizations.data.js';
import { listingPage, type Page, type PageArgs } from '../common/keyset-page.js';
import type { Scope } from '../schema/principal.js';
import { generateSecret, hashSecret, secretHint } from './secrets.js';
import {
  countActiveApiKeys,
  findApiKeyById,
  insertApiKey,
  markApiKeyRevoked,
  selectActiveApiKeyHints,
  selectApiKeysOfUser,
  type ApiKeyView,
} from './api-keys.data.js';

export interface IssuedKey {
  id: string;
  /** Returned once, at issue, and never stored. */
  secret: string;
  hint: string;
  scopes: Scope[];
  createdAt: Date;
  createdBy: string;
}

export interface KeyRequest {
  userId: string;
  scopes: readonly Scope[];
  /** `platform`, or the id of the issuing key. */
  issuer: string;
  maxActiveKeys: number;
}

/**
 * Who may ask for which user is checked by the caller (auth.schema). The user's row lock makes
 * concurrent issues take turns, so the per-user limit holds under any concurrency.
 */
export async function createApiKey(em: Em, request: KeyRequest): Promise<IssuedKey> {
  const scopes = [...new Set(request.scopes)].sort();
  if (scopes.length === 0) throw badInput('scopes must name at least one scope.', [{ path: 'scopes', message: 'must not be empty' }]);
  const user = await getUser(em, request.userId);
  return em.transactional(async (tx) => {
    // The lock also holds the role: a concurrent setUserRole(MEMBER) either came first (and is
    // seen here) or waits, then strips ADMIN from this key too.
    const role = await lockUserRow(tx, user.id);
    if (scopes.includes('ADMIN') && role !== 'ADMIN') {
      throw badInput('ADMIN scope can only be issued to a user whose role is ADMIN.', [
        { path: 'scopes', message: 'ADMIN requires an ADMIN user' },
      ]);
    }
    if ((await countActiveApiKeys(tx, user.id)) >= request.maxActiveKeys) {
      throw badInput(
        `A user holds at most ${request.maxActiveKeys} active gateway keys (MAX_KEYS_PER_USER); revoke one before issuing another.`,
        [{ path: 'userId', message: `already holds ${request.maxActiveKeys} active keys, the limit` }],
      );
    }
    const secret = generateSecret('gk_');
    const key = await insertApiKey(tx, {
      userId: user.id,
      keyHash: hashSecret(secret),
      hint: secretHint(secret),
      scopes,
      createdBy: request.issuer,
    });
    return { id: key.id, secret, hint: key.hint, scopes, createdAt: key.createdAt, createdBy: request.issuer };
  });
}

/** Revoked keys are included so a lost key can be found by its hint. */
export async function listApiKeys(em: Em, sql: Db, userId: string, args: PageArgs): Promise<Page<ApiKeyView>> {
  const user = await getUser(em, userId);
  return listingPage(`api-keys:${user.id}`, args, (after, limit) => selectApiKeysOfUser(sql, user.id, after, limit));
}

/** For the demo banner. */
export function activeApiKeyHints(sql: Db, userId: string): Promise<string[]> {
  return selectActiveApiKeyHints(sql, userId);
}

/** For the organizationAdmin scope check. */
export async function organizationOfApiKey(em: Em, keyId: string): Promise<string | null> {
  if (!isUuid(keyId)) return null;
  const key = await findApiKeyById(em, keyId);
  return key ? organizationOfUser(em, key.user.id) : null;
}

/** Revocation is a single update; its resolver then has every instance look its kept principals up again. */
export async function revokeApiKey(em: Em, keyId: string): Promise<boolean> {
  if (!isUuid(keyId)) throw new AppError('not_found', 'No such API key.');
  const key = await findApiKeyById(em, keyId);
  if (!key) throw new AppError('not_found', 'No such API key.');
  if (!key.revokedAt) await markApiKeyRevoked(em, key);
  return true;
}
