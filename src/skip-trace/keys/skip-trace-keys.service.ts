import type { Em } from '../../infra/database/orm.js';
import { pgTextArray } from '../../common/pg-array.js';
import { AppError } from '../../common/errors.js';
import { generateSecret, hashSecret, secretHint } from '../../auth/secrets.js';
import type { IssuedKey } from '../../auth/api-keys.service.js';
import { getOrganization } from '../../organizations/organizations.service.js';

export interface SkipTraceKeyInfo {
  id: string;
  hint: string;
  createdAt: Date;
  /** `platform` or the issuing gateway key's id; null for keys issued before it was recorded. */
  createdBy: string | null;
}

const isUniqueViolation = (error: unknown) => (error as { code?: string }).code === '23505' || /unique|duplicate key/i.test(String(error));

async function insertKey(em: Em, organizationId: string, issuer: string): Promise<IssuedKey> {
  const secret = generateSecret('stk_');
  const id = crypto.randomUUID();
  const createdAt = new Date();
  await em.execute(`insert into skip_trace_keys (id, organization_id, key_hash, hint, created_at, created_by) values (?, ?, ?, ?, ?, ?)`, [
    id,
    organizationId,
    hashSecret(secret),
    secretHint(secret),
    createdAt,
    issuer,
  ]);
  return { id, secret, hint: secretHint(secret), scopes: [], createdAt, createdBy: issuer };
}

/** Shown once. A second active key is refused by the partial unique index, even under races. */
export async function generateSkipTraceKey(em: Em, organizationId: string, issuer: string): Promise<IssuedKey> {
  await getOrganization(em, organizationId);
  try {
    return await insertKey(em, organizationId, issuer);
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('conflict', 'The organization already has an active skip trace key; rotate or revoke it.');
    throw error;
  }
}

/** Revoking the old key and issuing the new one commit together; the old key fails on its next use. */
export async function rotateSkipTraceKey(em: Em, organizationId: string, issuer: string): Promise<IssuedKey> {
  await getOrganization(em, organizationId);
  try {
    return await em.transactional(async (tx) => {
      const revoked = await revokeActive(tx, organizationId);
      if (!revoked) throw new AppError('not_found', 'The organization has no active skip trace key.');
      return insertKey(tx, organizationId, issuer);
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('conflict', 'The key was changed concurrently; retry.');
    throw error;
  }
}

export async function revokeSkipTraceKey(em: Em, organizationId: string): Promise<boolean> {
  await getOrganization(em, organizationId);
  if (!(await revokeActive(em, organizationId))) throw new AppError('not_found', 'The organization has no active skip trace key.');
  return true;
}

async function revokeActive(em: Em, organizationId: string): Promise<boolean> {
  const result = await em.execute<{ affectedRows: number }>(
    `update skip_trace_keys set revoked_at = now() where organization_id = ? and revoked_at is null`,
    [organizationId],
    'run',
  );
  return result.affectedRows > 0;
}

/** The active key's public part per organization (for the Organization.skipTraceKey loader). */
export async function activeSkipTraceKeys(em: Em, organizationIds: readonly string[]): Promise<Map<string, SkipTraceKeyInfo>> {
  const rows = await em.execute<{ id: string; organization_id: string; hint: string; created_at: Date | string; created_by: string | null }[]>(
    `select id, organization_id, hint, created_at, created_by from skip_trace_keys where revoked_at is null and organization_id = any(?::uuid[])`,
    [pgTextArray(organizationIds)],
  );
  return new Map(rows.map((r) => [r.organization_id, { id: r.id, hint: r.hint, createdAt: new Date(r.created_at), createdBy: r.created_by }]));
}
