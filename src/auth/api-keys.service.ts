import type { Em } from '../infra/database/orm.js';
import { isUuid } from '../common/uuid.js';
import { AppError, badInput } from '../graphql/errors.js';
import { getUser } from '../organizations/organizations.service.js';
import { ApiKey, type Scope } from './api-key.entity.js';
import { generateSecret, hashSecret, secretHint } from './secrets.js';

export interface IssuedKey {
  id: string;
  /** The full secret: returned once, at issue, and never stored. */
  secret: string;
  hint: string;
  scopes: Scope[];
  createdAt: Date;
}

export async function createApiKey(em: Em, userId: string, requested: readonly Scope[]): Promise<IssuedKey> {
  const scopes = [...new Set(requested)].sort();
  if (scopes.length === 0) throw badInput('scopes must name at least one scope.', [{ path: 'scopes', message: 'must not be empty' }]);
  const user = await getUser(em, userId);
  if (scopes.includes('ADMIN') && user.role !== 'ADMIN') {
    throw badInput('ADMIN scope can only be issued to a user whose role is ADMIN.', [{ path: 'scopes', message: 'ADMIN requires an ADMIN user' }]);
  }
  const secret = generateSecret('gk_');
  const key = em.create(ApiKey, { user, keyHash: hashSecret(secret), hint: secretHint(secret), scopes, revokedAt: null });
  await em.flush();
  return { id: key.id, secret, hint: key.hint, scopes, createdAt: key.createdAt };
}

/** The organization a key's owner belongs to, for the organizationAdmin scope check. */
export async function organizationOfApiKey(em: Em, keyId: string): Promise<string | null> {
  if (!isUuid(keyId)) return null;
  const key = await em.findOne(ApiKey, { id: keyId }, { populate: ['user'] });
  return key ? key.user.getEntity().organization.id : null;
}

/** Revocation is a single update, seen by every instance's next lookup (keys are never cached). */
export async function revokeApiKey(em: Em, keyId: string): Promise<boolean> {
  if (!isUuid(keyId)) throw new AppError('NOT_FOUND', 'No such API key.');
  const key = await em.findOne(ApiKey, { id: keyId });
  if (!key) throw new AppError('NOT_FOUND', 'No such API key.');
  if (!key.revokedAt) {
    key.revokedAt = new Date();
    await em.flush();
  }
  return true;
}
