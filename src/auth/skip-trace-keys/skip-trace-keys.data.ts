/** Admin CRUD goes through the entity; the per-request lookup is a hot path, on raw SQL. */
import type { Em } from '../../infra/database/orm.js';
import { sql, type Db } from '../../infra/database/sql.js';
import { pgTextArray } from '../../common/pg-array.js';
import { SkipTraceKey } from './skip-trace-key.entity.js';

/** Kept by `principal-cache.ts` only while no key has changed, so a revocation takes effect at once on every instance. */
export async function findActiveSkipTraceKeyByHash(
  db: Db,
  keyHash: string,
): Promise<{ id: string; keyHash: string; organizationId: string } | null> {
  const [row] = await db.rows<{ id: string; key_hash: string; organization_id: string }>(
    sql`select id, key_hash, organization_id from skip_trace_keys where key_hash = ${keyHash} and revoked_at is null`,
  );
  return row ? { id: row.id, keyHash: row.key_hash, organizationId: row.organization_id } : null;
}

/** A savepoint, so a key refused by the one-active-key index is not left in the caller's unit of work. */
export async function insertSkipTraceKey(
  em: Em,
  key: { organizationId: string; keyHash: string; hint: string; createdBy: string },
): Promise<SkipTraceKey> {
  return em.transactional(async (tx) => tx.create(SkipTraceKey, { ...key, revokedAt: null }));
}

/** Conditional, so concurrent revocations revoke once. */
export async function revokeActiveSkipTraceKey(em: Em, organizationId: string): Promise<boolean> {
  return (await em.nativeUpdate(SkipTraceKey, { organizationId, revokedAt: null }, { revokedAt: new Date() })) > 0;
}

export async function activeSkipTraceKeys(em: Em, organizationIds: readonly string[]): Promise<Map<string, SkipTraceKey>> {
  if (organizationIds.length === 0) return new Map();
  const keys = await em.find(SkipTraceKey, { organizationId: { $in: [...organizationIds] }, revokedAt: null });
  return new Map(keys.map((key) => [key.organizationId, key]));
}

/** An open stream's key re-check. */
export async function activeSkipTraceKeyIds(db: Db, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.rows<{ id: string }>(
    sql`select id from skip_trace_keys where id = any(${pgTextArray(ids)}::uuid[]) and revoked_at is null`,
  );
  return new Set(rows.map((row) => row.id));
}
