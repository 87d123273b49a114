import type { Em } from '../../infra/database/orm.js';
import { AppError } from '../../common/errors.js';
import { generateSecret, hashSecret, secretHint } from '../secrets.js';
import type { IssuedKey } from '../api-keys.service.js';
import { getOrganization } from '../../organizations/organizations.service.js';
import { activeSkipTraceKeys, insertSkipTraceKey, revokeActiveSkipTraceKey } from './skip-trace-keys.data.js';

export interface SkipTraceKeyInfo {
  id: string;
  hint: string;
  createdAt: Date;
  /** Null for keys issued before it was recorded. */
  createdBy: string | null;
}

const isUniqueViolation = (error: unknown) => (error as { code?: string }).code === '23505' || /unique|duplicate key/i.test(String(error));

async function issueKey(em: Em, organizationId: string, issuer: string): Promise<IssuedKey> {
  const secret = generateSecret('stk_');
  const key = await insertSkipTraceKey(em, { organizationId, keyHash: hashSecret(secret), hint: secretHint(secret), createdBy: issuer });
  return { id: key.id, secret, hint: key.hint, scopes: [], createdAt: key.createdAt, createdBy: issuer };
}

/** Shown once. A second active key is refused by the partial unique index, even under races. */
export async function generateSkipTraceKey(em: Em, organizationId: string, issuer: string): Promise<IssuedKey> {
  await getOrganization(em, organizationId);
  try {
    return await issueKey(em, organizationId, issuer);
  } catch (error) {
    if (isUniqueViolation(error))
      throw new AppError('conflict', 'The organization already has an active skip trace key; rotate or revoke it.');
    throw error;
  }
}

/** Revoking the old key and issuing the new one commit together; the old key fails on its next use. */
export async function rotateSkipTraceKey(em: Em, organizationId: string, issuer: string): Promise<IssuedKey> {
  await getOrganization(em, organizationId);
  try {
    return await em.transactional(async (tx) => {
      if (!(await revokeActiveSkipTraceKey(tx, organizationId)))
        throw new AppError('not_found', 'The organization has no active skip trace key.');
      return issueKey(tx, organizationId, issuer);
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('conflict', 'The key was changed concurrently; retry.');
    throw error;
  }
}

export async function revokeSkipTraceKey(em: Em, organizationId: string): Promise<boolean> {
  await getOrganization(em, organizationId);
  if (!(await revokeActiveSkipTraceKey(em, organizationId)))
    throw new AppError('not_found', 'The organization has no active skip trace key.');
  return true;
}

/** For the Organization.skipTraceKey loader. */
export async function activeSkipTraceKeyInfos(em: Em, organizationIds: readonly string[]): Promise<Map<string, SkipTraceKeyInfo>> {
  const keys = await activeSkipTraceKeys(em, organizationIds);
  return new Map(
    [...keys].map(([organizationId, key]) => [
      organizationId,
      { id: key.id, hint: key.hint, createdAt: key.createdAt, createdBy: key.createdBy ?? null },
    ]),
  );
}
